// Bundles the unit tests (with a stub for the `vscode` module) and runs them with node:test.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = path.dirname(fileURLToPath(import.meta.url));
const outdir = path.join(here, "../../out/unit");
const tests = fs.readdirSync(here).filter((f) => f.endsWith(".test.ts")).sort();
await esbuild.build({
  entryPoints: tests.map((f) => path.join(here, f)),
  bundle: true,
  outdir,
  platform: "node",
  format: "cjs",
  target: "node20",
  alias: { vscode: path.join(here, "vscode-stub.js") },
  logLevel: "warning",
});
execFileSync(
  process.execPath,
  ["--test", ...tests.map((f) => path.join(outdir, f.replace(/\.ts$/, ".js")))],
  { stdio: "inherit" },
);
