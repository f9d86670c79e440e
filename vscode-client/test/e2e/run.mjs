// Real-editor end-to-end test: the packaged .vsix in code-server, driven by Debian's chromium.
//
// Usage: node run.mjs EXTENSION.vsix
// Environment: ONNXLINT_PYTHON (a Python with onnxlint installed; required),
//              ARTIFACTS (folder for screenshots; default ../../../test-artifacts/vscode-e2e),
//              CHROMIUM (default /usr/bin/chromium), E2E_TIMEOUT_S (default 600),
//              E2E_MODULES (node_modules holding code-server and playwright-core; default:
//              the one next to this script), CODE_SERVER (default: E2E_MODULES/.bin/code-server).
//
// It opens a workspace with a model that falls back to CPU on QNN, a 10k-node chain and an
// ONNX text model, then asserts what the page shows (a screenshot for each step):
//  - the finding in the Problems panel, and a squiggle on the node's line in the graph view;
//  - one Problems group per model, with its graph view open and after its tab is closed;
//  - opening a binary model's problem lands the graph view on the node's line;
//  - code lenses and symbols match the text after an edit + save, an undo to text that
//    does not parse, and an "Ignore" quick fix (within 2 s);
//  - the 10k-node chain lists at most 10 problems at warning level or above;
//  - a Python without onnxlint gives exactly one message, with its actions, and none of
//    the language client's generic errors.
// With ONNXLINT_E2E_WORKSPACE=full (issue #18's 48 models; E2E_TIMEOUT_S defaults to 2400)
// it first times the workspace's first lint (the status bar's counts reach the expected
// totals), and before the edits checks every model's Problems group: one group, as
// many entries as the server's own diagnostics, no entry twice, and a sample of each
// binary model's problems opening the graph view at the node's line.
// Screenshots are written whether it passes or fails.
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
const fullWorkspace = process.env.ONNXLINT_E2E_WORKSPACE === "full";
const timeoutS = Number(process.env.E2E_TIMEOUT_S ?? (fullWorkspace ? 2400 : 600));
const loadedAt = { ms: 0 };
// code-server and playwright-core live in E2E_MODULES (a cache outside the clone in CI)
const modules = path.resolve(process.env.E2E_MODULES ?? path.join(here, "node_modules"));
const codeServer = process.env.CODE_SERVER ?? path.join(modules, ".bin", "code-server");
const { chromium } = createRequire(path.join(modules, "noop.js"))("playwright-core");

let serverProc; // code-server, killed on every way out

