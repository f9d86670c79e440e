// Bundles the unit tests (with a stub for the `vscode` module) and runs them with node:test.
import { execFileSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = path.dirname(fileURLToPath(import.meta.url));
const outfile = path.join(here, "../../out/unit/startup.test.js");
await esbuild.build({
  entryPoints: [path.join(here, "startup.test.ts")],
  bundle: true,
  outfile,
  platform: "node",
  format: "cjs",
  target: "node20",
  alias: { vscode: path.join(here, "vscode-stub.js") },
  logLevel: "warning",
});
execFileSync(process.execPath, ["--test", outfile], { stdio: "inherit" });
