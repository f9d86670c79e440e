"""The shape fix's merge of ORT's symbolic answer into the model's value_info (issue 19).

It scanned the whole value_info list for every value ORT typed (and the list of produced
names for each): quadratic, 28 s of a 10k-node lint with one EP, in its what-if. It is
one pass now; the answer is compared with the one-by-one remove-and-append it replaces,
on an answer with repeated names, values the model already types, and graph outputs.
"""

from __future__ import annotations

from typing import Any

import onnx
import pytest
from onnx import helper

from onnxlint.analyses import symbolic as symbolic_module
from onnxlint.analyses.shapes import value_type_of
from onnxlint.fixes import shapes as fix_shapes

F = onnx.TensorProto.FLOAT


def _model() -> onnx.ModelProto:
    nodes = [helper.make_node("Relu", [f"v{i}"], [f"v{i + 1}"]) for i in range(6)]
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("v0", F, ["N", 4])],
        [helper.make_tensor_value_info("v6", F, None)],
        value_info=[
            helper.make_tensor_value_info("v1", F, [None, 4]),  # unknown dim: ORT may fill it
            helper.make_tensor_value_info("v2", F, ["N", 4]),  # known: kept as it is
            helper.make_tensor_value_info("v3", F, None),
        ],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _answer() -> onnx.ModelProto:
    out = _model()
    del out.graph.value_info[:]
    out.graph.value_info.extend(
        [
            helper.make_tensor_value_info("v3", F, [2, 4]),
            helper.make_tensor_value_info("v1", F, [2, 4]),
            helper.make_tensor_value_info("v2", F, [3, 4]),  # known already: not taken
            helper.make_tensor_value_info("v4", F, [2, 4]),
            helper.make_tensor_value_info("v3", F, [5, 4]),  # a second answer for v3
            helper.make_tensor_value_info("v6", F, [2, 4]),  # a graph output: not taken
            helper.make_tensor_value_info("zz", F, [2, 4]),  # produced by no node
            helper.make_tensor_value_info("v5", F, [None, 4]),  # unknown: not taken
        ]
    )
    return out


def _one_by_one(model: onnx.ModelProto, ort: onnx.ModelProto) -> None:
    """The merge as it was (the reference)."""
    known = {
        vi.name: value_type_of(vi.type) for vi in (*model.graph.value_info, *model.graph.output)
    }
    produced = [o for n in model.graph.node for o in n.output if o]
    outputs = {o.name for o in model.graph.output}
    for vi in ort.graph.value_info:
        vt = value_type_of(vi.type)
        if vi.name in outputs or vi.name not in produced or vt.has_unknown:
            continue
        if vi.name in known and not known[vi.name].has_unknown:
            continue
        for existing in list(model.graph.value_info):
            if existing.name == vi.name:
                model.graph.value_info.remove(existing)
        model.graph.value_info.append(vi)


def test_the_merge_is_the_one_by_one_merge(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[Any] = []

    def answer(model: onnx.ModelProto, weights: Any = None) -> onnx.ModelProto:
        asked.append(model)
        return _answer()

    monkeypatch.setattr(fix_shapes, "symbolic_could_help", lambda *args: True)
    monkeypatch.setattr(symbolic_module, "symbolic_infer", answer)
    merged = _model()
    fix_shapes._fill_from_ort(merged)
    assert len(asked) == 1
    expected = _model()
    _one_by_one(expected, _answer())
    assert merged.SerializeToString() == expected.SerializeToString()
    got = [
        (v.name, [d.dim_value for d in v.type.tensor_type.shape.dim])
        for v in merged.graph.value_info
    ]
    assert got == [("v2", [0, 4]), ("v1", [2, 4]), ("v4", [2, 4]), ("v3", [5, 4])]
