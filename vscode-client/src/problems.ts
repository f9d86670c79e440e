// Where a binary model's problems are listed, and the explorer's mark for the model.
//
// VS Code opens a problem at its range in its resource; a binary .onnx file opens in the
// custom editor, which is never told the range, so the graph view would open at line 1.
// The extension therefore lists a binary model's problems under its graph view's URI
// (onnx-graph:/a/b.onnx.onnxtxt): opening one opens the view at the node's line, whether
// the view is open or not, and the model has one group in the Problems panel. The
// explorer still marks the model file, from a file decoration of its own. A file that
// does not load as a model (corrupt, empty) has no view: its problems stay on the file.
import * as vscode from "vscode";

export const GRAPH_SCHEME = "onnx-graph";
export const GRAPH_SUFFIX = ".onnxtxt";

/** A model file the editor cannot show as text: its problems go to its graph view. */
export function isBinaryModel(scheme: string, path: string): boolean {
  return scheme === "file" && path.toLowerCase().endsWith(".onnx");
}

/** The graph view path of a model path, and back. */
export function viewPathOf(modelPath: string): string {
  return modelPath + GRAPH_SUFFIX;
}

export function modelPathOf(viewPath: string): string {
  return viewPath.endsWith(GRAPH_SUFFIX) ? viewPath.slice(0, -GRAPH_SUFFIX.length) : viewPath;
}

export interface Counts {
  errors: number;
  warnings: number;
}

/** Errors and warnings per model path, as last published for its file or its view. */
export class ProblemCounts {
  private readonly counts = new Map<string, Counts>();

  /** Record ``severities`` (vscode.DiagnosticSeverity values) for a model; true if changed. */
  set(modelPath: string, severities: readonly number[]): boolean {
    const next = {
      errors: severities.filter((s) => s === 0).length,
      warnings: severities.filter((s) => s === 1).length,
    };
    const prev = this.counts.get(modelPath);
    if (next.errors === 0 && next.warnings === 0) {
      this.counts.delete(modelPath);
    } else {
      this.counts.set(modelPath, next);
    }
    return (prev?.errors ?? 0) !== next.errors || (prev?.warnings ?? 0) !== next.warnings;
  }

  get(modelPath: string): Counts | undefined {
    return this.counts.get(modelPath);
  }
}

/** False when the server says the model has no graph view (it does not load). */
export function hasView(diagnostics: readonly vscode.Diagnostic[]): boolean {
  return diagnostics.every((d) => (d as { data?: { has_view?: boolean } }).data?.has_view !== false);
}

function viewUri(model: vscode.Uri): vscode.Uri {
  return vscode.Uri.from({ scheme: GRAPH_SCHEME, path: viewPathOf(model.path) });
}

/** The language client middleware that routes a binary model's problems to its view, and
 * the explorer's decoration for the model file. */
export class ModelProblems implements vscode.FileDecorationProvider {
  private readonly counts = new ProblemCounts();
  private readonly changed = new vscode.EventEmitter<vscode.Uri[]>();
  readonly onDidChangeFileDecorations = this.changed.event;
  /** binary model paths whose problems are listed on the file itself (no view) */
  private readonly onFile = new Set<string>();

  handleDiagnostics = (
    uri: vscode.Uri,
    diagnostics: vscode.Diagnostic[],
    next: (uri: vscode.Uri, diagnostics: vscode.Diagnostic[]) => void,
  ): void => {
    let model: vscode.Uri | undefined;
    if (isBinaryModel(uri.scheme, uri.path)) {
      model = uri;
    } else if (uri.scheme === GRAPH_SCHEME && isBinaryModel("file", modelPathOf(uri.path))) {
      model = vscode.Uri.file(modelPathOf(uri.path));
    }
    if (!model) {
      next(uri, diagnostics);
      return;
    }
    const view = viewUri(model);
    // an empty list clears wherever the model's problems are listed now
    const onFile = diagnostics.length ? !hasView(diagnostics) : this.onFile.has(model.path);
    const target = onFile ? model : view;
    if (onFile !== this.onFile.has(model.path)) {
      // listed somewhere else from now on: the old place's copy goes
      if (onFile) {
        this.onFile.add(model.path);
      } else {
        this.onFile.delete(model.path);
      }
      next(onFile ? view : model, []);
    }
    if (!onFile) {
      // the diagnostic sits in the view: a related location at the same place goes
      for (const d of diagnostics) {
        const related = d.relatedInformation?.filter(
          (r) => !(r.location.uri.toString() === view.toString() && r.location.range.isEqual(d.range)),
        );
        if (related?.length !== d.relatedInformation?.length) {
          d.relatedInformation = related;
        }
      }
    }
    // the explorer marks a model listed under its view itself (VS Code marks the file)
    if (this.counts.set(model.path, onFile ? [] : diagnostics.map((d) => d.severity))) {
      this.changed.fire([model]);
    }
    next(target, diagnostics);
  };

  provideFileDecoration(uri: vscode.Uri): vscode.FileDecoration | undefined {
    if (uri.scheme !== "file") {
      return undefined;
    }
    const c = this.counts.get(uri.path);
    if (!c) {
      return undefined;
    }
    const n = c.errors + c.warnings;
    const what = [
      ...(c.errors ? [`${c.errors} error${c.errors === 1 ? "" : "s"}`] : []),
      ...(c.warnings ? [`${c.warnings} warning${c.warnings === 1 ? "" : "s"}`] : []),
    ].join(", ");
    return new vscode.FileDecoration(
      n > 9 ? "9+" : String(n), // a badge has room for two characters
      `onnxlint: ${what} (in the graph view)`,
      new vscode.ThemeColor(c.errors ? "list.errorForeground" : "list.warningForeground"),
    );
  }

  dispose(): void {
    this.changed.dispose();
  }
}
