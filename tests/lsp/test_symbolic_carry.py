"""After an attribute edit of one node in a model where ORT's symbolic shape inference
filled ONNX's gaps, the language server takes the previous Shapes analysis over only for
an operator ``rules/ort_symbolic.json`` lists (``analyses.edits``, issue 19): ORT's tool
types such a node as ONNX's single-node inference does, and ONNX types it as its first
input whatever the attributes. The file's two facts are checked against the installed
ORT tool and onnx; each edit's result is compared with a fresh lint's."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import onnx
import pytest
from onnx import TensorProto, defs, helper

from onnxlint.analyses.shapes import Shapes
from onnxlint.analyses.symbolic import _symbolic_class, passes_input_type
from onnxlint.data import load_json
from onnxlint.lsp.settings import Settings
from onnxlint.lsp.workspace import ModelState, analyse, path_to_uri
from tests.lsp.models import count_shapes

ROWS = load_json("ort_symbolic.json")["passes_input_type"]

# ONNX leaves the Range's length unknown; ORT's tool names it (used_symbolic)
TEXT = """<ir_version: 8, opset_import: ["" : 20]>
gaps (float[N,4] x) => (float[N,4] y, float[M] r, float[N,4] g) {
   [soft] s = Softmax <axis: int = -1> (x)
   [relu] y = Relu (s)
   [gelu] g = Gelu <approximate: string = "none"> (x)
   [shape] sh = Shape (x)
   [zero] zero = Constant <value: tensor = int64 {0}> ()
   [one] one = Constant <value: tensor = int64 {1}> ()
   [first] n = Gather <axis: int = 0> (sh, zero)
   [rng] rf = Range (zero, n, one)
   [cast] r = Cast <to: int = 1> (rf)
}
"""

# (what, old text, new text, taken over)
EDITS = [
    ("a listed operator's attribute", "Softmax <axis: int = -1>", "Softmax <axis: int = 0>", True),
    ("a listed operator's attribute out of range", "axis: int = -1", "axis: int = 5", False),
    # ONNX types Gelu as its input either way, but ORT's tool has a handler of its own
    ("an operator ORT's tool handles", '"none"', '"tanh"', False),
    ("a node renamed", "[soft]", "[softer]", True),
]


def _tool_source() -> str:
    tool = _symbolic_class()
    if tool is None:
        pytest.skip("ORT's symbolic shape inference is not installed")
    return inspect.getsource(inspect.getmodule(tool))


@pytest.mark.parametrize("op", [row["op"] for row in ROWS])
def test_ort_tool_never_names_a_listed_operator(op: str) -> None:
    """Named nowhere in the tool (its dispatcher, its skip list, its per-op cases), the
    operator goes through ONNX's single-node inference there and nothing else."""
    assert f'"{op}"' not in _tool_source() and f"'{op}'" not in _tool_source()


#: valid attributes per operator (the defaults are tried too)
ATTRIBUTES: dict[str, list[dict[str, Any]]] = {
    "Softmax": [{"axis": 0}, {"axis": -2}],
    "LogSoftmax": [{"axis": 1}],
    "Hardmax": [{"axis": -1}, {"axis": 2}],
    "LeakyRelu": [{"alpha": 0.3}],
    "Elu": [{"alpha": 2.0}],
    "Selu": [{"alpha": 1.5, "gamma": 0.5}],
    "Celu": [{"alpha": 0.5}],
    "HardSigmoid": [{"alpha": 0.1, "beta": 0.2}],
    "ThresholdedRelu": [{"alpha": 0.5}],
    "Shrink": [{"bias": 0.1, "lambd": 0.2}],
    "LpNormalization": [{"axis": 1, "p": 1}, {"axis": -1, "p": 2}],
    "LRN": [{"size": 3, "alpha": 0.1, "beta": 0.5, "bias": 2.0}],
    "Trilu": [{"upper": 0}],
}