function log(msg) {
  console.log(`[vscode-e2e ${new Date().toISOString().slice(11, 23)}] ${msg}`);
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
  if (fullWorkspace) fs.writeFileSync(path.join(artifacts, "full-expected.json"), JSON.stringify(expected, null, 2));
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
        // the test types ONNX text: nothing may add brackets or accept a completion
        "editor.autoClosingBrackets": "never",
        "editor.autoClosingQuotes": "never",
        "editor.autoSurround": "never",
        "editor.quickSuggestions": { other: false, comments: false, strings: false },
        "editor.suggestOnTriggerCharacters": false,
        "editor.acceptSuggestionOnEnter": "off",
        "editor.codeLens": true,
        "outline.collapseItems": "alwaysExpand",
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
  let failed = false;
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
    loadedAt.ms = Date.now();
    try {
      if (fullWorkspace) await firstLint(page, expected);
      await run(page, expected);
      await oneGroupPerModel(page, expected);
      await problemOpensNode(page, expected);
      await chainProblems(page, expected);
      // before the "Ignore" quick fix of featuresInStep changes the configuration
      if (fullWorkspace) await everyModel(page, expected);
      await featuresInStep(page, expected, ws);
      await missingOnnxlint(page, path.join(userData, "User", "settings.json"));
    } catch (err) {
      failed = true;
      // what the window showed instead: the Problems panel and the status bar
      for (const [what, sel] of [["the Problems panel", ".markers-panel"], ["the status bar", ".statusbar"]]) {
        const text = await page.locator(sel).first().innerText({ timeout: 5_000 }).catch(() => "(not found)");
        console.error(`[vscode-e2e] ${what}: ${text.replace(/\s+/g, " ").slice(0, 2000)}`);
      }
      throw err;
    } finally {
      await page.screenshot({ path: path.join(artifacts, "final.png") });
      fs.writeFileSync(path.join(artifacts, "final.html"), await page.content());
    }
  } finally {
    if (browser) await browser.close();
    // the extension's output channel (server log and JSON-RPC trace) and the window's logs
    try {
      fs.cpSync(path.join(userData, "logs"), path.join(artifacts, "logs"), { recursive: true });
    } catch {
      // no logs (code-server never started): the error that stopped the test says why
    }
    // CI keeps only what is printed: on a failure, the server's side of the story
    if (failed) {
      printServerLog(path.join(userData, "logs"));
      printTail(path.join(artifacts, "browser-console.log"), 30, "the browser console's errors");
      printTail(path.join(artifacts, "code-server.log"), 30, "code-server's log");
    }
    try {
      process.kill(-server.pid, "SIGTERM");
    } catch {
      // already gone
    }
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

function printTail(file, n, what) {
  let lines;
  try {
    lines = fs.readFileSync(file, "utf8").split("\n");
  } catch {
    return;
  }
  console.error(`[vscode-e2e] the last ${Math.min(n, lines.length)} lines of ${what}:`);
  for (const line of lines.slice(-n)) console.error(`  ${line.slice(0, 400)}`);
}

/** The last lines of the extension's output channel (the server's log) on stderr. */
function printServerLog(logs) {
  const found = [];
  const walk = (dir) => {
    let entries = [];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name === "onnxlint.log") found.push(p);
    }
  };
  walk(logs);
  if (found.length === 0) {
    console.error("[vscode-e2e] no onnxlint output channel log was written");
    return;
  }
  for (const p of found) printTail(p, 80, "the onnxlint output channel");
}

async function command(page, title) {
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ timeout: 30_000 });
  await input.fill(`>${title}`);
  const rows = page.locator(".quick-input-list .monaco-list-row");
  await rows.first().waitFor({ timeout: 30_000 });
  // the row of exactly this command (a fuzzy match or a recently used one may come first)
  const labels = await rows.evaluateAll((els) => els.map((e) => e.getAttribute("aria-label") ?? ""));
  const at = labels.findIndex((l) => l === title || l.startsWith(`${title},`) || l.startsWith(`${title} `));
  if (at > 0) {
    await rows.nth(at).click();
  } else {
    await page.keyboard.press("Enter");
  }
}

function shot(page, name) {
  return page.screenshot({ path: path.join(artifacts, name) });
}

