// ServerProcess outside the editor: the causes of a failed start, told apart from stderr
// and the spawn error, and the server's log lines routed to their own level.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ServerCommand, ServerProcess } from "../../src/startup";

type Logged = [string, string][];

function channel(logged: Logged): any {
  const at = (level: string) => (m: string) => logged.push([level, m]);
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

async function ended(command: ServerCommand): Promise<{ proc: ServerProcess; logged: Logged }> {
  const logged: Logged = [];
  const proc = new ServerProcess(command, channel(logged));
  await new Promise<void>((resolve) => {
    proc.process.on("close", () => resolve());
    proc.process.on("error", () => resolve());
  });
  await new Promise((r) => setImmediate(r)); // the last stderr lines
  return { proc, logged };
}

const python = process.env.PYTHON ?? "python3";

test("a Python without onnxlint", async () => {
  // -I -S: no site-packages, no PYTHONPATH, no working directory: onnxlint cannot be found
  const { proc } = await ended({ command: python, args: ["-I", "-S", "-m", "onnxlint", "lsp"], origin: "python" });
  const failure = proc.failure();
  assert.equal(failure.interpreter, true);
  assert.match(failure.reason, /onnxlint is not installed in .*pip install onnxlint/);
});

test("an interpreter that does not exist", async () => {
  const { proc } = await ended({ command: "/nonexistent/python", args: ["-m", "onnxlint", "lsp"], origin: "python" });
  assert.deepEqual(proc.failure(), {
    reason: "/nonexistent/python not found (/nonexistent/python -m onnxlint lsp)",
    interpreter: true,
  });
});

test("no onnxlint on PATH", async () => {
  const { proc } = await ended({ command: "onnxlint-not-on-path", args: ["lsp"], origin: "path" });
  assert.match(proc.failure().reason, /^onnxlint is not on PATH/);
});

test("an exit at start, and log lines at their own level", async () => {
  const script =
    "import logging, sys; logging.basicConfig(level='INFO');" +
    "log = logging.getLogger('onnxlint.lsp'); log.info('hello'); log.warning('careful');" +
    "print('Traceback: boom', file=sys.stderr); sys.exit(3)";
  const { proc, logged } = await ended({ command: python, args: ["-c", script], origin: "setting" });
  assert.deepEqual(logged, [
    ["info", "onnxlint.lsp: hello"],
    ["warn", "onnxlint.lsp: careful"],
    ["error", "Traceback: boom"],
  ]);
  assert.deepEqual(proc.failure(), {
    reason: "the server exited at start (code 3): Traceback: boom",
    interpreter: false,
  });
});
