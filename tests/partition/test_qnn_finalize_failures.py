"""The HTP backend fails to compile (finalize) a partition holding an RMSNorm written as
``Pow(x, 2)``, ``ReduceMean``, ``Add(eps)``, ``Sqrt``, ``Reciprocal``, ``Mul(x)``,
``Mul(weight)``, as the dynamo exporter writes ``torch.rsqrt`` (issue #16: a Qwen2 export
of 100 kB failing with ``QNN_COMMON_ERROR_MEM_ALLOC`` at both levels). Every node passes
QNN's validation; the profile lists the chain in ``partitioning.finalize_failures`` and
OL513 reports it. Close variants compile and must not be reported.

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``).
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint import lint

from .conftest import agreement, partitions, real_sessions

QNN = "QNNExecutionProvider"


def rms_norm(
    square: str = "pow",
    exponent: float = 2.0,
    inverse: str = "reciprocal",
    weight: bool = True,
    swapped: str = "",
) -> onnx.ModelProto:
    """x [1, 8, 32] -> mean(x^2) + eps -> sqrt -> x * 1/s (Reciprocal or Div(1, s)) or x / s
    [-> * weight]; ``swapped``: ``"weight"`` writes Mul(normed, weight) instead of
    Mul(weight, normed), ``"x"`` Mul(1/s, x) instead of Mul(x, 1/s)."""
    inits = [
        numpy_helper.from_array(np.array([-1], np.int64), "ax"),
        numpy_helper.from_array(np.array(1e-6, np.float32), "eps"),
        numpy_helper.from_array(np.array(exponent, np.float32), "e"),
        numpy_helper.from_array(np.random.RandomState(0).rand(32).astype(np.float32), "w"),
    ]
    nodes = [
        helper.make_node("Pow", ["x", "e"], ["p"], "pow")
        if square == "pow"
        else helper.make_node("Mul", ["x", "x"], ["p"], "square"),
        helper.make_node("ReduceMean", ["p", "ax"], ["m"], "mean"),
        helper.make_node("Add", ["m", "eps"], ["a"], "add"),
        helper.make_node("Sqrt", ["a"], ["s"], "sqrt"),
    ]
    last = "y" if not weight else "q"
    if inverse == "div_one":  # TorchScript's torch.rsqrt: Div(1, s), then Mul(x)
        inits.append(numpy_helper.from_array(np.array(1.0, np.float32), "one"))
        nodes += [
            helper.make_node("Div", ["one", "s"], ["r"], "div_one"),
            helper.make_node("Mul", ["r", "x"] if swapped == "x" else ["x", "r"], [last], "mul"),
        ]
    elif inverse == "reciprocal":
        nodes += [
            helper.make_node("Reciprocal", ["s"], ["r"], "recip"),
            helper.make_node("Mul", ["x", "r"], [last], "mul"),
        ]
    else:
        nodes.append(helper.make_node("Div", ["x", "s"], [last], "div"))
    if weight:
        operands = ["q", "w"] if swapped == "weight" else ["w", "q"]
        nodes.append(helper.make_node("Mul", operands, ["y"], "mul_w"))
    graph = helper.make_graph(
        nodes,
        "rms_norm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 32])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


#: name -> (model, whether the session fails; the same at both levels)
CASES: dict[str, tuple[onnx.ModelProto, bool]] = {
    "pow_reciprocal_weight": (rms_norm(), True),
    "square_by_mul": (rms_norm(square="mul"), False),
    "exponent_3": (rms_norm(exponent=3.0), False),
    "div": (rms_norm(inverse="div"), False),
    "no_weight": (rms_norm(weight=False), False),
    "weight_second": (rms_norm(swapped="weight"), False),
}


@pytest.mark.parametrize("name", list(CASES))
def test_ol513_reports_the_chain_exactly_when_the_session_fails(name: str) -> None:
    model, fails = CASES[name]
    found = [d for d in lint(model, eps=["qnn"]).diagnostics if d.code == "OL513"]
    assert [d.location.node_name for d in found] == (["pow"] if fails else [])


def test_the_plan_marks_the_first_node_of_a_chain_inside_one_partition() -> None:
    plan = partitions(rms_norm(), ["qnn"]).plan("exported")
    assert plan is not None
    assert list(plan.finalize_failures) == ["main/pow"]
    part = next(p for p in plan.partitions if "main/pow" in p.nodes)
    assert {"main/pow", "main/mul_w"} <= set(part.nodes)


def test_the_message_names_the_chain() -> None:
    [d] = [d for d in lint(rms_norm(), eps=["qnn"]).diagnostics if d.code == "OL513"]
    assert "Pow -> ReduceMean -> Add -> Sqrt -> Reciprocal -> Mul -> Mul from pow" in d.message


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_finalize_failures_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    real = real_sessions("qnn", sys.executable, {name: m for name, (m, _) in CASES.items()})
    for name, (_, fails) in CASES.items():
        for level in ("disabled", "basic"):
            r = real[f"{name}|{level}"]
            assert (not r.get("ok")) is fails, (name, level, r)
            if fails:
                assert "QNN_COMMON_ERROR_MEM_ALLOC" in str(r.get("error")), r


# -- the TorchScript form: Div(1, Sqrt) instead of Reciprocal -----------------------------
# The held-out corpus's T5 encoder (TorchScript, dims fixed) failed with
# QNN_COMMON_ERROR_MEM_ALLOC at level disabled only: ORT's level-1 graph turns
# Mul(x, Div(1, s)) into Div(x, s), which compiles.

#: name -> (model, whether the session fails at level disabled; level 1 loads)
DIV_ONE: dict[str, tuple[onnx.ModelProto, bool]] = {
    "div_one_weight": (rms_norm(inverse="div_one"), True),
    "div_one_no_weight": (rms_norm(inverse="div_one", weight=False), False),
    # Gemma's TorchScript export, Mul(normed, 1 + weight), loads with its dims fixed
    "div_one_weight_second": (rms_norm(inverse="div_one", swapped="weight"), False),
    "div_one_x_second": (rms_norm(inverse="div_one", swapped="x"), False),
}


@pytest.mark.parametrize("name", list(DIV_ONE))
def test_ol513_reports_the_div_one_chain_exactly_when_the_session_fails(name: str) -> None:
    model, fails = DIV_ONE[name]
    found = [d for d in lint(model, eps=["qnn"]).diagnostics if d.code == "OL513"]
    assert [d.location.node_name for d in found] == (["pow"] if fails else [])
    if fails:
        assert "Sqrt -> Div -> Mul -> Mul from pow" in found[0].message


def test_the_div_one_chain_is_marked_on_the_exported_graph_only() -> None:
    parts = partitions(DIV_ONE["div_one_weight"][0], ["qnn"])
    exported, level1 = parts.plan("exported"), parts.plan("optimized")
    assert exported is not None and list(exported.finalize_failures) == ["main/pow"]
    assert level1 is not None and level1.finalize_failures == {}


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_div_one_chain_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    real = real_sessions("qnn", sys.executable, {name: m for name, (m, _) in DIV_ONE.items()})
    for name, (_, fails) in DIV_ONE.items():
        r = real[f"{name}|disabled"]
        assert (not r.get("ok")) is fails, (name, r)
        if fails:
            assert "QNN_COMMON_ERROR_MEM_ALLOC" in str(r.get("error")), r
        assert real[f"{name}|basic"].get("ok"), (name, real[f"{name}|basic"])


# -- int64 tensors of rank 5 at a partition boundary ------------------------------------
# QNN computes int64 as int32, casting at the partition's boundary; a rank-5 cast fails to
# finalize on the way in (QNN_COMMON_ERROR_MEM_ALLOC) and crashes the process on the way
# out (SIGSEGV; issue #16: the attention-mask computation of dynamo exports whose named
# dims are fixed).


def reshaping(op: str, dtype: int, shape: list[int], out: list[int]) -> onnx.ModelProto:
    """One Unsqueeze or Squeeze (axis -1) from ``shape`` to ``out``."""
    graph = helper.make_graph(
        [helper.make_node(op, ["x", "ax"], ["y"], "reshape")],
        f"{op}_{len(shape)}_{len(out)}",
        [helper.make_tensor_value_info("x", dtype, shape)],
        [helper.make_tensor_value_info("y", dtype, out)],
        [numpy_helper.from_array(np.array([-1], np.int64), "ax")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


I64, I32 = TensorProto.INT64, TensorProto.INT32
#: name -> (model, how the session ends: "crash", "error" or "ok")
BOUNDARY: dict[str, tuple[onnx.ModelProto, str]] = {
    "int64_rank5_out": (reshaping("Unsqueeze", I64, [1, 1, 1, 8], [1, 1, 1, 8, 1]), "crash"),
    "int64_rank5_in": (reshaping("Squeeze", I64, [1, 1, 1, 8, 1], [1, 1, 1, 8]), "error"),
    "int64_rank4_out": (reshaping("Unsqueeze", I64, [1, 1, 8], [1, 1, 8, 1]), "ok"),
    "int32_rank5_out": (reshaping("Unsqueeze", I32, [1, 1, 1, 8], [1, 1, 1, 8, 1]), "ok"),
}


@pytest.mark.parametrize("name", list(BOUNDARY))
def test_ol513_reports_an_int64_rank5_partition_boundary(name: str) -> None:
    model, end = BOUNDARY[name]
    found = [d for d in lint(model, eps=["qnn"]).diagnostics if d.code == "OL513"]
    assert [d.location.node_name for d in found] == ([] if end == "ok" else ["reshape"])
    if found:
        assert "int64, rank 5" in found[0].message


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_int64_rank5_boundaries_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    real = real_sessions("qnn", sys.executable, {n: m for n, (m, _) in BOUNDARY.items()})
    for name, (_, end) in BOUNDARY.items():
        r = real[f"{name}|disabled"]
        if end == "ok":
            assert r.get("ok"), r
        elif end == "error":
            assert "QNN_COMMON_ERROR_MEM_ALLOC" in str(r.get("error")), r
        else:
            assert not r.get("ok") and "QNN_COMMON_ERROR" not in str(r.get("error")), r


def mask_positions(rank5: bool) -> onnx.ModelProto:
    """The dynamo attention-mask pattern reduced: Range(0, Squeeze(Shape(ids)[1:2]), 1),
    unsqueezed to rank 4 (and, with ``rank5``, to rank 5 as the graph output). ORT sizes
    the Range from the squeezed shape element, so QNN takes the Unsqueezes."""
    nodes = [
        helper.make_node("Shape", ["ids"], ["s"], "shape", start=1, end=2),
        helper.make_node("Squeeze", ["s"], ["n"], "squeeze"),
        helper.make_node("Range", ["zero", "n", "one"], ["r"], "range"),
        helper.make_node("Unsqueeze", ["r", "ax012"], ["u"], "unsq4"),
    ]
    out = [1, 1, 1, 8]
    if rank5:
        nodes.append(helper.make_node("Unsqueeze", ["u", "ax"], ["y"], "reshape"))
        out = [1, 1, 1, 8, 1]
    graph = helper.make_graph(
        nodes,
        "mask_positions",
        [helper.make_tensor_value_info("ids", I64, [1, 8])],
        [helper.make_tensor_value_info("y" if rank5 else "u", I64, out)],
        [
            numpy_helper.from_array(np.array(0, np.int64), "zero"),
            numpy_helper.from_array(np.array(1, np.int64), "one"),
            numpy_helper.from_array(np.array([0, 1, 2], np.int64), "ax012"),
            numpy_helper.from_array(np.array([-1], np.int64), "ax"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


@pytest.mark.parametrize("rank5", [True, False])
def test_a_range_sized_by_a_shape_element_is_static(rank5: bool) -> None:
    plan = partitions(mask_positions(rank5), ["qnn"]).plan("exported")
    assert plan is not None
    assert plan.node_ep["main/unsq4"] == QNN  # its input's shape is static: [8]
    assert plan.node_ep["main/range"] != QNN
    assert ("main/reshape" in plan.finalize_failures) is rank5


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_mask_positions_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    models = {"rank5": mask_positions(True), "rank4": mask_positions(False)}
    real = real_sessions("qnn", sys.executable, models)
    assert not real["rank5|disabled"].get("ok"), real["rank5|disabled"]
    r = real["rank4|disabled"]
    assert r.get("ok"), r
    got = agreement.compare(agreement.predict(models["rank4"], "qnn")["disabled"], r, QNN)
    assert got["diffs"] == [], got