/** Poll ``probe`` until ``ok(value)``; throws with the last value after ``ms``. */
async function until(probe, ok, ms, what) {
  const deadline = Date.now() + ms;
  let value;
  for (;;) {
    value = await probe();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: after ${ms / 1000} s got ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The resource groups of the Problems panel: [{label, count}] (the panel must be shown). */
async function problemGroups(page) {
  return page.locator(".markers-panel .monaco-list-row").evaluateAll((rows) =>
    rows
      .filter((r) => r.querySelector(".resource-label-container"))
      .map((r) => {
        // the file's full path (a graph view's name is "model.onnx" + ".onnxtxt" suffix)
        const full = r.querySelector(".resource-label-container .monaco-icon-label")?.getAttribute("aria-label") ?? "";
        return {
          label: full.split("/").pop() ?? full,
          count: Number(r.querySelector(".monaco-count-badge")?.textContent ?? "NaN"),
        };
      }),
  );
}

/** The marker rows of the Problems panel: [{severity, text}]. */
async function problemRows(page) {
  return page.locator(".markers-panel .monaco-list-row").evaluateAll((rows) =>
    rows
      .filter((r) => r.querySelector(".marker-icon"))
      .map((r) => {
        const icon = r.querySelector(".marker-icon")?.outerHTML ?? "";
        const severity = /codicon-error/.test(icon)
          ? "error"
          : /codicon-warning/.test(icon)
            ? "warning"
            : /codicon-info/.test(icon)
              ? "info"
              : icon;
        return { severity, text: r.textContent ?? "" };
      }),
  );
}

async function showProblems(page) {
  await command(page, "View: Focus Problems");
  await page.locator(".markers-panel").waitFor({ timeout: 30_000 });
}

async function closeAllEditors(page) {
  await command(page, "View: Close All Editors");
  await page.waitForTimeout(300);
}

/** The groups of the Problems panel naming ``model`` (its file or its graph view). */
async function groupsOf(page, model) {
  return (await problemGroups(page)).filter((g) => g.label.startsWith(model));
}

/** Run ``fn`` with the Problems panel shown, filtered to ``text`` and maximized (the tree
 * renders only the rows on screen). */
async function inProblems(page, text, fn) {
  await showProblems(page);
  await filterProblems(page, text);
  await command(page, "View: Toggle Maximized Panel");
  await page.waitForTimeout(300);
  try {
    return await fn();
  } finally {
    await command(page, "View: Toggle Maximized Panel");
    await filterProblems(page, "");
  }
}

async function oneGroupPerModel(page, expected) {
  // the graph view is open (run() opened it): one group for the model, not two
  let groups = await inProblems(page, expected.model, async () => {
    await page.waitForTimeout(1500); // a duplicate would show up within the view's publish
    const g = await groupsOf(page, expected.model);
    await shot(page, "one-group-view-open.png");
    return g;
  });
  log(`Problems groups with the view open: ${JSON.stringify(groups)}`);
  if (groups.length !== 1) throw new Error(`${groups.length} Problems groups for ${expected.model} with its view open`);
  await closeAllEditors(page);
  groups = await inProblems(page, expected.model, async () => {
    await page.waitForTimeout(1500);
    const g = await groupsOf(page, expected.model);
    await shot(page, "one-group-view-closed.png");
    return g;
  });
  log(`Problems groups after the view's tab closed: ${JSON.stringify(groups)}`);
  if (groups.length !== 1) throw new Error(`${groups.length} Problems groups for ${expected.model} after its tab closed`);
}

/** The cursor's line, from the status bar ("Ln 23, Col 4"). */
async function cursorLine(page) {
  const text = (await page.locator("#status\\.editor\\.selection").first().innerText().catch(() => "")) ?? "";
  const m = /Ln (\d+)/.exec(text);
  return m ? Number(m[1]) : null;
}

async function activeTabLabel(page) {
  return (await page.locator(".tabs-container .tab.active").first().innerText().catch(() => "")).trim();
}

/** Show only the problems whose text or file matches ``text`` ("" shows all). */
async function filterProblems(page, text) {
  const filter = page.locator(".viewpane-filter input, .markers-panel-action-filter input").first();
  await filter.fill(text);
  await page.waitForTimeout(500);
}

async function problemOpensNode(page, expected) {
  // the view is closed: open the model's problem from the Problems panel
  await showProblems(page);
  await filterProblems(page, expected.model);
  const row = page.locator(".markers-panel .monaco-list-row", { hasText: expected.code }).first();
  await row.waitFor({ timeout: 30_000 });
  await row.click();
  await page.keyboard.press("Enter");
  const line = await until(
    async () => ({ tab: await activeTabLabel(page), line: await cursorLine(page) }),
    (v) => v.line === expected.graph_line,
    10_000,
    `opening the ${expected.code} problem: the cursor should be on line ${expected.graph_line} of the graph view`,
  ).catch(async (err) => {
    await shot(page, "problem-opens-node.png");
    throw err;
  });
  await shot(page, "problem-opens-node.png");
  await filterProblems(page, "");
  log(`opening the problem: ${line.tab} at line ${line.line}`);
  if (!line.tab.includes(expected.model)) throw new Error(`the problem opened ${line.tab}, not the graph view of ${expected.model}`);
  await closeAllEditors(page);
}

async function chainProblems(page, expected) {
  const { groups, shown } = await inProblems(page, expected.chain, async () => {
    await until(() => problemRows(page), (r) => r.length > 0, 120_000, `problems of ${expected.chain}`);
    await page.waitForTimeout(1000);
    const result = { groups: await groupsOf(page, expected.chain), shown: await problemRows(page) };
    await shot(page, "chain-problems.png");
    return result;
  });
  const loud = shown.filter((r) => r.severity === "error" || r.severity === "warning");
  log(`${expected.chain}: groups ${JSON.stringify(groups)}, ${loud.length} problem(s) at warning level or above`);
  if (groups.length !== 1) throw new Error(`${groups.length} Problems groups for ${expected.chain}`);
  if (!(groups[0].count <= 10) || loud.length > 10) {
    throw new Error(`${expected.chain}: ${groups[0].count} problems listed, ${loud.length} at warning level or above (at most 10)`);
  }
  if (loud.length === 0) throw new Error(`${expected.chain}: the dynamic batch cause is not listed`);
}

async function goToLine(page, line) {
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ timeout: 30_000 });
  await input.fill(`:${line}`);
  await page.keyboard.press("Enter");
  await page.locator(".quick-input-widget").waitFor({ state: "hidden", timeout: 10_000 });
  await until(() => cursorLine(page), (l) => l === line, 5_000, `the cursor on line ${line}`);
}

