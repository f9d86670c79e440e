"""Write the e2e workspace: a model that falls back to CPU on QNN, and its config.

Prints, as JSON, the node-level finding the editor must show: the test reads it
back, so it keeps working as rules are added or reworded.

Usage: python make_workspace.py WORKSPACE_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import onnx

from onnxlint.config import discover
from onnxlint.engine import lint
from onnxlint.index import ModelIndex
from onnxlint.lsp.sourcemap import render_graph_view

MODEL = """<ir_version: 8, opset_import: ["" : 17]>
detector (float[1,3,8,8] pixels) => (float[1,3,8,8] features, int64[4,?] boxes)
   <float[4,3,1,1] w = {0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5}, float zero = {0.0}>
{
   [conv0] conv = Conv (pixels, w)
   [relu0] act = Relu (conv)
   [pool0] pooled = GlobalAveragePool (act)
   [score0] score = ReduceSum <keepdims: int = 0> (pooled)
   [gate0] keep = Greater (score, zero)
   [branch0] features = If (keep) <
      then_branch = then_g () => (float[1,3,8,8] t) {
         [then_id] t = Identity (pixels)
      },
      else_branch = else_g () => (float[1,3,8,8] e) {
         [else_neg] e = Neg (pixels)
      }
   >
   [nonzero0] boxes = NonZero (act)
}
"""


def main() -> int:
    ws = Path(sys.argv[1])
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "onnxlint.toml").write_text('eps = ["qnn"]\n')
    path = ws / "detector.onnx"
    onnx.save(onnx.parser.parse_model(MODEL), str(path))
    report = lint(path, config=discover(path), path_label=str(path))
    node_diags = [d for d in report.diagnostics if d.location.node_path]
    if not node_diags:
        print(
            json.dumps(
                {"error": "no node-level finding", "all": [d.code for d in report.diagnostics]}
            )
        )
        return 1
    # prefer a CPU fallback (ep-support), then any EP finding, then the most severe
    node_diags.sort(
        key=lambda d: (d.category.value != "ep-support", d.ep is None, -int(d.severity))
    )
    d = node_diags[0]
    view = render_graph_view(ModelIndex(onnx.load(str(path))))
    print(
        json.dumps(
            {
                "model": path.name,
                "code": d.code,
                "node_path": d.location.node_path,
                "node_name": d.location.node_name,
                # 1-based line of the node in the graph view (the editor scrolls there)
                "graph_line": view.nodes[d.location.node_path].line + 1,
                "message": d.message,
                "codes": sorted({x.code for x in report.diagnostics}),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
