"""Disagreement classes found by the second held-out batch of real-world models
(benchmarks/realworld/README.md, "Held-out architectures"), each with a small model.

Every class has a prediction test (no EP needed) and, marked ``ort_qnn``, the same
models checked against the real EP. Measured with onnxruntime 1.32.0 +
onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator, ``soc_model=60``).
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint import lint
from onnxlint.ep_names import CPU_EP

from .conftest import check_real, partitions, real_sessions

QNN = "QNNExecutionProvider"

# ---------------------------------------------------------------------------
# Resize: QNN HTP takes every interpolation mode, cubic included (hf-yolos-ts-op16's
# position-embedding interpolation ran on QNN); what it refuses is a Resize whose output
# shape ORT does not know when it partitions: sizes computed at run time, here by an
# Identity that only a default-level session removes.


def resize_model(mode: str, via: str, transform: str = "half_pixel") -> onnx.ModelProto:
    """Relu -> Resize of a [1, 3, 8, 8] input to [1, 3, 16, 16], the target given as
    constant ``sizes``, constant ``scales`` or sizes passed through an Identity."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    # a shape declared on the graph output would tell ORT the Resize's output shape
    shape = None if via == "sizes_identity" else [1, 3, 16, 16]
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="pre")]
    inits = []
    if via == "scales":
        inits.append(numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "sc"))
        inputs = ["r", "", "sc"]
    else:
        sizes = "sz0" if via == "sizes_identity" else "sz"
        inits.append(numpy_helper.from_array(np.array([1, 3, 16, 16], np.int64), sizes))
        if via == "sizes_identity":
            nodes.append(helper.make_node("Identity", ["sz0"], ["sz"], name="ident"))
        inputs = ["r", "", "", "sz"]
    nodes.append(
        helper.make_node(
            "Resize",
            inputs,
            ["y"],
            name="resize",
            mode=mode,
            coordinate_transformation_mode=transform,
        )
    )
    graph = helper.make_graph(nodes, "g", [x], [y], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)], ir_version=8)


#: (mode, target, transform) -> Resize on QNN at (optimizations disabled, level 1)
RESIZE_CASES = {
    ("cubic", "sizes", "half_pixel"): (True, True),
    ("cubic", "scales", "half_pixel"): (True, True),
    ("cubic", "sizes", "align_corners"): (True, True),
    ("cubic", "sizes", "asymmetric"): (True, True),
    ("cubic", "sizes", "pytorch_half_pixel"): (True, True),
    ("cubic", "sizes_identity", "half_pixel"): (False, True),
    ("linear", "sizes_identity", "half_pixel"): (False, True),
}


@pytest.mark.parametrize("case", sorted(RESIZE_CASES), ids="-".join)
def test_resize_modes_on_qnn(case: tuple[str, str, str]) -> None:
    parts = partitions(resize_model(*case), ["qnn"])
    for level, expected in zip(("exported", "optimized"), RESIZE_CASES[case], strict=True):
        plan = parts.plan(level)
        assert plan is not None
        assert plan.node_ep["main/resize"] == (QNN if expected else CPU_EP), (case, level)


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_resize_modes_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    check_real("qnn", sys.executable, {"-".join(c): resize_model(*c) for c in RESIZE_CASES})


# ---------------------------------------------------------------------------
# Empty Slice: QNN cannot add a Slice whose output has a zero-sized dimension ("Failed to
# add node"): hf-phi3-ts-op11 with its dims fixed slices q[..., rotary_dim:] where the
# rotary dimension is the whole head, and concatenates the empty rest back. The Concat
# reading the empty tensor from the CPU stays on QNN.