/** The code lens titles shown in the active editor, top-down. */
async function lensTitles(page) {
  return page
    .locator(".editor-instance .monaco-editor .codelens-decoration")
    .evaluateAll((els) =>
      els
        .map((e) => ({ top: e.getBoundingClientRect().top, text: (e.textContent ?? "").trim() }))
        .filter((l) => l.text)
        .sort((a, b) => a.top - b.top)
        .map((l) => l.text),
    );
}

/** The names the Outline shows for the active editor (sorted). Read from the page: a
 * quick pick would take the focus from the editor, and an editor without focus cancels
 * its pending lens request. */
async function symbolNames(page) {
  const names = await page
    .locator(".outline-pane .monaco-list-row .label-name")
    .evaluateAll((els) => els.map((e) => (e.textContent ?? "").trim()));
  return names.filter(Boolean).sort();
}

/** Expand the Explorer's Outline pane (collapsed at start). */
async function showOutline(page) {
  const header = page.locator(".pane-header", { hasText: "Outline" }).first();
  if ((await header.getAttribute("aria-expanded")) !== "true") await header.click();
  await page.locator(".outline-pane").waitFor({ timeout: 30_000 });
}

/** The editor shows ``want`` (a features_of() result: lens, symbols) within ``ms``. */
async function expectFeatures(page, want, ms, what) {
  const started = Date.now();
  const got = await until(
    async () => ({ lens: (await lensTitles(page))[0] ?? null, symbols: await symbolNames(page) }),
    (v) => v.lens === want.lens && JSON.stringify(v.symbols) === JSON.stringify(want.symbols),
    ms,
    `lenses and symbols ${what}`,
  );
  log(`${what}: in step after ${((Date.now() - started) / 1000).toFixed(1)} s: ${got.lens}`);
}

