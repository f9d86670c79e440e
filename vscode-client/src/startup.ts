// Starting the server process and explaining why it did not start.
//
// The language client's own messages for a server that cannot start ("Pending response
// rejected...", "crashed 5 times...", "Restarting server failed") say nothing about the
// cause. The extension spawns the process itself, reads its stderr, and turns the common
// causes (no interpreter, onnxlint not installed in it, an exit at start) into one
// message with the actions that fix them.
import { ChildProcess, spawn } from "child_process";
import * as readline from "readline";
import * as vscode from "vscode";

/** How the server is started and where that choice came from (for messages). */
export interface ServerCommand {
  command: string;
  args: string[];
  /** "setting" (onnxlint.serverCommand), "python" (the Python extension's interpreter) or "path" */
  origin: "setting" | "python" | "path";
}

/** Why a start failed, as the user should read it. */
export interface StartFailure {
  reason: string;
  /** the interpreter is the likely fix: offer "Select Interpreter" */
  interpreter: boolean;
}

const MISSING_MODULE = /No module named '?onnxlint'?/;
/** stderr lines kept to explain an exit */
const TAIL_LINES = 20;

/** Python logging's default format: "LEVEL:logger:message". */
const LOG_LINE = /^(DEBUG|INFO|WARNING|ERROR|CRITICAL):([\w.]+):(.*)$/;

/** One server process: its stderr goes to the output channel at each line's own level. */
export class ServerProcess {
  readonly tail: string[] = [];
  spawnError: NodeJS.ErrnoException | undefined;
  exitCode: number | null | undefined;
  readonly process: ChildProcess;

  constructor(
    readonly command: ServerCommand,
    output: vscode.LogOutputChannel,
  ) {
    const env = { ...process.env };
    // one line per model linted, the version and the configuration in the output channel
    env.ONNXLINT_LSP_LOG ??= "info";
    this.process = spawn(command.command, command.args, { env, stdio: "pipe" });
    this.process.on("error", (err: NodeJS.ErrnoException) => {
      this.spawnError = err;
      output.error(`cannot run ${command.command}: ${err.message}`);
    });
    this.process.on("exit", (code) => {
      this.exitCode = code;
    });
    if (this.process.stderr) {
      readline
        .createInterface({ input: this.process.stderr, crlfDelay: Infinity, terminal: false })
        .on("line", (line) => this.log(line, output));
    }
  }

  private log(line: string, output: vscode.LogOutputChannel): void {
    this.tail.push(line);
    if (this.tail.length > TAIL_LINES) {
      this.tail.shift();
    }
    const m = LOG_LINE.exec(line);
    const level = m?.[1];
    const text = m ? `${m[2]}: ${m[3]}` : line;
    if (level === "DEBUG") {
      output.debug(text);
    } else if (level === "INFO") {
      output.info(text);
    } else if (level === "WARNING") {
      output.warn(text);
    } else {
      output.error(text);
    }
  }

  /** The last stderr line that is not an INFO or DEBUG log line. */
  lastProblem(): string | undefined {
    const lines = this.tail.filter((l) => l.trim() && !/^(INFO|DEBUG):/.test(l));
    return lines.length ? lines[lines.length - 1].trim() : undefined;
  }

  /** What went wrong, if the process could not start or ended early. */
  failure(): StartFailure {
    const cmd = [this.command.command, ...this.command.args].join(" ");
    if (this.spawnError) {
      const missing = this.spawnError.code === "ENOENT";
      const what = this.command.origin === "path" ? "onnxlint is not on PATH" : `${this.command.command} not found`;
      return {
        reason: missing ? `${what} (${cmd})` : `cannot run ${cmd}: ${this.spawnError.message}`,
        interpreter: this.command.origin !== "setting",
      };
    }
    if (this.tail.some((l) => MISSING_MODULE.test(l))) {
      return {
        reason: `onnxlint is not installed in ${this.command.command} (pip install onnxlint)`,
        interpreter: true,
      };
    }
    const code = this.exitCode;
    const last = this.lastProblem();
    return {
      reason:
        `the server exited at start${code !== undefined && code !== null ? ` (code ${code})` : ""}` +
        (last ? `: ${last}` : ""),
      interpreter: false,
    };
  }
}

/** The one message for a failed start, with the actions that fix the usual causes. */
export async function showStartFailure(
  failure: StartFailure,
  output: vscode.LogOutputChannel,
): Promise<void> {
  const selectInterpreter = "Select Interpreter";
  const openSetting = "Open Setting";
  const showOutput = "Show Output";
  const python = vscode.extensions.getExtension("ms-python.python") !== undefined;
  const actions = [
    ...(failure.interpreter && python ? [selectInterpreter] : []),
    openSetting,
    showOutput,
  ];
  const choice = await vscode.window.showErrorMessage(
    `onnxlint: the language server did not start: ${failure.reason}.`,
    ...actions,
  );
  if (choice === selectInterpreter) {
    await vscode.commands.executeCommand("python.setInterpreter");
  } else if (choice === openSetting) {
    await vscode.commands.executeCommand("workbench.action.openSettings", "onnxlint.serverCommand");
  } else if (choice === showOutput) {
    output.show();
  }
}

/** The status bar item: server state, version, EPs; a click shows the output. */
export class StatusItem {
  private readonly item = vscode.window.createStatusBarItem("onnxlint.status", vscode.StatusBarAlignment.Right, 100);

  constructor() {
    this.item.name = "onnxlint";
    this.item.command = "onnxlint.showOutput";
    this.starting();
    this.item.show();
  }

  starting(): void {
    this.set("$(sync~spin) onnxlint", "onnxlint: starting the language server", false);
  }

  running(version: string | undefined, eps: string[], models: number | undefined): void {
    const lines = [
      `onnxlint ${version ?? ""}: running`,
      `EPs: ${eps.length ? eps.join(", ") : "from the configuration file"}`,
      ...(models !== undefined ? [`${models} model(s) checked`] : []),
    ];
    this.set(`$(check) onnxlint${eps.length ? ` · ${eps.join(", ")}` : ""}`, lines.join("\n"), false);
  }

  failed(reason: string): void {
    this.set("$(error) onnxlint", `onnxlint: not running: ${reason}`, true);
  }

  private set(text: string, tooltip: string, error: boolean): void {
    this.item.text = text;
    this.item.tooltip = tooltip;
    this.item.backgroundColor = error ? new vscode.ThemeColor("statusBarItem.errorBackground") : undefined;
  }

  dispose(): void {
    this.item.dispose();
  }
}