def slice_model(start: int) -> onnx.ModelProto:
    """Relu -> Slice(axis 2, start:) -> Concat with the Relu's output, on [1, 8, 16]."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 32 - start])
    inits = [
        numpy_helper.from_array(np.array([start], np.int64), "starts"),
        numpy_helper.from_array(np.array([100], np.int64), "ends"),
        numpy_helper.from_array(np.array([2], np.int64), "axes"),
    ]
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="pre"),
        helper.make_node("Slice", ["r", "starts", "ends", "axes"], ["s"], name="slice"),
        helper.make_node("Concat", ["r", "s"], ["y"], name="concat", axis=2),
    ]
    graph = helper.make_graph(nodes, "g", [x], [y], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize(("start", "on_qnn"), [(16, False), (8, True)])
def test_empty_slice_on_qnn(start: int, on_qnn: bool) -> None:
    parts = partitions(slice_model(start), ["qnn"])
    for level in ("exported", "optimized"):
        plan = parts.plan(level)
        assert plan is not None
        assert plan.node_ep["main/slice"] == (QNN if on_qnn else CPU_EP), (start, level)
        assert plan.node_ep["main/concat"] == QNN


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_empty_slice_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    check_real("qnn", sys.executable, {f"slice_{s}": slice_model(s) for s in (16, 8)})


# ---------------------------------------------------------------------------
# An int64 Transpose at both boundaries of a QNN partition: the held-out Mixtral (and
# Qwen2-MoE with its dims fixed) transposes its int64 expert mask (OneHot on the CPU) for
# a CPU Gather, and the session fails with "Failed to compose Qnn graph" (the Cast back
# to int64 after the Transpose cannot be added). OL513 says so; the same Transpose after
# an Add in the partition, or an int64 Add alone, loads (an Identity before it does not
# help a default-level session: ORT removes it).


def int64_transpose_model(middle: str) -> onnx.ModelProto:
    """OneHot (CPU) -> ``middle`` -> NonZero (CPU), on an int64 [4, 2] input."""
    x = helper.make_tensor_value_info("x", TensorProto.INT64, [4, 2])
    y = helper.make_tensor_value_info("y", TensorProto.INT64, [3, "nonzero"])
    inits = [
        numpy_helper.from_array(np.array(8, np.int64), "depth"),
        numpy_helper.from_array(np.array([0, 1], np.int64), "values"),
    ]
    nodes = [helper.make_node("OneHot", ["x", "depth", "values"], ["oh"], name="onehot")]
    if middle in ("transpose", "transpose_shape"):
        nodes.append(helper.make_node("Transpose", ["oh"], ["t"], name="mid", perm=[2, 1, 0]))
    elif middle == "add_transpose":
        nodes.append(helper.make_node("Add", ["oh", "oh"], ["a"], name="add"))
        nodes.append(helper.make_node("Transpose", ["a"], ["t"], name="mid", perm=[2, 1, 0]))
    else:
        nodes.append(helper.make_node("Add", ["oh", "oh"], ["t"], name="mid"))
    if middle == "transpose_shape":
        # the tensor leaves only for a Shape: ORT rewrites Shape(Transpose(x)) as a Gather
        # of Shape(x), and the Transpose's output is not read outside the partition
        nodes.append(helper.make_node("Shape", ["t"], ["s"], name="shape"))
        nodes.append(helper.make_node("Add", ["t", "t"], ["d"], name="inside"))
        nodes.append(helper.make_node("Concat", ["s", "s"], ["c"], name="concat", axis=0))
        nodes.append(helper.make_node("NonZero", ["c"], ["y"], name="nz"))
        y = helper.make_tensor_value_info("y", TensorProto.INT64, [1, "nonzero"])
        outputs = [y, helper.make_tensor_value_info("d", TensorProto.INT64, [8, 2, 4])]
    else:
        nodes.append(helper.make_node("NonZero", ["t"], ["y"], name="nz"))
        outputs = [y]
    graph = helper.make_graph(nodes, "g", [x], outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


#: middle -> whether the QNN session fails
INT64_TRANSPOSE_CASES = {
    "transpose": True,
    "add_transpose": False,
    "add": False,
    "transpose_shape": False,
}


@pytest.mark.parametrize(("middle", "fails"), sorted(INT64_TRANSPOSE_CASES.items()))
def test_int64_transpose_at_both_boundaries_fails_on_qnn(middle: str, fails: bool) -> None:
    found = [
        d for d in lint(int64_transpose_model(middle), eps=["qnn"]).diagnostics if d.code == "OL513"
    ]
    assert bool(found) is fails
    if fails:
        assert found[0].location.node_name == "mid"


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_int64_transpose_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    real = real_sessions(
        "qnn",
        sys.executable,
        {m: int64_transpose_model(m) for m in INT64_TRANSPOSE_CASES},
    )
    for middle, fails in INT64_TRANSPOSE_CASES.items():
        for level in ("disabled", "basic"):
            r = real[f"{middle}|{level}"]
            assert (not r.get("ok")) is fails, (middle, level, r)
            if fails:
                assert "Failed to compose Qnn graph" in str(r.get("error"))
