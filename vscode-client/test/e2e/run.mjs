// Real-editor end-to-end test: the packaged .vsix in code-server, driven by Debian's chromium.
//
// Usage: node run.mjs EXTENSION.vsix
// Environment: ONNXLINT_PYTHON (a Python with onnxlint installed; required),
//              ARTIFACTS (folder for screenshots; default ../../../test-artifacts/vscode-e2e),
//              CHROMIUM (default /usr/bin/chromium), E2E_TIMEOUT_S (default 300),
//              E2E_MODULES (node_modules holding code-server and playwright-core; default:
//              the one next to this script), CODE_SERVER (default: E2E_MODULES/.bin/code-server).
//
// It opens a workspace with a model that falls back to CPU on QNN, then asserts that
// onnxlint's finding shows in the Problems panel and as a squiggle on the node's line in
// the graph view. Screenshots are written whether it passes or fails.
import { spawn, execFileSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const vsix = path.resolve(process.argv[2] ?? "");
const python = process.env.ONNXLINT_PYTHON;
const artifacts = path.resolve(process.env.ARTIFACTS ?? path.join(here, "../../../test-artifacts/vscode-e2e"));
const chromiumPath = process.env.CHROMIUM ?? "/usr/bin/chromium";
const timeoutS = Number(process.env.E2E_TIMEOUT_S ?? 300);
// code-server and playwright-core live in E2E_MODULES (a cache outside the clone in CI)
const modules = path.resolve(process.env.E2E_MODULES ?? path.join(here, "node_modules"));
const codeServer = process.env.CODE_SERVER ?? path.join(modules, ".bin", "code-server");
const { chromium } = createRequire(path.join(modules, "noop.js"))("playwright-core");

let serverProc; // code-server, killed on every way out

function log(msg) {
  console.log(`[vscode-e2e ${new Date().toISOString().slice(11, 19)}] ${msg}`);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

async function waitForHttp(url, ms) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url);
      if (res.ok) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`code-server did not answer on ${url} within ${ms / 1000} s`);
}