async function featuresInStep(page, expected, ws) {
  const e = expected.edited;
  const file = path.join(ws, e.file);
  await page.keyboard.press("Control+p");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ timeout: 30_000 });
  await input.fill(e.file);
  await page.locator(".quick-input-list .monaco-list-row", { hasText: e.file }).first().waitFor({ timeout: 30_000 });
  await page.keyboard.press("Enter");
  const editor = page.locator(".editor-instance .monaco-editor").first();
  await editor.locator(".view-line", { hasText: "nonzero0" }).first().waitFor({ timeout: 30_000 });
  await showOutline(page);
  await editor.locator(".view-line", { hasText: "nonzero0" }).first().click(); // focus back
  await expectFeatures(page, e.before, 60_000, "on open");
  await shot(page, "features-open.png");

  // an edit, then save
  await goToLine(page, e.after_line);
  await page.keyboard.press("End");
  await page.keyboard.press("Enter");
  await page.keyboard.insertText(e.line);
  await page.keyboard.press("Control+s");
  await expectFeatures(page, e.after, 2_000, "after an edit and save");
  await shot(page, "features-after-save.png");

  // text that does not parse: no lenses and no symbols, however the lint before it went
  await page.keyboard.press("Control+Home");
  await page.keyboard.insertText("((");
  await page.keyboard.press("Control+End");
  await page.keyboard.insertText("x");
  await page.waitForTimeout(500);
  await page.keyboard.press("Control+z"); // undo to "((..." : still does not parse
  await until(
    async () => ({ lens: await lensTitles(page), symbols: await symbolNames(page) }),
    (v) => v.lens.length === 0 && v.symbols.length === 0,
    2_000,
    "lenses and symbols after an undo to text that does not parse",
  ).catch(async (err) => {
    await shot(page, "features-unparsed.png");
    throw err;
  });
  log("after an undo to text that does not parse: no lenses, no symbols");
  await shot(page, "features-unparsed.png");
  await page.keyboard.press("Control+z"); // back to the saved text
  await expectFeatures(page, e.after, 2_000, "after an undo to the saved text");

  // the "Ignore" quick fix on the node's line: the lens counts follow the configuration
  await goToLine(page, e.after_line);
  await command(page, "Quick Fix...");
  const fix = page.locator(".action-widget .monaco-list-row", { hasText: "for node main/nonzero0" }).first();
  await fix.waitFor({ timeout: 30_000 });
  await fix.click();
  const started = Date.now();
  log("Ignore quick fix chosen");
  const changed = await until(
    async () => (await lensTitles(page))[0] ?? null,
    (lens) => lens !== null && lens !== e.after.lens,
    2_000,
    "the summary lens after an Ignore quick fix",
  ).catch(async (err) => {
    await shot(page, "features-after-ignore.png");
    throw err;
  });
  const took = Date.now() - started;
  log(`after the Ignore quick fix (${(took / 1000).toFixed(1)} s): ${changed}`);
  if (took > 2_000) throw new Error(`the lens took ${took} ms to follow the Ignore quick fix (at most 2 s)`);
  const want = JSON.parse(execFileSync(python, [path.join(here, "make_workspace.py"), "--features", file], { encoding: "utf8" }));
  await expectFeatures(page, want, 2_000, "after the Ignore quick fix (as onnxlint reads the files now)");
  await shot(page, "features-after-ignore.png");
  await closeAllEditors(page);
}

async function notificationMessages(page) {
  await command(page, "Notifications: Show Notifications");
  await page.waitForTimeout(500);
  return page.locator(".notifications-center .notification-list-item").evaluateAll((items) =>
    items.map((i) => ({
      message: (i.querySelector(".notification-list-item-message")?.textContent ?? "").trim(),
      actions: [...i.querySelectorAll(".notification-list-item-buttons-container .monaco-button")].map((b) =>
        (b.textContent ?? "").trim(),
      ),
    })),
  );
}

