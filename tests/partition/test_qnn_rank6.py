"""QNN HTP refuses every node with a tensor of rank 6 ("Failed to add node"), except a
Reshape -> Transpose -> Reshape through rank 6 that its Rank6ToRank5Fusion rewrites in
rank 5: the rank-6 tensors share a dim of 1 at one index, which the perm keeps in place
(the Swin window partition with a batch of 1). Seen on the held-out Hiera export, whose
mask-unit attention reshapes to rank 6, transposes, splits and squeezes (16 nodes left to
the CPU at ``qnn/default``, predicted on HTP).

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``), both graph levels.
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint.ep_names import CPU_EP

from .conftest import check_real, partitions

QNN = "QNNExecutionProvider"
RANK6 = [1, 2, 2, 3, 2, 4]


def _i64(name: str, values: list[int]) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(values, np.int64), name)


def _model(
    nodes: list[onnx.NodeProto],
    name: str,
    inits: list[onnx.TensorProto],
    x: list[int] | None = None,
    y: list[int] | None = None,
) -> onnx.ModelProto:
    """A checked IR-9, opset-17 model of ``nodes`` from float ``x`` to float ``y`` ([1, 96])."""
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x or [1, 96])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y or [1, 96])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    onnx.checker.check_model(model, full_check=True)
    return model


def chain_model(middle: str) -> onnx.ModelProto:
    """Relu -> Reshape to rank 6 -> ``middle`` -> Reshape to [1, -1] -> Sigmoid.

    ``middle``: ``keep`` (a Transpose keeping the unit dim 0: the fused chain), ``move``
    (a Transpose moving it: no dim of 1 at the same index before and after), ``add`` (an
    Add of a rank-6 constant) or ``softmax``.
    """
    inits = [_i64("s6", RANK6), _i64("flat", [1, -1])]
    if middle == "keep":
        mid = helper.make_node("Transpose", ["r6"], ["o6"], "mid", perm=[0, 1, 2, 3, 5, 4])
    elif middle == "move":
        mid = helper.make_node("Transpose", ["r6"], ["o6"], "mid", perm=[1, 0, 2, 3, 5, 4])
    elif middle == "add":
        inits.append(numpy_helper.from_array(np.ones(RANK6, np.float32), "w6"))
        mid = helper.make_node("Add", ["r6", "w6"], ["o6"], "mid")
    else:
        mid = helper.make_node("Softmax", ["r6"], ["o6"], "mid", axis=-1)
    nodes = [
        helper.make_node("Relu", ["x"], ["x0"], "relu_in"),
        helper.make_node("Reshape", ["x0", "s6"], ["r6"], "reshape6"),
        mid,
        helper.make_node("Reshape", ["o6", "flat"], ["f"], "flatten"),
        helper.make_node("Sigmoid", ["f"], ["y"], "sig_out"),
    ]
    return _model(nodes, f"rank6_{middle}", inits)


def relu_model(shape: list[int]) -> onnx.ModelProto:
    """Relu -> Reshape [1, 96] to ``shape`` -> Relu -> Reshape to [1, -1] -> Sigmoid."""
    nodes = [
        helper.make_node("Relu", ["x"], ["x0"], "relu_in"),
        helper.make_node("Reshape", ["x0", "s"], ["r"], "reshape_up"),
        helper.make_node("Relu", ["r"], ["o"], "mid"),
        helper.make_node("Reshape", ["o", "flat"], ["f"], "flatten"),
        helper.make_node("Sigmoid", ["f"], ["y"], "sig_out"),
    ]
    return _model(nodes, f"relu_rank{len(shape)}", [_i64("s", shape), _i64("flat", [1, -1])])


RANKED = {5: [1, 2, 4, 3, 4], 6: RANK6, 7: [1, 2, 2, 3, 2, 2, 2]}


def qdq_chain_model(perm: list[int]) -> onnx.ModelProto:
    """The chain of :func:`chain_model` with a Transpose of ``perm``, quantized: uint8
    QuantizeLinear -> DequantizeLinear pairs between the nodes (QDQ node units)."""
    inits = [
        _i64("s6", RANK6),
        _i64("flat", [1, -1]),
        numpy_helper.from_array(np.array(0.05, np.float32), "scale"),
        numpy_helper.from_array(np.array(128, np.uint8), "zp"),
    ]
    nodes = [helper.make_node("Relu", ["x"], ["t0"], "relu_in")]
    steps = [
        ("Reshape", ["s6"], {}),
        ("Transpose", [], {"perm": perm}),
        ("Reshape", ["flat"], {}),
        ("Sigmoid", [], {}),
    ]
    names = ["reshape6", "mid", "flatten", "sig_out"]
    prev = "t0"
    for i, ((op, extra, attrs), name) in enumerate(zip(steps, names, strict=True)):
        nodes.append(helper.make_node("QuantizeLinear", [prev, "scale", "zp"], [f"q{i}"], f"q{i}"))
        nodes.append(
            helper.make_node("DequantizeLinear", [f"q{i}", "scale", "zp"], [f"d{i}"], f"dq{i}")
        )
        out = "y" if op == "Sigmoid" else f"t{i + 1}"
        nodes.append(helper.make_node(op, [f"d{i}", *extra], [out], name, **attrs))
        prev = out
    return _model(nodes, "rank6_qdq", inits)


GATHER_INDICES = {
    "row": [[0, 1], [2, 3]],
    "col": [[0, 2], [1, 3]],
    "shuffled": [[1, 0], [2, 3]],
}


def gather_unfold_model(indices: str, perm: list[int]) -> onnx.ModelProto:
    """Relu -> Reshape [1, 96] to [1, 4, 2, 3, 4] -> Gather on axis 4 with 2x2 ``indices``
    (rank 6) -> Transpose of ``perm`` -> Reshape to [1, -1] -> Sigmoid, as MobileViT v2's
    dynamo export unfolds its patches."""
    nodes = [
        helper.make_node("Relu", ["x"], ["x0"], "relu_in"),
        helper.make_node("Reshape", ["x0", "s5"], ["r5"], "reshape5"),
        helper.make_node("Gather", ["r5", "idx"], ["g6"], "gather6", axis=4),
        helper.make_node("Transpose", ["g6"], ["t6"], "transpose6", perm=perm),
        helper.make_node("Reshape", ["t6", "flat"], ["f"], "flatten"),
        helper.make_node("Sigmoid", ["f"], ["y"], "sig_out"),
    ]
    inits = [
        _i64("s5", [1, 4, 2, 3, 4]),
        _i64("idx", GATHER_INDICES[indices]),
        _i64("flat", [1, -1]),
    ]
    return _model(nodes, f"gather_unfold_{indices}", inits)


UNFOLDS = {
    "row": ("row", [0, 1, 2, 4, 3, 5]),
    "col": ("col", [0, 1, 2, 5, 4, 3]),
    "shuffled": ("shuffled", [0, 1, 2, 4, 3, 5]),
    "perm_moves_batch": ("row", [1, 0, 2, 4, 3, 5]),
}


def hiera_model() -> onnx.ModelProto:
    """Hiera's attention: Reshape [1, 256, 24] to [1, 16, 16, 3, 1, 8] -> Transpose ->
    Split in three -> Squeeze each to rank 5 -> Add, Mul -> Reshape to rank 3."""
    nodes = [
        helper.make_node("Relu", ["x"], ["x0"], "relu_in"),
        helper.make_node("Reshape", ["x0", "s6"], ["r6"], "reshape6"),
        helper.make_node("Transpose", ["r6"], ["t6"], "transpose6", perm=[3, 0, 4, 2, 1, 5]),
        helper.make_node("Split", ["t6", "sp"], ["a", "b", "c"], "split6", axis=0),
        helper.make_node("Squeeze", ["a", "ax0"], ["qa"], "squeeze_a"),
        helper.make_node("Squeeze", ["b", "ax0"], ["qb"], "squeeze_b"),
        helper.make_node("Squeeze", ["c", "ax0"], ["qc"], "squeeze_c"),
        helper.make_node("Add", ["qa", "qb"], ["ab"], "add5"),
        helper.make_node("Mul", ["ab", "qc"], ["abc"], "mul5"),
        helper.make_node("Reshape", ["abc", "s3"], ["y0"], "reshape3"),
        helper.make_node("Relu", ["y0"], ["y"], "relu_out"),
    ]
    inits = [
        _i64("s6", [1, 16, 16, 3, 1, 8]),
        _i64("sp", [1, 1, 1]),
        _i64("ax0", [0]),
        _i64("s3", [1, 256, 8]),
    ]
    return _model(nodes, "hiera_attention", inits, x=[1, 256, 24], y=[1, 256, 8])


@pytest.mark.parametrize("middle", ["keep", "move", "add", "softmax"])
def test_rank6_nodes_stay_on_cpu_unless_fused(middle: str) -> None:
    parts = partitions(chain_model(middle), ["qnn"])
    fused = middle == "keep"
    for level in ("exported", "optimized"):
        plan = parts.plan(level)
        assert plan is not None
        for node in ("reshape6", "mid", "flatten"):
            assert plan.node_ep[f"main/{node}"] == (QNN if fused else CPU_EP), (level, node)
        assert plan.node_ep["main/relu_in"] == QNN
        assert plan.node_ep["main/sig_out"] == QNN


@pytest.mark.parametrize("rank", sorted(RANKED))
def test_a_relu_runs_on_htp_up_to_rank_5(rank: int) -> None:
    parts = partitions(relu_model(RANKED[rank]), ["qnn"])
    for level in ("exported", "optimized"):
        plan = parts.plan(level)
        assert plan is not None
        for node in ("reshape_up", "mid", "flatten"):
            assert plan.node_ep[f"main/{node}"] == (QNN if rank <= 5 else CPU_EP), (level, node)


@pytest.mark.parametrize("keep", [True, False], ids=["keep", "move"])
def test_quantized_rank6_chain_is_fused_through_its_qdq_pairs(keep: bool) -> None:
    perm = [0, 1, 2, 3, 5, 4] if keep else [1, 0, 2, 3, 5, 4]
    parts = partitions(qdq_chain_model(perm), ["qnn"])
    for level in ("exported", "optimized"):
        plan = parts.plan(level)
        assert plan is not None
        for node in ("reshape6", "q1", "dq1", "mid", "q2", "dq2", "flatten"):
            assert plan.node_ep[f"main/{node}"] == (QNN if keep else CPU_EP), (level, node)


@pytest.mark.parametrize("case", sorted(UNFOLDS))
def test_gather_unfold_is_fused_with_its_transpose_and_reshape(case: str) -> None:
    parts = partitions(gather_unfold_model(*UNFOLDS[case]), ["qnn"])
    fused = case in ("row", "col")
    for level in ("exported", "optimized"):
        plan = parts.plan(level)
        assert plan is not None
        for node in ("gather6", "transpose6", "flatten"):
            assert plan.node_ep[f"main/{node}"] == (QNN if fused else CPU_EP), (level, node)
        assert plan.node_ep["main/reshape5"] == QNN


def test_hiera_attention_splits_on_cpu() -> None:
    parts = partitions(hiera_model(), ["qnn"])
    plan = parts.plan("exported")
    assert plan is not None
    on_cpu = {p.rsplit("/", 1)[-1] for p, ep in plan.node_ep.items() if ep == CPU_EP}
    assert on_cpu == {
        "reshape6", "transpose6", "split6", "squeeze_a", "squeeze_b", "squeeze_c",
    }  # fmt: skip
    assert len(plan.partitions_on(QNN)) == 2


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_rank6_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    models = {f"rank6_{m}": chain_model(m) for m in ("keep", "move", "add", "softmax")}
    models["hiera_attention"] = hiera_model()
    models.update({f"relu_rank{r}": relu_model(shape) for r, shape in RANKED.items()})
    models.update({f"gather_unfold_{c}": gather_unfold_model(*UNFOLDS[c]) for c in UNFOLDS})
    models["rank6_qdq_keep"] = qdq_chain_model([0, 1, 2, 3, 5, 4])
    models["rank6_qdq_move"] = qdq_chain_model([1, 0, 2, 3, 5, 4])
    check_real("qnn", sys.executable, models)
