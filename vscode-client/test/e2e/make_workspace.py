"""Write the e2e workspace and print, as JSON, what the editor must show.

The workspace: a binary model that falls back to CPU on QNN, a 10k-node chain with a
dynamic ``batch`` input, an ONNX text model the test edits, and their config. The
expectations (the node-level finding, the summary lens of each text the test types)
come from onnxlint itself, so the test keeps working as rules are added or reworded.

With ``ONNXLINT_E2E_WORKSPACE=full`` the workspace is issue #18's 48 models
(``full_workspace.py``) and the JSON adds, per model, what its Problems group must list.

Usage: python make_workspace.py WORKSPACE_DIR
       python make_workspace.py --features FILE   (the summary lens and the symbols of
                                                   FILE as it is on disk, now)
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import onnx

from onnxlint.config import discover
from onnxlint.engine import lint
from onnxlint.index import ModelIndex
from onnxlint.lsp.navigation import code_lenses, document_symbols
from onnxlint.lsp.printer import render_graph_view
from onnxlint.lsp.settings import Settings
from onnxlint.lsp.workspace import analyse, path_to_uri

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


#: the text model the test edits: NonZero falls back to CPU on QNN
EDITED = """<ir_version: 8, opset_import: ["" : 17]>
edited (float[1,4] x) => (float[1,4] y, int64[2,?] idx) {
   [relu0] y = Relu (x)
   [nonzero0] idx = NonZero (x)
}
"""
#: the line the test types after EDITED's line EDIT_AFTER (1-based), indented by the editor
EDIT_LINE = "[nonzero1] idx2 = NonZero (y)"
EDIT_AFTER = 4
CHAIN_NODES = 10_000


def features_of(path: Path, text: str | None = None) -> dict[str, object]:
    """The summary lens title and the symbol names the server gives ``path`` (or ``text``)."""
    data = text.encode() if text is not None else None
    state = analyse(path_to_uri(path), path, data, Settings())
    lenses = code_lenses(state)
    names: list[str] = []
    todo = list(document_symbols(state))
    while todo:
        sym = todo.pop()
        names.append(sym.name)
        todo.extend(sym.children or [])
    return {"lens": lenses[0].command.title if lenses else None, "symbols": sorted(names)}


def chain(n: int) -> onnx.ModelProto:
    """``n`` Relus in a row on a ``[batch, 16]`` input: every node costs the dynamic dim."""
    nodes = [
        onnx.helper.make_node("Relu", [f"t{i}"], [f"t{i + 1}"], name=f"relu{i}") for i in range(n)
    ]
    x = onnx.helper.make_tensor_value_info("t0", onnx.TensorProto.FLOAT, ["batch", 16])
    y = onnx.helper.make_tensor_value_info(f"t{n}", onnx.TensorProto.FLOAT, ["batch", 16])
    graph = onnx.helper.make_graph(nodes, "chain", [x], [y])
    return onnx.helper.make_model(
        graph, opset_imports=[onnx.helper.make_opsetid("", 17)], ir_version=8
    )


def main() -> int:
    if sys.argv[1] == "--features":
        print(json.dumps(features_of(Path(sys.argv[2]))))
        return 0
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
    onnx.save(chain(CHAIN_NODES), str(ws / "chain.onnx"))
    edited = ws / "edited.onnxtxt"
    edited.write_text(EDITED)
    lines = EDITED.split("\n")
    typed = "\n".join([*lines[:EDIT_AFTER], "   " + EDIT_LINE, *lines[EDIT_AFTER:]])
    before, after = features_of(edited), features_of(edited, typed)
    # the lens and the symbols must change with the edit, or the test could not tell
    assert before["lens"] and after["lens"] and before != after, (before, after)
    full: dict[str, object] = {}
    if os.environ.get("ONNXLINT_E2E_WORKSPACE") == "full":
        import full_workspace

        full_workspace.add_models(ws)
        full = {"models": full_workspace.expectations(ws)}
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
                "chain": "chain.onnx",
                "edited": {
                    "file": edited.name,
                    "after_line": EDIT_AFTER,
                    "line": EDIT_LINE,
                    "before": before,
                    "after": after,
                },
                **full,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
