// The onnxlint VS Code extension: starts `onnxlint lsp` and shows models as a graph view.
//
// A binary .onnx file cannot be opened as text (VS Code warns about a binary file and
// sends no didOpen), so the server scans the workspace itself and the extension opens
// .onnx files through a custom editor that hands over to a read-only virtual document
// (scheme `onnx-graph:`) holding the model printed as ONNX text. The server publishes
// diagnostics on that document at each node's line.
import * as path from "path";
import * as vscode from "vscode";
import {
  CloseAction,
  DidChangeWatchedFilesNotification,
  ErrorAction,
  FileChangeType,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
} from "vscode-languageclient/node";
import { GRAPH_SCHEME, ModelProblems, modelPathOf, viewPathOf } from "./problems";
import { ServerCommand, ServerProcess, StartFailure, StatusItem, showStartFailure } from "./startup";

const GRAPH_VIEW_REQUEST = "onnxlint/graphView";
const GRAPH_VIEW_CLOSED = "onnxlint/graphViewClosed";
const STATUS_NOTIFICATION = "onnxlint/status";
/** configuration files the server reads (a save re-checks every model) */
const CONFIG_FILES = ["onnxlint.toml", "pyproject.toml"];
/** restarts after a crash allowed within RESTART_WINDOW_MS before the server is left stopped */
const MAX_RESTARTS = 4;
const RESTART_WINDOW_MS = 3 * 60 * 1000;

interface ServerStatus {
  version?: string;
  eps?: string[];
  models?: number;
}

interface GraphViewResult {
  uri: string | null;
  text: string;
  nodes: { path: string; line: number }[];
  error: string | null;
}

let client: LanguageClient | undefined;
let status: StatusItem | undefined;
const problems = new ModelProblems();
const output = vscode.window.createOutputChannel("onnxlint", { log: true });

/** The language client, quiet while the server starts: a failed start gets the extension's
 * own message (startup.ts), not also the client's "couldn't create connection to server". */
class OnnxLintClient extends LanguageClient {
  /** true once the server answered `initialize`: the client's messages are shown again */
  running = false;

  override error(message: string, data?: unknown, showNotification: boolean | "force" = true): void {
    super.error(message, data, this.running ? showNotification : false);
  }
}

/** The model file a graph view stands for: onnx-graph:/a/b.onnx.onnxtxt -> file:///a/b.onnx */
export function modelUriOf(graphUri: vscode.Uri): vscode.Uri {
  return vscode.Uri.file(modelPathOf(graphUri.path));
}

export function graphUriOf(model: vscode.Uri): vscode.Uri {
  return vscode.Uri.from({ scheme: GRAPH_SCHEME, path: viewPathOf(model.path) });
}

/** Serves the graph view's text from the server; refreshed when the model changes on disk. */
class GraphViewProvider implements vscode.TextDocumentContentProvider {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    if (!client) {
      return "# onnxlint: the language server is not running (see the onnxlint output)\n";
    }
    const model = modelUriOf(uri);
    const result = await client.sendRequest<GraphViewResult>(GRAPH_VIEW_REQUEST, {
      uri: model.toString(),
    });
    if (result.error) {
      return `# onnxlint: ${result.error}\n`;
    }
    return result.text;
  }

  refresh(model: vscode.Uri): void {
    this.changed.fire(graphUriOf(model));
  }
}

/** The default editor for *.onnx: hands over to the text graph view at once. */
class GraphEditorProvider implements vscode.CustomReadonlyEditorProvider {
  openCustomDocument(uri: vscode.Uri): vscode.CustomDocument {
    return { uri, dispose: () => undefined };
  }

  async resolveCustomEditor(
    document: vscode.CustomDocument,
    panel: vscode.WebviewPanel,
  ): Promise<void> {
    panel.webview.html = `<p>Opening the graph view of ${escapeHtml(path.basename(document.uri.fsPath))}…</p>`;
    const column = panel.viewColumn ?? vscode.ViewColumn.Active;
    await showGraph(document.uri, column);
    panel.dispose();
  }
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c] ?? c);
}

