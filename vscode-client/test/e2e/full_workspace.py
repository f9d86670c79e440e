"""The 48-model workspace of issue #18 (``ONNXLINT_E2E_WORKSPACE=full``).

Added to the small workspace (detector, chain, edited text model): the onnx package's
light models, a sample of its small test models (``simple``, ``pytorch-operator``), a model with a dynamic ``batch`` input
and an If, a corrupt file, an empty ``.onnx`` and a model with ~50 MB of inline weights.
Everything comes from the installed ``onnx`` package or is built here: nothing is
downloaded.

For each model, what the Problems panel must list comes from the language server's own
code (``diagnostics_for`` with the default settings): the number of entries, each
entry's message, and for a binary model the 1-based line of the graph view its problem
opens at.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import onnx
from lsprotocol import types as lsp

from onnxlint.lsp.diagnostics import diagnostics_for
from onnxlint.lsp.settings import Settings
from onnxlint.lsp.workspace import analyse, graph_uri, is_text_model, path_to_uri

MODELS = 48
DYNAMIC_IF = """<ir_version: 8, opset_import: ["" : 17]>
dynamic_if (float[batch,3,8,8] x) => (float[batch,3,8,8] y) <float zero = {0.0}> {
   [sum0] s = ReduceSum <keepdims: int = 0> (x)
   [gate0] keep = Greater (s, zero)
   [branch0] y = If (keep) <
      then_branch = then_g () => (float[batch,3,8,8] t) { [then_relu] t = Relu (x) },
      else_branch = else_g () => (float[batch,3,8,8] e) { [else_neg] e = Neg (x) }
   >
}
"""


def big_weights(mb: int = 50) -> onnx.ModelProto:
    """A MatMul on ``mb`` MB of inline float weights."""
    cols = 1024
    rows = mb * 1024 * 1024 // (4 * cols)
    w = onnx.numpy_helper.from_array(np.full((rows, cols), 0.01, dtype=np.float32), "w")
    x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, rows])
    y = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, cols])
    node = onnx.helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul0")
    graph = onnx.helper.make_graph([node], "big", [x], [y], initializer=[w])
    return onnx.helper.make_model(
        graph, opset_imports=[onnx.helper.make_opsetid("", 17)], ir_version=8
    )


def add_models(ws: Path) -> None:
    """Fill ``ws`` (the small workspace) up to :data:`MODELS` models."""
    data = Path(onnx.__file__).parent / "backend" / "test" / "data"
    for src in sorted((data / "light").glob("*.onnx")):
        shutil.copy(src, ws / src.name)
    onnx.save(onnx.parser.parse_model(DYNAMIC_IF), str(ws / "dynamic_if.onnx"))
    (ws / "corrupt.onnx").write_bytes(b"\x08\x07\x12\x04this is not a model" * 8)
    (ws / "empty.onnx").write_bytes(b"")
    onnx.save(big_weights(), str(ws / "big_weights.onnx"))
    # the rest: the package's small test models, evenly spread over the sorted list
    left = MODELS - models_in(ws)
    tests = sorted(
        p for kind in ("simple", "pytorch-operator") for p in (data / kind).glob("*/model.onnx")
    )
    for src in [tests[i * len(tests) // left] for i in range(left)]:
        shutil.copy(src, ws / f"{src.parent.name.removeprefix('test_')}.onnx")
    assert models_in(ws) == MODELS, models_in(ws)


def models_in(ws: Path) -> int:
    return len([p for p in ws.iterdir() if p.suffix in (".onnx", ".onnxtxt")])


def expectations(ws: Path) -> dict[str, dict[str, object]]:
    """Per model file: the Problems panel's entries as the server publishes them."""
    out: dict[str, dict[str, object]] = {}
    settings = Settings()
    for path in sorted(p for p in ws.iterdir() if p.suffix in (".onnx", ".onnxtxt")):
        text = is_text_model(path)
        state = analyse(path_to_uri(path), path, None, settings)
        if not text:
            state.render_view()
        diags = diagnostics_for(
            state,
            view="text" if text else "file",
            view_uri=None if text else graph_uri(path),
            show_hints=settings.show_hints,
            per_rule=settings.max_problems_per_rule,
        )
        shown = [d for d in diags if d.severity != lsp.DiagnosticSeverity.Hint]
        entries = [
            {
                "message": d.message.split("\n")[0],
                "code": str(d.code),
                "line": d.range.start.line + 1,
                "severity": int(d.severity or lsp.DiagnosticSeverity.Error),
            }
            for d in shown
        ]
        keys = [(e["message"], e["code"], e["line"]) for e in entries]
        out[path.name] = {
            "count": len(shown),
            "binary": not text and state.index is not None,
            "entries": entries,
            # the server's own list must hold no duplicate, or the panel could not either
            "duplicates": len(keys) - len(set(keys)),
        }
    return out
