"""How many times a lint runs ONNX's shape inference on the model (issue 19).

On the 100k-node graph each pass is seconds of C++ plus a serialisation of the model.
The Shapes analysis infers without data propagation first (the bounded, guarding pass),
then with it; the EP assignment infers the session types (no propagation, the stand-ins
of ``analyses.session_types``). When no node needs a stand-in, the session types' first
pass is the Shapes analysis's first pass, kept for it instead of run again. Counted, not
timed; the answer is compared with the one computed from scratch.
"""

from __future__ import annotations

from typing import Any

import onnx
import pytest
from onnx import helper

from onnxlint.analyses import shapes as shapes_module
from onnxlint.analyses.assignment import Assignment
from onnxlint.analyses.session_types import infer_session_types_without_weights
from onnxlint.analyses.shapes import Shapes
from onnxlint.config import Config
from onnxlint.context import LintContext
from onnxlint.engine import resolve_eps
from onnxlint.index import ModelIndex
from onnxlint.loader import load
from tests.conftest import parse
from tests.performance.test_stages import MODEL as DYNAMIC  # the Shape of a dynamic input

#: the Shape of a static input: the session types replace it by a constant and infer again
STATIC = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[2,4] x) => (float[M,K] y) {
    s = Shape(x)
    r = Relu(x)
    y = Reshape(r, s)
}
"""

#: an op whose output ORT leaves unknown at this opset: the work copy gets a stand-in input
UNRESOLVED = """\
<ir_version: 8, opset_import: ["" : 13]>
g (int64[2] a, int64[2] b, float[2,4] x) => (float[P,Q] y) {
    c = GreaterOrEqual(a, b)
    s = Shape(x)
    z = Where(c, s, s)
    y = Reshape(x, z)
}
"""


def _contrib_qdq() -> onnx.ModelProto:
    """A com.microsoft QuantizeLinear: inferred through its ai.onnx twin (a stand-in)."""
    g = helper.make_graph(
        [
            helper.make_node("Shape", ["x"], ["s"]),
            helper.make_node("Reshape", ["x", "s"], ["r"]),
            helper.make_node("QuantizeLinear", ["r", "sc", "zp"], ["y"], domain="com.microsoft"),
        ],
        "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.UINT8, None)],
        [
            helper.make_tensor("sc", onnx.TensorProto.FLOAT, [], [0.1]),
            helper.make_tensor("zp", onnx.TensorProto.UINT8, [], [0]),
        ],
    )
    return helper.make_model(
        g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    )


def _old_ir(text: str) -> onnx.ModelProto:
    model = parse(text)
    model.ir_version = 3  # the session types infer at IR 4: a changed work copy
    return model


def _models() -> dict[str, onnx.ModelProto]:
    return {
        "dynamic": parse(DYNAMIC),
        "static": parse(STATIC),
        "unresolved": parse(UNRESOLVED),
        "contrib-qdq": _contrib_qdq(),
        "ir3": _old_ir(DYNAMIC),
    }


def _count_inference(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The ``data_prop`` of every ONNX inference pass from now on."""
    calls: list[bool] = []
    real = onnx.shape_inference.infer_shapes

    def counted(model: onnx.ModelProto, *args: Any, **kwargs: Any) -> onnx.ModelProto:
        calls.append(bool(kwargs.get("data_prop", False)))
        return real(model, *args, **kwargs)

    monkeypatch.setattr(onnx.shape_inference, "infer_shapes", counted)
    return calls


def _context(model: onnx.ModelProto, eps: list[str]) -> LintContext:
    config = Config()
    return LintContext(
        loaded=load(model),
        index=ModelIndex(model),
        config=config,
        eps=resolve_eps(eps, config),
    )


def test_the_exported_assignment_infers_no_pass_the_shapes_analysis_ran(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ctx = _context(parse(DYNAMIC), ["qnn"])
    calls = _count_inference(monkeypatch)
    ctx.analysis(Shapes)
    assert calls == [False, True]  # the guarding pass, then data propagation
    la = ctx.analysis(Assignment).exported
    assert len(la.nodes) == 3  # the assignment ran on the inferred types
    assert calls == [False, True]  # before: a third pass, the session types' first


def test_a_work_copy_with_stand_ins_is_inferred_again(monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = _context(_contrib_qdq(), ["qnn"])
    calls = _count_inference(monkeypatch)
    ctx.analysis(Shapes)
    ran = len(calls)
    assert ctx.analysis(Assignment).exported.nodes
    assert calls[ran:] == [False]  # the twin changes what inference sees: one pass of its own


@pytest.mark.parametrize("name", list(_models()))
def test_the_session_types_from_the_kept_pass_are_those_from_scratch(name: str) -> None:
    model = _models()[name]
    before = model.SerializeToString()
    *_, first = shapes_module._infer_passes(model, keep_unpropagated=True)
    assert first is not None
    first_bytes = first.SerializeToString(deterministic=True)
    fresh, fresh_left = infer_session_types_without_weights(model)
    reused, reused_left = infer_session_types_without_weights(model, first)
    assert reused.SerializeToString(deterministic=True) == fresh.SerializeToString(
        deterministic=True
    )
    assert reused_left.keys() == fresh_left.keys()
    assert model.SerializeToString() == before
    if reused is not first:  # inferred again: the kept pass was only read
        assert first.SerializeToString(deterministic=True) == first_bytes


def test_the_shapes_analysis_keeps_one_inferred_copy() -> None:
    """With an EP, the copy kept is the first pass (what the session types read), and the
    propagated one is let go; without an EP nothing infers session types."""
    with_ep = _context(parse(DYNAMIC), ["qnn"]).analysis(Shapes)
    assert with_ep.take_inferred(weights=False) is None
    kept = with_ep.take_unpropagated()
    assert kept is not None
    assert with_ep.take_unpropagated() is None  # handed over once
    no_ep = _context(parse(DYNAMIC), []).analysis(Shapes)
    assert no_ep.take_unpropagated() is None
    assert no_ep.take_inferred(weights=False) is not None
    # both see the same types where propagation adds nothing
    assert with_ep.value_type("y") == no_ep.value_type("y")
