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
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  TransportKind,
} from "vscode-languageclient/node";

const GRAPH_SCHEME = "onnx-graph";
const GRAPH_SUFFIX = ".onnxtxt";
const GRAPH_VIEW_REQUEST = "onnxlint/graphView";

interface GraphViewResult {
  uri: string | null;
  text: string;
  nodes: { path: string; line: number }[];
  error: string | null;
}

let client: LanguageClient | undefined;
const output = vscode.window.createOutputChannel("onnxlint", { log: true });

/** The model file a graph view stands for: onnx-graph:/a/b.onnx.onnxtxt -> file:///a/b.onnx */
export function modelUriOf(graphUri: vscode.Uri): vscode.Uri {
  let p = graphUri.path;
  if (p.endsWith(GRAPH_SUFFIX)) {
    p = p.slice(0, -GRAPH_SUFFIX.length);
  }
  return vscode.Uri.file(p);
}

export function graphUriOf(model: vscode.Uri): vscode.Uri {
  return vscode.Uri.from({ scheme: GRAPH_SCHEME, path: model.path + GRAPH_SUFFIX });
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
async function serverCommand(): Promise<{ command: string; args: string[] }> {
  const configured = vscode.workspace.getConfiguration("onnxlint").get<string[] | string>("serverCommand");
  const list = Array.isArray(configured) ? configured : configured ? [configured] : [];
  if (list.length > 0) {
    return { command: list[0], args: list.slice(1) };
  }
  const python = await pythonFromExtension();
  if (python) {
    return { command: python, args: ["-m", "onnxlint", "lsp"] };
  }
  return { command: "onnxlint", args: ["lsp"] };
}

async function pythonFromExtension(): Promise<string | undefined> {
  const ext = vscode.extensions.getExtension("ms-python.python");
  if (!ext) {
    return undefined;
  }
  try {
    const api = ext.isActive ? ext.exports : await ext.activate();
    const envs = api?.environments;
    if (!envs) {
      return undefined;
    }
    const active = envs.getActiveEnvironmentPath(vscode.workspace.workspaceFolders?.[0]?.uri);
    const resolved = await envs.resolveEnvironment(active);
    return resolved?.executable?.uri?.fsPath;
  } catch (err) {
    output.appendLine(`onnxlint: could not ask the Python extension for an interpreter: ${err}`);
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
  };
}

async function startClient(context: vscode.ExtensionContext): Promise<void> {
  const { command, args } = await serverCommand();
  output.appendLine(`onnxlint: starting ${command} ${args.join(" ")}`);
  const serverOptions: ServerOptions = {
    run: { command, args, transport: TransportKind.stdio },
    debug: { command, args: [...args, "--log-level", "info"], transport: TransportKind.stdio },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: "file", language: "onnx" },
      { scheme: GRAPH_SCHEME },
    ],
    initializationOptions: settingsObject(),
    synchronize: { configurationSection: "onnxlint" },
    outputChannel: output,
    middleware: {
      // Diagnostics are pushed for every model (open or not); pulling them as well
      // would list each finding twice in the Problems panel.
      provideDiagnostics: async () => ({ kind: "full", items: [] }) as never,
    },
  };
  client = new LanguageClient("onnxlint", "onnxlint", serverOptions, clientOptions);
  try {
    await client.start();
  } catch (err) {
    void vscode.window.showErrorMessage(
      `onnxlint: could not start the language server (${command}). Install onnxlint in the selected ` +
        `Python environment (pip install onnxlint) or set onnxlint.serverCommand. ${err}`,
    );
    client = undefined;
    return;
  }
  context.subscriptions.push(client);
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
    vscode.commands.registerCommand("onnxlint.restartServer", async () => {
      if (client) {
        await client.stop();
        client = undefined;
      }
      await startClient(context);
    }),
  );
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