async function missingOnnxlint(page, settingsPath) {
  await command(page, "Notifications: Clear All Notifications");
  // a Python without onnxlint (-I -S: no site-packages, no PYTHONPATH), set as a user
  // would: in the settings editor (a write behind the editor's back is not noticed)
  const settings = JSON.parse(fs.readFileSync(settingsPath, "utf8"));
  settings["onnxlint.serverCommand"] = [python, "-I", "-S", "-m", "onnxlint", "lsp"];
  await command(page, "Preferences: Open User Settings (JSON)");
  const editor = page.locator(".editor-instance .monaco-editor").first();
  await editor.locator(".view-line", { hasText: "onnxlint.serverCommand" }).first().click();
  await page.keyboard.press("Control+a");
  await page.keyboard.insertText(JSON.stringify(settings));
  await page.keyboard.press("Control+s");
  await page.waitForTimeout(500);
  await page.keyboard.press("Escape"); // the settings editor may be a modal one
  await closeAllEditors(page);
  const messages = await until(
    () => notificationMessages(page),
    (m) => m.some((x) => x.message.includes("onnxlint")),
    30_000,
    "a message after switching to a Python without onnxlint",
  ).catch(async (err) => {
    await shot(page, "missing-onnxlint.png");
    throw err;
  });
  await page.waitForTimeout(3000); // the language client's own errors would come by now
  const all = await notificationMessages(page);
  await shot(page, "missing-onnxlint.png");
  log(`notifications: ${JSON.stringify(all)}`);
  const ours = all.filter((m) => /onnxlint/i.test(m.message));
  const generic = all.filter((m) => /Pending response|crashed|Restarting server|Couldn't start|connection to server/i.test(m.message));
  if (ours.length !== 1) throw new Error(`${ours.length} onnxlint messages: ${JSON.stringify(ours)}`);
  if (generic.length) throw new Error(`the language client's errors: ${JSON.stringify(generic)}`);
  if (!/not installed/.test(ours[0].message)) throw new Error(`the message does not name the cause: ${ours[0].message}`);
  // no Python extension in this code-server: Select Interpreter is not offered
  const want = ["Open Setting", "Show Output"];
  if (JSON.stringify(ours[0].actions) !== JSON.stringify(want)) {
    throw new Error(`actions ${JSON.stringify(ours[0].actions)}, want ${JSON.stringify(want)}`);
  }
  void messages;
}

/** The status bar's problem counts: {errors, warnings} (its text: icons, then the
 * numbers of errors, warnings and, when there are some, infos). */
async function statusCounts(page) {
  const item = page.locator("#status\\.problems").first();
  const text = ((await item.innerText().catch(() => "")) ?? "").replace(/\s+/g, " ").trim();
  const label = (await item.getAttribute("aria-label").catch(() => "")) ?? "";
  const nums = (text.match(/\d+/g) ?? []).map(Number);
  return { errors: nums[0] ?? NaN, warnings: nums[1] ?? NaN, infos: nums[2] ?? 0, text: `${text} (${label})` };
}

/** Time the first lint of the whole workspace: until the status bar shows the totals. */
async function firstLint(page, expected) {
  const want = { errors: 0, warnings: 0, infos: 0 };
  for (const m of Object.values(expected.models)) {
    for (const e of m.entries) {
      if (e.severity === 1) want.errors += 1;
      if (e.severity === 2) want.warnings += 1;
      if (e.severity === 3) want.infos += 1;
    }
  }
  log(`first lint of ${Object.keys(expected.models).length} models: waiting for ${JSON.stringify(want)}`);
  const got = await until(
    () => statusCounts(page),
    // the infos too: VS Code adds one of its own to a document sent over 1,000 diagnostics
    (c) => c.errors === want.errors && c.warnings === want.warnings && c.infos === want.infos,
    600_000,
    `the status bar's problem counts (want ${JSON.stringify(want)})`,
  ).catch(async (err) => {
    await shot(page, "full-first-lint.png");
    throw err;
  });
  log(`first lint of the workspace: ${((Date.now() - loadedAt.ms) / 1000).toFixed(1)} s after the workbench loaded (${got.text})`);
  await shot(page, "full-first-lint.png");
}

/** The texts of the marker rows listed under ``model``'s own group (its file or its view):
 * the filter also matches other files whose names share its letters, and their rows are
 * not this model's. */
async function markerTexts(page, model) {
  return (await rowsOf(page, model)).map((r) => r.text);
}

/** The marker rows under ``model``'s own group: [{index (the row's data-index), text}]. */
async function rowsOf(page, model) {
  return page.locator(".markers-panel .monaco-list-row").evaluateAll((rows, model) => {
    let group = "";
    const out = [];
    const ordered = rows
      .map((r) => ({ r, at: Number(r.getAttribute("data-index") ?? "0") }))
      .sort((a, b) => a.at - b.at);
    for (const { r, at } of ordered) {
      const label = r.querySelector(".resource-label-container .monaco-icon-label")?.getAttribute("aria-label");
      if (label) group = label.split("/").pop() ?? label;
      else if (r.querySelector(".marker-icon") && (group === model || group === `${model}.onnxtxt`)) {
        out.push({ index: at, text: r.textContent ?? "" });
      }
    }
    return out;
  }, model);
}

/** Every model: one group, the server's count, no entry twice, a sample opening the node. */
async function everyModel(page, expected) {
  const failures = [];
  const report = [];
  // ONNXLINT_E2E_ONLY=a.onnx,b.onnx: check only these models (to look into one defect)
  const only = (process.env.ONNXLINT_E2E_ONLY ?? "").split(",").filter(Boolean);
  for (const [model, want] of Object.entries(expected.models)) {
    if (only.length && !only.includes(model)) continue;
    const seen = await inProblems(page, model, async () => {
      await page.waitForTimeout(300);
      const ok = (v) => (want.count === 0 ? v.groups.length === 0 : v.groups.length === 1 && v.groups[0].count === want.count);
      const v = await until(
        async () => ({ groups: await groupsOf(page, model), rows: await markerTexts(page, model) }),
        ok,
        10_000,
        model,
      ).catch(async () => ({ groups: await groupsOf(page, model), rows: await markerTexts(page, model) }));
      return v;
    });
    const dup = seen.rows.length - new Set(seen.rows).size;
    const count = seen.groups.reduce((a, g) => a + g.count, 0);
    // rows: the marker rows on screen (a cause's related nodes may push some below it)
    const line = { model, groups: seen.groups.length, count, want: want.count, rows: seen.rows.length, dup };
    // a file that does not load as a model has no view: its group is the file's own name
    line.names = seen.groups.map((g) => g.label);
    const named = want.binary || seen.groups.every((g) => g.label === model);
    if ((want.count ? seen.groups.length !== 1 : seen.groups.length !== 0) || count !== want.count || dup || want.duplicates || !named) {
      failures.push({ ...line, shown: seen.rows.map((r) => r.slice(0, 160)) });
      await shot(page, `full-${model}.png`);
    }
    if (want.binary && want.count) line.opens = await sampleOpens(page, model, want, failures);
    report.push(line);
    // after each model: a run cut short still leaves what it saw
    fs.writeFileSync(path.join(artifacts, "full-workspace.json"), JSON.stringify({ report, failures }, null, 2));
  }
  log(`every model: ${report.length} checked, ${failures.length} failure(s)`);
  if (failures.length) throw new Error(`the 48-model workspace: ${JSON.stringify(failures)}`);
}

/** The data-index of the row under ``model``'s group whose text has ``text``, scrolling
 * down from the group's own row (the list renders only the rows in sight); null if none. */
async function findRow(page, model, text) {
  await scrollProblemsTop(page);
  const rows = () =>
    page.locator(".markers-panel .monaco-list-row").evaluateAll((els) =>
      els.map((r) => ({
        at: Number(r.getAttribute("data-index") ?? "-1"),
        label: (r.querySelector(".resource-label-container .monaco-icon-label")?.getAttribute("aria-label") ?? "").split("/").pop(),
        marker: Boolean(r.querySelector(".marker-icon")),
        text: r.textContent ?? "",
      })),
    );
  const own = (await rows()).find((r) => r.label === model || r.label === `${model}.onnxtxt`);
  if (!own) return null;
  let end = Infinity;
  for (let i = 0; i < 40; i++) {
    const seen = await rows();
    for (const r of seen) if (r.label && r.at > own.at) end = Math.min(end, r.at);
    const hit = seen.filter((r) => r.marker && r.at > own.at && r.at < end && r.text.includes(text)).sort((a, b) => a.at - b.at)[0];
    if (hit) return hit.at;
    if (Math.max(...seen.map((r) => r.at)) >= end) return null;
    const lb = await page.locator(".markers-panel .monaco-list").first().boundingBox();
    if (!lb) return null;
    await page.mouse.move(lb.x + 5, lb.y + lb.height / 2);
    await page.mouse.wheel(0, 60);
    await page.waitForTimeout(150);
  }
  return null;
}

async function scrollProblemsTop(page) {
  const lb = await page.locator(".markers-panel .monaco-list").first().boundingBox();
  if (!lb) return;
  await page.mouse.move(lb.x + 5, lb.y + lb.height / 2);
  await page.mouse.wheel(0, -100_000);
  await page.waitForTimeout(200);
}

/** The Problems panel's row ``index``, scrolled fully into the list (the list scrolls
 * itself, and a row half out of it, or under a hover, takes no click). */
async function revealRow(page, index) {
  const list = page.locator(".markers-panel .monaco-list").first();
  const row = () => page.locator(`.markers-panel .monaco-list-row[data-index="${index}"]`).first();
  for (let i = 0; i < 30; i++) {
    const lb = await list.boundingBox();
    const rb = await row().boundingBox().catch(() => null);
    if (!lb) break;
    if (rb && rb.y >= lb.y && rb.y + rb.height <= lb.y + lb.height) break;
    await page.mouse.move(lb.x + 5, lb.y + lb.height / 2); // off the rows' text: no hover
    await page.mouse.wheel(0, rb && rb.y < lb.y ? -40 : 40);
    await page.waitForTimeout(150);
  }
  return row();
}

/** Open up to 3 of a binary model's problems (distinct messages); each must land on its line. */
async function sampleOpens(page, model, want, failures) {
  const byMessage = new Map();
  for (const e of want.entries) byMessage.set(e.message, byMessage.has(e.message) ? null : e);
  const sample = [...byMessage.values()].filter(Boolean).slice(0, 3);
  const opened = [];
  for (const e of sample) {
    await showProblems(page);
    await filterProblems(page, model);
    try {
      // the row under this model's group: another model's group may list the same message
      const at = await until(() => findRow(page, model, e.message.slice(0, 80)), (v) => v !== null, 10_000, `${model}: the row of ${e.code}`);
      const row = await revealRow(page, at);
      // the mouse off the panel: a row's hover (the scroll left it there) takes the click
      await page.mouse.move(700, 300);
      await page.waitForTimeout(400);
      // at the row's right end ("[Ln N, Col M]"): a hover over its text may be left open
      const box = await row.boundingBox();
      await row.click({ timeout: 10_000, position: box ? { x: box.width - 40, y: 10 } : undefined });
      await page.keyboard.press("Enter");
      const got = await until(
        async () => ({ tab: await activeTabLabel(page), line: await cursorLine(page) }),
        (v) => v.line === e.line && v.tab.includes(model),
        15_000,
        `${model}: ${e.code}`,
      );
      opened.push({ code: e.code, line: got.line });
    } catch (err) {
      const got = { tab: await activeTabLabel(page), line: await cursorLine(page) };
      failures.push({ model, code: e.code, want_line: e.line, got, error: String(err).slice(0, 300) });
      await shot(page, `full-open-${model}.png`);
    }
    await filterProblems(page, "");
    await closeAllEditors(page);
  }
  return opened;
}

async function run(page, expected) {
  // 1. The Problems panel lists the finding for the binary model (from the workspace scan).
  await command(page, "View: Focus Problems");
  const problems = page.locator(".markers-panel");
  await problems.waitFor({ timeout: 60_000 });
  // the tree renders only the rows on screen: show only this model's (another model's
  // group, e.g. the chain's with its related locations expanded, can fill the panel)
  await filterProblems(page, expected.model);
  const row = problems.locator(".monaco-list-row", { hasText: expected.code });
  // the server's start and first workspace lint, on a machine whose caches may be cold
  await row.first().waitFor({ timeout: 240_000 });
  const rowText = await row.first().innerText();
  await filterProblems(page, "");
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
  // the node's squiggle may come after others (the lint of the view's bytes): poll
  const onLine = await until(
    async () => {
      const lineBox = await nodeLine.first().boundingBox();
      const boxes = await squiggles.evaluateAll((els) => els.map((e) => {
        const r = e.getBoundingClientRect();
        return { y: r.y, height: r.height };
      }));
      return Boolean(lineBox) && boxes.some((b) => b.y >= lineBox.y - 2 && b.y <= lineBox.y + lineBox.height + 2);
    },
    (v) => v,
    30_000,
    `a squiggle on the line of ${expected.node_path}`,
  ).catch(() => false);
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
