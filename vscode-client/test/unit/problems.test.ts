// Where a binary model's problems go and the counts behind the explorer's mark for it.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ProblemCounts, isBinaryModel, modelPathOf, viewPathOf } from "../../src/problems";

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