async function showGraph(model: vscode.Uri, column?: vscode.ViewColumn): Promise<void> {
  const doc = await vscode.workspace.openTextDocument(graphUriOf(model));
  if (doc.languageId !== "onnx") {
    await vscode.languages.setTextDocumentLanguage(doc, "onnx");
  }
  await vscode.window.showTextDocument(doc, { viewColumn: column, preview: false });
}

/** How to start the server: the setting, else the Python extension's interpreter, else PATH. */
async function serverCommand(): Promise<ServerCommand> {
  const configured = vscode.workspace.getConfiguration("onnxlint").get<string[] | string>("serverCommand");
  const list = Array.isArray(configured) ? configured : configured ? [configured] : [];
  if (list.length > 0) {
    return { command: list[0], args: list.slice(1), origin: "setting" };
  }
  const python = await pythonFromExtension();
  if (python) {
    return { command: python, args: ["-m", "onnxlint", "lsp"], origin: "python" };
  }
  return { command: "onnxlint", args: ["lsp"], origin: "path" };
}

async function pythonApi(): Promise<any | undefined> {
  const ext = vscode.extensions.getExtension("ms-python.python");
  if (!ext) {
    return undefined;
  }
  try {
    const api = ext.isActive ? ext.exports : await ext.activate();
    return api?.environments;
  } catch (err) {
    output.warn(`could not ask the Python extension for an interpreter: ${err}`);
    return undefined;
  }
}

async function pythonFromExtension(): Promise<string | undefined> {
  const envs = await pythonApi();
  if (!envs) {
    return undefined;
  }
  try {
    const active = envs.getActiveEnvironmentPath(vscode.workspace.workspaceFolders?.[0]?.uri);
    const resolved = await envs.resolveEnvironment(active);
    return resolved?.executable?.uri?.fsPath;
  } catch (err) {
    output.warn(`could not ask the Python extension for an interpreter: ${err}`);
    return undefined;
  }
}

function settingsObject(): Record<string, unknown> {
  const c = vscode.workspace.getConfiguration("onnxlint");
  return {
    eps: c.get("eps"),
    select: c.get("select"),
    ignore: c.get("ignore"),
    confirm: c.get("confirm"),
    serverCommand: c.get("serverCommand"),
    debounceMs: c.get("debounceMs"),
    showHints: c.get("showHints"),
    maxProblemsPerRule: c.get("maxProblemsPerRule"),
  };
}

async function startClient(context: vscode.ExtensionContext): Promise<void> {
  const command = await serverCommand();
  output.info(`starting ${command.command} ${command.args.join(" ")} (${command.origin})`);
  status?.starting();
  let proc: ServerProcess | undefined;
  let initialized = false;
  let reported = false;
  const crashes: number[] = [];
  const fail = (failure: StartFailure): void => {
    status?.failed(failure.reason);
    if (!reported) {
      reported = true; // one message per start, whatever the client reports after it
      output.error(failure.reason);
      void showStartFailure(failure, output);
    }
  };
  const serverOptions: ServerOptions = async () => {
    proc = new ServerProcess(command, output);
    return proc.process;
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: "file", language: "onnx" },
      { scheme: GRAPH_SCHEME },
    ],
    initializationOptions: settingsObject(),
    synchronize: { configurationSection: "onnxlint" },
    outputChannel: output,
    // ServerProcess logs the server's stderr at each line's own level; the client's
    // default would log every line a second time, as an error
    stdioOptions: { stdout: () => undefined, stderr: () => undefined },
    // the extension's own message explains a failed start; the client's would only repeat it
    initializationFailedHandler: () => false,
    errorHandler: {
      error: (_error, _message, count) =>
        (count ?? 0) <= 3
          ? { action: ErrorAction.Continue, handled: true }
          : { action: ErrorAction.Shutdown, handled: true },
      closed: () => {
        if (!initialized) {
          fail(proc?.failure() ?? { reason: "the server exited at start", interpreter: false });
          return { action: CloseAction.DoNotRestart, handled: true };
        }
        const now = Date.now();
        crashes.push(now);
        while (crashes.length && now - crashes[0] > RESTART_WINDOW_MS) {
          crashes.shift();
        }
        if (crashes.length > MAX_RESTARTS) {
          const last = proc?.lastProblem();
          fail({
            reason: `the server crashed ${crashes.length} times in 3 minutes${last ? `: ${last}` : ""}`,
            interpreter: false,
          });
          return { action: CloseAction.DoNotRestart, handled: true };
        }
        output.warn("the server exited; restarting it");
        initialized = false;
        return { action: CloseAction.Restart, handled: true };
      },
    },
    middleware: {
      // a binary model's problems are listed under its graph view: opening one opens the
      // view at the node's line (the custom editor for the file is never told a range)
      handleDiagnostics: problems.handleDiagnostics,
      provideCodeActions: async (document, range, context, token, next) =>
        withConfigSave(await next(document, range, context, token)),
      // Diagnostics are pushed for every model (open or not); pulling them as well
      // would list each finding twice in the Problems panel.
      provideDiagnostics: async () => ({ kind: "full", items: [] }) as never,
    },
  };
  const started = new OnnxLintClient("onnxlint", "onnxlint", serverOptions, clientOptions);
  client = started;
  context.subscriptions.push(
    started.onDidChangeState((e) => {
      if (e.newState === State.Running) {
        initialized = true;
        started.running = true;
        const info = started.initializeResult?.serverInfo;
        status?.running(info?.version, configuredEps(), undefined);
      }
    }),
  );
  try {
    await started.start();
  } catch (err) {
    fail(proc?.failure() ?? { reason: String(err), interpreter: false });
    if (client === started) {
      client = undefined;
    }
    return;
  }
  started.onNotification(STATUS_NOTIFICATION, (s: ServerStatus) => {
    status?.running(s.version ?? started.initializeResult?.serverInfo?.version, s.eps ?? [], s.models);
  });
  context.subscriptions.push(started);
}

