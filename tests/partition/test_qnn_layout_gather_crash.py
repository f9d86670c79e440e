"""ORT's layout pass for QNN HTP aborts the process (a ``std::vector`` index assertion,
SIGABRT) on a Gather of rank-1 data with indices of rank 2 or more, when its data is a
Reshape of what a Conv QNN takes writes (the layout Transpose after the Conv reaching it
through ops it is pushed through) and the Gather feeds a Transpose (issue #16, eleventh
held-out batch: the dynamo exporter writes timm's global average pool as ``aten.as_strided``,
a Gather of the flattened mean with indices ``[1, C, 1, 1]``, and ConvNeXt's and EdgeNeXt's
head permutes it for its LayerNorm; every QNN session of them, float or QDQ, crashed).

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``), both graph levels; the profile's ``partitioning.layout_gather_crash``.
OL513 reports the Gather; the variants that load must not be reported.
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint import lint

from .conftest import real_sessions


def pooled(
    head: str = "conv",
    between: str = "",
    keepdims: int = 1,
    indices: tuple[int, ...] = (1, 8, 1, 1),
    transpose: bool = True,
) -> onnx.ModelProto:
    """x [1, 8, 4, 4] -> Conv (or Relu) -> ReduceMean(-1, -2) -> Reshape [-1] -> Gather(axis
    0, constant ``indices``) -> Transpose; ``between``: a Relu between the Reshape and the
    Gather ("reshape") or between the Gather and the Transpose ("gather")."""
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], "conv")
        if head == "conv"
        else helper.make_node("Relu", ["x"], ["c"], "head"),
        helper.make_node("ReduceMean", ["c", "axes"], ["m"], "mean", keepdims=keepdims),
        helper.make_node("Reshape", ["m", "flat"], ["f"], "flatten"),
    ]
    src = "f"
    if between == "reshape":
        nodes.append(helper.make_node("Relu", ["f"], ["fr"], "relu"))
        src = "fr"
    nodes.append(helper.make_node("Gather", [src, "idx"], ["g"], "as_strided", axis=0))
    out = "g"
    if between == "gather":
        nodes.append(helper.make_node("Relu", ["g"], ["gr"], "relu"))
        out = "gr"
    if transpose:
        perm = [0, 2, 3, 1] if len(indices) == 4 else list(range(len(indices)))[::-1]
        nodes.append(helper.make_node("Transpose", [out], ["t"], "permute", perm=perm))
        out = "t"
    graph = helper.make_graph(
        nodes,
        "pooled",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 4, 4])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)],
        [
            numpy_helper.from_array(np.full((8, 8, 1, 1), 0.1, np.float32), "w"),
            numpy_helper.from_array(np.array([-1, -2], np.int64), "axes"),
            numpy_helper.from_array(np.array([-1], np.int64), "flat"),
            numpy_helper.from_array(np.arange(8, dtype=np.int64).reshape(indices), "idx"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 10
    return model


#: name -> (model, whether QNN's session aborts at both levels)
CASES: dict[str, tuple[onnx.ModelProto, bool]] = {
    "as_strided_pool": (pooled(), True),
    "rank2_indices": (pooled(indices=(1, 8)), True),
    "relu_before_gather": (pooled(between="reshape"), True),
    "relu_after_gather": (pooled(between="gather"), True),
    # no layout op above: nothing is converted to NHWC
    "relu_head": (pooled(head="relu"), False),
    # the reduction drops the spatial dims: the layout Transpose stops there
    "mean_without_keepdims": (pooled(keepdims=0), False),
    "no_transpose": (pooled(transpose=False), False),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_layout_gather_crash_is_predicted(name: str) -> None:
    model, crashes = CASES[name]
    found = [d for d in lint(model, eps=["qnn"]).diagnostics if d.code == "OL513"]
    assert bool(found) is crashes, (name, [d.message for d in found])
    if crashes:
        assert {d.location.node_name for d in found} == {"as_strided"}
        assert "Conv conv" in found[0].message and "permute" in found[0].message


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_layout_gather_crash_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    real = real_sessions("qnn", sys.executable, {name: m for name, (m, _) in CASES.items()})
    for name, (_, crashes) in CASES.items():
        for level in ("disabled", "basic"):
            r = real[f"{name}|{level}"]
            assert (not r.get("ok")) is crashes, (name, level, r)
            if crashes:
                assert r.get("error") == "worker crashed", r
