"""QNN after ORT's layout transform: a Reshape sized by a CPU ``Shape`` of a layout-sensitive
op's output gets a constant shape, and QNN groups its nodes across the Shape.

ORT's transpose optimizer (ort_transpose_optimization.cc, EPAwareHandleReshape, for Reshapes
assigned to QNN) pushes the layout Transpose through a channel-preserving Reshape with static
shapes when the Reshape's output leads to another Transpose (here the one before a second
Conv), and replaces its shape input by a constant; ``Shape(Transpose(x))`` becomes
``Gather(Shape(x), perm)``. HuBERT, WavLM, UniSpeech and the wav2vec2 exports have this in
their feature extractor's group norm (Reshape, InstanceNormalization, Reshape back to the
Shape of the Conv output). The Gather, when nothing reads it and no other QNN node lands in
its group, is a QNN graph with no output: "Failed to finalize QNN graph ...
QNN_COMMON_ERROR_MEM_ALLOC" (OL513). Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0
(QAIRT 2.51 HTP simulator, ``soc_model=60``), optimizations disabled; at the default level
ORT folds the Shape of a static tensor first.
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint import lint
from onnxlint.ep_names import CPU_EP

from .conftest import partitions, real_sessions

QNN = "QNNExecutionProvider"


def layout_reshape_model(after: str, company: bool, rank: int = 3) -> onnx.ModelProto:
    """x -> Conv -> InstanceNormalization -> Reshape(., Shape(conv output)) -> Mul ->
    ``after`` (a second Conv, or a Relu); with ``company``, a CPU Shape of a Relu before the
    first Conv whose Gather (QNN) is a graph output."""
    spatial = [64] if rank == 3 else [12, 12]
    kernel = [3] if rank == 3 else [3, 3]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, *spatial])
    inits = [
        numpy_helper.from_array(np.ones((8, 1, *kernel), np.float32), "w"),
        numpy_helper.from_array(np.ones((8, 8, *kernel), np.float32), "w2"),
        numpy_helper.from_array(np.ones((8,), np.float32), "scale"),
        numpy_helper.from_array(np.zeros((8,), np.float32), "bias"),
        numpy_helper.from_array(np.array(2.0, np.float32), "two"),
        numpy_helper.from_array(np.array(0, np.int64), "first"),
        numpy_helper.from_array(np.array([0], np.int64), "axis0"),
    ]
    nodes = [
        helper.make_node("Relu", ["x"], ["x0"], name="pre"),
        helper.make_node("Conv", ["x0", "w"], ["c"], name="conv"),
        helper.make_node("InstanceNormalization", ["c", "scale", "bias"], ["n"], name="norm"),
        helper.make_node("Shape", ["c"], ["s"], name="shape"),
        helper.make_node("Reshape", ["n", "s"], ["r"], name="reshape"),
        helper.make_node("Mul", ["r", "two"], ["m"], name="mul"),
    ]
    if after == "conv":
        nodes.append(helper.make_node("Conv", ["m", "w2"], ["y"], name="after"))
    else:
        nodes.append(helper.make_node("Relu", ["m"], ["y"], name="after"))
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    if company:
        nodes += [
            helper.make_node("Shape", ["x0"], ["s0"], name="shape0"),
            helper.make_node("Gather", ["s0", "first"], ["g"], name="gather0", axis=0),
            helper.make_node("Unsqueeze", ["g", "axis0"], ["g0"], name="unsqueeze0"),
        ]
        outputs.append(helper.make_tensor_value_info("g0", TensorProto.INT64, [1]))
    graph = helper.make_graph(nodes, "g", [x], outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


#: (after, company, rank) -> (QNN partitions with optimizations disabled, session fails)
CASES = {
    ("conv", True, 3): (2, False),
    ("conv", True, 4): (2, False),
    ("conv", False, 3): (1, True),
    ("conv", False, 4): (1, True),
    ("relu", True, 3): (2, False),
    ("relu", False, 3): (2, False),
}


def _name(case: tuple[str, bool, int]) -> str:
    after, company, rank = case
    return f"{after}-{'company' if company else 'alone'}-{rank}d"


@pytest.mark.parametrize("case", sorted(CASES), ids=_name)
def test_reshape_sized_by_a_layout_shape_on_qnn(case: tuple[str, bool, int]) -> None:
    parts = partitions(layout_reshape_model(*case), ["qnn"])
    plan = parts.plan("exported")
    assert plan is not None
    count, fails = CASES[case]
    assert len(plan.partitions_on(QNN)) == count
    assert plan.node_ep["main/shape"] == CPU_EP
    # with the Reshape fed a constant, it joins the Conv's partition
    merged = case[0] == "conv"
    conv_part = next(p for p in plan.partitions if "main/conv" in p.nodes)
    assert ("main/reshape" in conv_part.nodes) is merged
    assert ("main/reshape" in plan.finalize_failures) is fails
    # the default level folds the Shape of a static tensor: one partition, no failure
    optimized = parts.plan("optimized")
    assert optimized is not None
    assert not optimized.finalize_failures


@pytest.mark.parametrize("case", sorted(CASES), ids=_name)
def test_orphaned_gather_reported(case: tuple[str, bool, int]) -> None:
    found = lint(layout_reshape_model(*case), eps=["qnn"]).diagnostics
    flagged = [d for d in found if d.code == "OL513"]
    assert bool(flagged) is CASES[case][1]
    if flagged:
        assert flagged[0].location.node_name == "reshape"
        assert "shape" in flagged[0].message and "MEM_ALLOC" in flagged[0].message


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_reshape_sized_by_a_layout_shape_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    models = {_name(c): layout_reshape_model(*c) for c in CASES}
    real = real_sessions("qnn", sys.executable, models)
    for case, (count, fails) in CASES.items():
        r = real[f"{_name(case)}|disabled"]
        assert (not r.get("ok")) is fails, (case, r)
        if fails:
            assert "QNN_COMMON_ERROR_MEM_ALLOC" in str(r.get("error")), (case, r)
            continue
        got = [p for p in r["partitions"] if p["ep"] == QNN]
        assert len(got) == count, (case, got)
        by_name = {n["name"]: p["ep"] for p in r["partitions"] for n in p["nodes"]}
        assert by_name["shape"] == CPU_EP
        conv_part = next(p for p in got if any(n["name"] == "conv_token_1" for n in p["nodes"]))
        names = {n["name"] for n in conv_part["nodes"]}
        assert ("reshape" in names) is (case[0] == "conv"), (case, names)
        assert real[f"{_name(case)}|basic"].get("ok"), case