@pytest.mark.parametrize("row", ROWS, ids=[row["op"] for row in ROWS])
def test_onnx_types_a_listed_operator_as_its_input(row: dict[str, Any]) -> None:
    op, since = row["op"], int(row["since"])
    revisions = sorted(
        {
            s.since_version
            for s in defs.get_all_schemas_with_history()
            if s.name == op and not s.domain
        }
    )
    assert since in revisions
    tried = 0
    for version in (v for v in revisions if v >= since):
        schema = defs.get_schema(op, version, "")
        assert not schema.has_data_propagation_function
        required = ATTRIBUTES[op][0] if op == "LRN" else {}
        for attrs in [required, *ATTRIBUTES[op]]:
            for shape in ([2, 3, 4, 5], ["b", "s", 4, None], [None, 3, "x", 7]):
                node = helper.make_node(op, ["x"], ["y"], **attrs)
                given = helper.make_tensor_type_proto(TensorProto.FLOAT, shape)
                got = onnx.shape_inference.infer_node_outputs(
                    schema, node, {"x": given}, opset_imports=[helper.make_opsetid("", version)]
                )
                assert got["y"] == given, (op, version, attrs, shape)
                tried += 1
    assert tried
    assert passes_input_type(op, since) and not passes_input_type(op, since - 1)


def _lint(doc: Path, text: str, prior: ModelState | None) -> ModelState:
    return analyse(
        path_to_uri(doc),
        doc,
        text.encode(),
        Settings(),
        previous=prior.source if prior is not None else None,
        prior=prior,
    )


@pytest.mark.parametrize(("what", "old", "new", "taken"), EDITS, ids=[e[0] for e in EDITS])
def test_an_edit_where_ort_filled_gaps_is_taken_over_as_the_file_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, what: str, old: str, new: str, taken: bool
) -> None:
    _tool_source()  # skips without ORT's tool
    computed = count_shapes(monkeypatch)
    doc = tmp_path / "m.onnxtxt"
    before = _lint(doc, TEXT, None)
    assert computed == [True]  # ORT's answer is part of the table
    edited = TEXT.replace(old, new, 1)
    assert edited != TEXT
    after = _lint(doc, edited, before)
    assert (len(computed) == 1) is taken, what
    fresh = _lint(doc, edited, None)
    assert after.report.to_dict() == fresh.report.to_dict(), what
    mine, theirs = after.analyses[Shapes], fresh.analyses[Shapes]
    assert isinstance(mine, Shapes) and isinstance(theirs, Shapes)
    assert mine._table == theirs._table, what
    assert mine.used_symbolic and theirs.used_symbolic


@pytest.mark.parametrize("room", [1, 1000], ids=["across", "close"])
def test_an_edit_near_the_symbolic_size_limit_is_analysed_afresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, room: int
) -> None:
    """The model's size decides whether ORT's symbolic inference runs
    (``SYMBOLIC_MAX_BYTES``): a rename whose model lands across the limit, or within
    ``edits.SIZE_SLACK`` of it, is not taken over, and the result is a fresh lint's; far
    from it, it is."""
    from onnxlint.analyses import shapes as shapes_module

    _tool_source()
    doc = tmp_path / "m.onnxtxt"
    before = _lint(doc, TEXT, None)
    sized = before.analyses[Shapes].sized
    assert isinstance(sized, int)
    edited = TEXT.replace("[soft]", "[softer]", 1)  # two bytes more
    computed = count_shapes(monkeypatch)
    far = _lint(doc, edited, before)
    assert computed == [] and far.analyses[Shapes].sized == sized + 2  # taken over
    monkeypatch.setattr(shapes_module, "SYMBOLIC_MAX_BYTES", sized + room)
    after = _lint(doc, edited, before)
    assert len(computed) == 1
    fresh = _lint(doc, edited, None)
    assert after.report.to_dict() == fresh.report.to_dict()
    assert after.analyses[Shapes]._table == fresh.analyses[Shapes]._table
    assert after.analyses[Shapes].used_symbolic is (room > 2)
