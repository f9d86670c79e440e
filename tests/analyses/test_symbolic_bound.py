"""ORT's symbolic shape inference is given up on once it derives a dim or value that
prints longer than ``symbolic.MAX_EXPRESSION_CHARS``: sympy's simplification of such
expressions took 9 to 28 minutes of one lint of torchvision's Faster R-CNN (the corpus's
held-out batch 21). The bound is on the expressions, not on time: the same answer on every
machine."""

from __future__ import annotations

import onnx
import pytest
from onnx import TensorProto, helper

from onnxlint.analyses import symbolic

pytest.importorskip("sympy", reason="ORT's symbolic shape inference needs sympy")


def concat_chain(links: int) -> onnx.ModelProto:
    """Concats of two inputs with symbolic dims: the output's dim grows by ``b`` per link
    (``a + b``, ``a + 2*b``, ...)."""
    nodes, prev = [], "a_in"
    for k in range(links):
        nodes.append(helper.make_node("Concat", [prev, "b_in"], [f"c{k}"], f"cat{k}", axis=0))
        prev = f"c{k}"
    graph = helper.make_graph(
        nodes,
        "chain",
        [
            helper.make_tensor_value_info("a_in", TensorProto.FLOAT, ["a"]),
            helper.make_tensor_value_info("b_in", TensorProto.FLOAT, ["b"]),
        ],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, None)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _dim(model: onnx.ModelProto, name: str) -> str:
    vis = [*model.graph.value_info, *model.graph.output]
    return next(v for v in vis if v.name == name).type.tensor_type.shape.dim[0].dim_param


def test_an_answer_within_the_bound_is_kept() -> None:
    if symbolic.symbolic_unavailable():
        pytest.skip(symbolic.symbolic_unavailable() or "")
    out = symbolic.symbolic_infer(concat_chain(3))
    assert out is not None
    assert _dim(out, "c2").replace(" ", "") == "a+3*b"


def test_an_expression_past_the_bound_gives_no_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    if symbolic.symbolic_unavailable():
        pytest.skip(symbolic.symbolic_unavailable() or "")
    # "a + 3*b" is 7 characters: within 7, past 6
    monkeypatch.setattr(symbolic, "MAX_EXPRESSION_CHARS", 7)
    assert symbolic.symbolic_infer(concat_chain(3)) is not None
    monkeypatch.setattr(symbolic, "MAX_EXPRESSION_CHARS", 6)
    assert symbolic.symbolic_infer(concat_chain(3)) is None
    assert symbolic.symbolic_infer(concat_chain(1)) is not None  # "a + b": 5


def test_the_bound_leaves_numbers_alone() -> None:
    assert not symbolic._too_long([1, 2, 3])
    assert not symbolic._too_long(None)