async function main() {
  if (!fs.existsSync(vsix)) throw new Error(`no .vsix at ${vsix}`);
  if (!python) throw new Error("set ONNXLINT_PYTHON to a Python that has onnxlint installed");
  if (!fs.existsSync(chromiumPath)) throw new Error(`no chromium at ${chromiumPath} (apt-get install chromium)`);
  fs.mkdirSync(artifacts, { recursive: true });
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "onnxlint-e2e-"));
  const ws = path.join(tmp, "workspace");
  const userData = path.join(tmp, "user-data");
  const extDir = path.join(tmp, "extensions");
  fs.mkdirSync(path.join(userData, "User"), { recursive: true });

  const expected = JSON.parse(
    execFileSync(python, [path.join(here, "make_workspace.py"), ws], { encoding: "utf8" }),
  );
  log(`expecting ${expected.code} on ${expected.node_path}: ${expected.message}`);
  fs.writeFileSync(
    path.join(userData, "User", "settings.json"),
    JSON.stringify(
      {
        "onnxlint.serverCommand": [python, "-m", "onnxlint", "lsp"],
        "workbench.startupEditor": "none",
        "workbench.tips.enabled": false,
        "workbench.enableExperiments": false,
        "security.workspace.trust.enabled": false,
        "telemetry.telemetryLevel": "off",
        "extensions.autoUpdate": false,
        "extensions.autoCheckUpdates": false,
        "extensions.ignoreRecommendations": true,
        "update.mode": "none",
        "git.enabled": false,
        "chat.disableAIFeatures": true,
        "editor.minimap.enabled": false,
        "window.zoomLevel": 0,
      },
      null,
      2,
    ),
  );

  log(`installing ${path.basename(vsix)}`);
  execFileSync(
    codeServer,
    ["--user-data-dir", userData, "--extensions-dir", extDir, "--install-extension", vsix],
    { stdio: "inherit" },
  );

  const port = await freePort();
  const csLog = fs.openSync(path.join(artifacts, "code-server.log"), "w");
  const server = (serverProc = spawn(
    codeServer,
    [
      "--bind-addr", `127.0.0.1:${port}`,
      "--auth", "none",
      "--disable-telemetry",
      "--disable-update-check",
      "--disable-workspace-trust",
      "--disable-getting-started-override",
      "--user-data-dir", userData,
      "--extensions-dir", extDir,
      ws,
    ],
    {
      stdio: ["ignore", csLog, csLog],
      detached: true,
      // no marketplace: gallery queries go to a closed loopback port instead of the internet
      env: { ...process.env, EXTENSIONS_GALLERY: JSON.stringify({ serviceUrl: "http://127.0.0.1:9/gallery" }) },
    },
  ));
  let browser;
  try {
    await waitForHttp(`http://127.0.0.1:${port}/healthz`, 120_000);
    log(`code-server up on 127.0.0.1:${port}`);
    browser = await chromium.launch({
      executablePath: chromiumPath,
      headless: true,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
      ],
    });
    const page = await browser.newPage({ viewport: { width: 1400, height: 860 } });
    page.on("console", (m) => {
      if (m.type() === "error") fs.appendFileSync(path.join(artifacts, "browser-console.log"), m.text() + "\n");
    });
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(ws)}`);
    await page.waitForSelector(".monaco-workbench", { timeout: 120_000 });
    log("workbench loaded");
    try {
      await run(page, expected);
    } finally {
      await page.screenshot({ path: path.join(artifacts, "final.png") });
    }
  } finally {
    if (browser) await browser.close();
    try {
      process.kill(-server.pid, "SIGTERM");
    } catch {
      // already gone
    }
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

async function command(page, title) {
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ timeout: 30_000 });
  await input.fill(`>${title}`);
  await page.locator(".quick-input-list .monaco-list-row").first().waitFor({ timeout: 30_000 });
  await page.keyboard.press("Enter");
}

async function run(page, expected) {
  // 1. The Problems panel lists the finding for the binary model (from the workspace scan).
  await command(page, "View: Focus Problems");
  const problems = page.locator(".markers-panel");
  await problems.waitFor({ timeout: 60_000 });
  const row = problems.locator(".monaco-list-row", { hasText: expected.code });
  await row.first().waitFor({ timeout: 120_000 });
  const rowText = await row.first().innerText();
  log(`Problems panel: ${rowText.replace(/\s+/g, " ")}`);
  if (!rowText.includes(expected.code)) throw new Error(`no ${expected.code} row in the Problems panel`);
  await page.screenshot({ path: path.join(artifacts, "problems.png") });

  // 2. Opening the .onnx file shows the graph view (custom editor -> onnx-graph: document).
  const item = page.locator(".explorer-folders-view .monaco-list-row", { hasText: expected.model });
  if ((await item.count()) === 0) {
    await command(page, "View: Show Explorer");
  }
  await item.first().waitFor({ timeout: 60_000 });
  await item.first().dblclick();
  const nodeLabel = `[${expected.node_name}]`;
  const editor = page.locator(".editor-instance .monaco-editor").first();
  await editor.locator(".view-line", { hasText: "ir_version" }).first().waitFor({ timeout: 60_000 });
  log("graph view open");
  // the editor only renders what is visible: go to the node's line first
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ timeout: 30_000 });
  await input.fill(`:${expected.graph_line}`);
  await page.keyboard.press("Enter");
  const nodeLine = editor.locator(".view-line", { hasText: nodeLabel });
  await nodeLine.first().waitFor({ timeout: 60_000 });

  // 3. A squiggle sits on the node's line.
  const squiggles = editor.locator(
    ".squiggly-error, .squiggly-warning, .squiggly-info, .squiggly-hint",
  );
  await squiggles.first().waitFor({ timeout: 60_000 });
  const lineBox = await nodeLine.first().boundingBox();
  let onLine = false;
  for (const box of await squiggles.evaluateAll((els) => els.map((e) => {
    const r = e.getBoundingClientRect();
    return { y: r.y, height: r.height };
  }))) {
    if (lineBox && box.y >= lineBox.y - 2 && box.y <= lineBox.y + lineBox.height + 2) onLine = true;
  }
  if (!onLine) throw new Error(`no squiggle on the line of ${expected.node_path}`);
  log(`squiggle on the line of ${expected.node_path}`);
  // the picture for the README: graph view with the squiggle, Problems panel below
  await page.mouse.move(5, 400);
  await page.waitForTimeout(1000);
  await page.screenshot({ path: path.join(artifacts, "vscode-problems.png") });
  // hover on the operator: predicted EP, partition and the EP's refusal reason
  const label = new RegExp(`^${expected.node_name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`);
  await nodeLine.first().locator("span", { hasText: label }).last().hover();
  const hover = page.locator(".monaco-hover-content");
  await hover.first().waitFor({ timeout: 30_000 });
  const hoverText = await hover.first().innerText();
  log(`hover: ${hoverText.replace(/\s+/g, " ").slice(0, 200)}`);
  if (!hoverText.includes(expected.node_path)) throw new Error("the hover does not name the node");
  await page.screenshot({ path: path.join(artifacts, "graph-view-hover.png") });
}

const timer = setTimeout(() => {
  console.error(`[vscode-e2e] timed out after ${timeoutS} s`);
  try {
    if (serverProc) process.kill(-serverProc.pid, "SIGTERM");
  } catch {
    // already gone
  }
  process.exit(124);
}, timeoutS * 1000);
main().then(
  () => {
    clearTimeout(timer);
    log("passed");
    process.exit(0);
  },
  (err) => {
    clearTimeout(timer);
    console.error(`[vscode-e2e] FAILED: ${err?.stack ?? err}`);
    process.exit(1);
  },
);