function configuredEps(): string[] {
  return vscode.workspace.getConfiguration("onnxlint").get<string[]>("eps") ?? [];
}

async function restartClient(context: vscode.ExtensionContext): Promise<void> {
  const old = client;
  client = undefined;
  if (old) {
    try {
      await old.stop();
    } catch (err) {
      output.warn(`stopping the server: ${err}`);
    }
  }
  await startClient(context);
}

/** The URI a tab shows, for text tabs. */
function tabUri(tab: vscode.Tab): vscode.Uri | undefined {
  const input = tab.input;
  return input instanceof vscode.TabInputText ? input.uri : undefined;
}

/** Graph views whose last tab was closed: the server moves their problems back to the file. */
function watchGraphTabs(context: vscode.ExtensionContext): void {
  context.subscriptions.push(
    vscode.window.tabGroups.onDidChangeTabs((e) => {
      const closed = e.closed.map(tabUri).filter((u): u is vscode.Uri => u?.scheme === GRAPH_SCHEME);
      if (!closed.length || !client) {
        return;
      }
      const shown = new Set(
        vscode.window.tabGroups.all.flatMap((g) => g.tabs.map((t) => tabUri(t)?.toString() ?? "")),
      );
      for (const uri of closed) {
        if (!shown.has(uri.toString())) {
          void client.sendNotification(GRAPH_VIEW_CLOSED, { uri: uri.toString() });
        }
      }
    }),
  );
}

const CONFIG_EDITED_COMMAND = "onnxlint.configEdited";

function isConfigFile(uri: vscode.Uri): boolean {
  return uri.scheme === "file" && CONFIG_FILES.includes(path.basename(uri.fsPath));
}

/** Tell the server a configuration file changed on disk, now. */
function announceConfig(uri: vscode.Uri): void {
  if (!client) {
    return;
  }
  void client.sendNotification(DidChangeWatchedFilesNotification.type, {
    changes: [{ uri: client.code2ProtocolConverter.asUri(uri), type: FileChangeType.Changed }],
  });
}

/** A saved configuration file re-checks the models at once: the file watcher's event
 * comes a second or two later (the server re-checks once per change of the file). An
 * "Ignore" quick fix saves the configuration file it edits and announces it, so the
 * lenses and problems follow within a second, whatever `files.refactoring.autoSave` says. */
