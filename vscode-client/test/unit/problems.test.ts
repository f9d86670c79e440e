// Where a binary model's problems go and the counts behind the explorer's mark for it.
import assert from "node:assert/strict";
import { test } from "node:test";
import * as vscode from "vscode";
import { ModelProblems, ProblemCounts, isBinaryModel, modelPathOf, viewPathOf } from "../../src/problems";

test("a binary model's problems go to its graph view; text models keep theirs", () => {
  assert.equal(isBinaryModel("file", "/w/model.onnx"), true);
  assert.equal(isBinaryModel("file", "/w/MODEL.ONNX"), true);
  assert.equal(isBinaryModel("file", "/w/model.onnxtxt"), false);
  assert.equal(isBinaryModel("onnx-graph", "/w/model.onnx"), false);
  assert.equal(viewPathOf("/w/model.onnx"), "/w/model.onnx.onnxtxt");
  assert.equal(modelPathOf(viewPathOf("/w/model.onnx")), "/w/model.onnx");
  assert.equal(modelPathOf("/w/other"), "/w/other");
});

test("counts follow the last publish, from the file or the view", () => {
  const counts = new ProblemCounts();
  // DiagnosticSeverity: Error 0, Warning 1, Information 2, Hint 3
  assert.equal(counts.set("/w/m.onnx", [0, 1, 1, 2, 3]), true);
  assert.deepEqual(counts.get("/w/m.onnx"), { errors: 1, warnings: 2 });
  assert.equal(counts.set("/w/m.onnx", [1, 0, 1]), false); // the same counts: no new mark
  assert.equal(counts.set("/w/m.onnx", [3]), true); // hints only: no mark
  assert.equal(counts.get("/w/m.onnx"), undefined);
  assert.equal(counts.set("/w/m.onnx", []), false);
});

test("the middleware lists a binary model's problems under its view and marks the file", () => {
  const problems = new ModelProblems();
  const marked: string[] = [];
  problems.onDidChangeFileDecorations((uris) => marked.push(...uris.map(String)));
  const range = (line: number) => ({ line, isEqual: (o: { line: number }) => o.line === line });
  const view = vscode.Uri.from({ scheme: "onnx-graph", path: "/w/m.onnx.onnxtxt" });
  const elsewhere = { uri: vscode.Uri.file("/w/other.onnxtxt"), range: range(3) };
  const diag = (severity: number, line: number, related: unknown[] = []) =>
    ({ severity, range: range(line), relatedInformation: related.map((location) => ({ location })) }) as never;
  const sent: [string, { relatedInformation: { location: unknown }[] }[]][] = [];
  const next = (uri: vscode.Uri, d: never[]) => sent.push([String(uri), d]);
  // the file's problems, each with its related location into the view (the same place)
  problems.handleDiagnostics(
    vscode.Uri.file("/w/m.onnx"),
    [diag(1, 7, [{ uri: view, range: range(7) }, elsewhere]), diag(3, 9, [{ uri: view, range: range(9) }])],
    next,
  );
  assert.equal(sent[0][0], String(view));
  assert.deepEqual(sent[0][1].map((d) => d.relatedInformation.map((r) => r.location)), [[elsewhere], []]);
  assert.deepEqual(marked, ["file:///w/m.onnx"]);
  const mark = problems.provideFileDecoration(vscode.Uri.file("/w/m.onnx")) as vscode.FileDecoration;
  assert.equal(mark.badge, "1"); // the hint does not count
  // the view's own publish (view open) counts for the file too; a text model is left alone
  problems.handleDiagnostics(view, [], next);
  assert.equal(problems.provideFileDecoration(vscode.Uri.file("/w/m.onnx")), undefined);
  problems.handleDiagnostics(vscode.Uri.file("/w/t.onnxtxt"), [diag(0, 1)], next);
  assert.deepEqual(sent.slice(1).map(([u, d]) => [u, d.length]), [[String(view), 0], ["file:///w/t.onnxtxt", 1]]);
});

test("a model that does not load keeps its problems on the file, under its own name", () => {
  const problems = new ModelProblems();
  const file = vscode.Uri.file("/w/bad.onnx");
  const view = vscode.Uri.from({ scheme: "onnx-graph", path: "/w/bad.onnx.onnxtxt" });
  const sent: [string, number][] = [];
  const next = (uri: vscode.Uri, d: never[]) => sent.push([String(uri), d.length]);
  const diag = (hasView: boolean) =>
    ({ severity: 0, range: { line: 0 }, data: { code: "OL002", has_view: hasView } }) as never;
  // no view: on the file, and the view's earlier copy (if any) is cleared
  problems.handleDiagnostics(file, [diag(false)], next);
  assert.deepEqual(sent, [[String(view), 0], [String(file), 1]]);
  assert.equal(problems.provideFileDecoration(file), undefined); // VS Code marks the file itself
  // its view opened (it says why it shows no graph) and the server publishes there: the file still
  sent.length = 0;
  problems.handleDiagnostics(file, [], next);
  problems.handleDiagnostics(view, [diag(false)], next);
  assert.deepEqual(sent, [[String(file), 0], [String(file), 1]]);
  // the file is fixed: the problems move under the view, and the file's copy goes
  sent.length = 0;
  problems.handleDiagnostics(file, [diag(true)], next);
  assert.deepEqual(sent, [[String(file), 0], [String(view), 1]]);
  assert.equal((problems.provideFileDecoration(file) as vscode.FileDecoration).badge, "1");
});