function watchConfigSaves(context: vscode.ExtensionContext): void {
  context.subscriptions.push(
    vscode.workspace.onDidSaveTextDocument((doc) => {
      if (isConfigFile(doc.uri)) {
        announceConfig(doc.uri);
      }
    }),
    vscode.commands.registerCommand(CONFIG_EDITED_COMMAND, async (...uris: string[]) => {
      for (const raw of uris) {
        const uri = vscode.Uri.parse(raw);
        const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
        if (doc?.isDirty) {
          await doc.save(); // announced by onDidSaveTextDocument
        } else {
          announceConfig(uri);
        }
      }
    }),
  );
}

/** The quick fixes that edit a configuration file save it after the edit (see above). */
async function withConfigSave(
  actions: (vscode.Command | vscode.CodeAction)[] | null | undefined,
): Promise<(vscode.Command | vscode.CodeAction)[] | null | undefined> {
  for (const action of actions ?? []) {
    if (action instanceof vscode.CodeAction && action.edit && !action.command) {
      const configs = action.edit.entries().map(([uri]) => uri).filter(isConfigFile);
      if (configs.length) {
        action.command = {
          title: action.title,
          command: CONFIG_EDITED_COMMAND,
          arguments: configs.map((u) => u.toString()),
        };
      }
    }
  }
  return actions;
}

/** A changed server command or interpreter takes effect at once, as in Pylance and ruff. */
async function watchServerCommand(context: vscode.ExtensionContext): Promise<void> {
  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration("onnxlint.serverCommand")) {
        output.info("onnxlint.serverCommand changed: restarting the server");
        void restartClient(context);
      }
    }),
  );
  const envs = await pythonApi();
  if (envs?.onDidChangeActiveEnvironmentPath) {
    context.subscriptions.push(
      envs.onDidChangeActiveEnvironmentPath(() => {
        const configured = vscode.workspace.getConfiguration("onnxlint").get<string[]>("serverCommand");
        if (!configured || configured.length === 0) {
          output.info("the Python interpreter changed: restarting the server");
          void restartClient(context);
        }
      }),
    );
  }
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const views = new GraphViewProvider();
  context.subscriptions.push(
    output,
    vscode.workspace.registerTextDocumentContentProvider(GRAPH_SCHEME, views),
    vscode.window.registerCustomEditorProvider("onnxlint.graph", new GraphEditorProvider(), {
      supportsMultipleEditorsPerDocument: true,
    }),
    vscode.commands.registerCommand("onnxlint.showGraph", async (uri?: vscode.Uri) => {
      const target = uri ?? activeModel();
      if (!target) {
        void vscode.window.showInformationMessage("onnxlint: select an .onnx file to show its graph.");
        return;
      }
      await showGraph(target.scheme === GRAPH_SCHEME ? modelUriOf(target) : target);
    }),
    vscode.commands.registerCommand("onnxlint.restartServer", () => restartClient(context)),
    vscode.commands.registerCommand("onnxlint.showOutput", () => output.show()),
  );
  status = new StatusItem();
  context.subscriptions.push(status, problems, vscode.window.registerFileDecorationProvider(problems));
  watchGraphTabs(context);
  watchConfigSaves(context);
  await watchServerCommand(context);
  // "onnxlint.relint" and "onnxlint.applyFix" are server commands: the language client
  // registers them itself. Refresh open graph views when their model changes on disk
  const watcher = vscode.workspace.createFileSystemWatcher("**/*.onnx");
  context.subscriptions.push(watcher, watcher.onDidChange((uri) => views.refresh(uri)));
  await startClient(context);
}

function activeModel(): vscode.Uri | undefined {
  const editor = vscode.window.activeTextEditor;
  if (editor && editor.document.uri.scheme === GRAPH_SCHEME) {
    return editor.document.uri;
  }
  const tab = vscode.window.tabGroups.activeTabGroup.activeTab;
  const input = tab?.input as { uri?: vscode.Uri } | undefined;
  if (input?.uri && input.uri.path.endsWith(".onnx")) {
    return input.uri;
  }
  return undefined;
}

export async function deactivate(): Promise<void> {
  if (client) {
    await client.stop();
  }
}
