"""ORT inlines an ONNX function op that no EP claims (Mish, GroupNormalization of opsets
18 and 21) only after every EP has chosen its nodes, and then lets each EP choose again
among the nodes of its body, whose groups are partitions of their own
(``LevelGraph.inlined_late``, ``partition._late_pass``). OpenVINO's second choice also
takes nodes already on the CPU, and ORT refuses such a cluster whole
(``late_pass_takes_assigned``). ORT's level-1 graph, from a CPU session, holds the body
already; it is folded back into the op (``collapse_ort_inlined``), so that QNN, which
takes GroupNormalization itself, gets the op at both levels.

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``) and onnxruntime-openvino 1.24.1 (CPU), both graph levels.
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint.ep_names import CPU_EP

from .conftest import check_real, openvino_runner, partitions

QNN = "QNNExecutionProvider"
OV = "OpenVINOExecutionProvider"
F = TensorProto.FLOAT


def between_relus_and_sigmoids(op: str, opset: int, groups: int = 4) -> onnx.ModelProto:
    """Relu, Relu -> ``op`` (``fn``) -> Sigmoid, Sigmoid on a [1, 8, 30] tensor;
    GroupNormalization in ``groups`` groups (its scale and bias: per group before opset
    21, per channel from 21)."""
    per = 8 if opset >= 21 else groups
    inits = [
        numpy_helper.from_array(np.ones(per, np.float32), "gs"),
        numpy_helper.from_array(np.zeros(per, np.float32), "gb"),
    ]
    gn = op == "GroupNormalization"
    fn = helper.make_node(op, ["b", "gs", "gb"] if gn else ["b"], ["m"], "fn")
    if gn:
        fn.attribute.append(helper.make_attribute("num_groups", groups))
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], "relu1"),
        helper.make_node("Relu", ["a"], ["b"], "relu2"),
        fn,
        helper.make_node("Sigmoid", ["m"], ["s"], "sig1"),
        helper.make_node("Sigmoid", ["s"], ["y"], "sig2"),
    ]
    return _model(nodes, inits if gn else [], [1, 8, 30], opset, "abms")


def after_conv(relu_first: bool) -> onnx.ModelProto:
    """Unsqueeze -> Conv (1-D) -> [Relu] -> GroupNormalization-21 -> Sigmoid, as the
    feature extractor of wav2vec2's dynamo export."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(np.array([1], np.int64), "ax"),
        numpy_helper.from_array(rng.standard_normal((8, 1, 5)).astype(np.float32), "w"),
        numpy_helper.from_array(np.ones(8, np.float32), "gs"),
        numpy_helper.from_array(np.zeros(8, np.float32), "gb"),
    ]
    nodes = [
        helper.make_node("Unsqueeze", ["x1", "ax"], ["u"], "unsq"),
        helper.make_node("Conv", ["u", "w"], ["c"], "conv", kernel_shape=[5], strides=[2]),
    ]
    src = "c"
    if relu_first:
        nodes.append(helper.make_node("Relu", ["c"], ["cr"], "relu_c"))
        src = "cr"
    nodes += [
        helper.make_node("GroupNormalization", [src, "gs", "gb"], ["g"], "gn", num_groups=8),
        helper.make_node("Sigmoid", ["g"], ["y"], "act"),
    ]
    graph = helper.make_graph(
        nodes,
        "after_conv",
        [helper.make_tensor_value_info("x1", F, [1, 64])],
        [helper.make_tensor_value_info("y", F, [1, 8, 30])],
        inits,
        value_info=[helper.make_tensor_value_info("u", F, [1, 1, 64])]
        + [helper.make_tensor_value_info(v, F, [1, 8, 30]) for v in ("c", "cr", "g")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    return model


def with_local_swish() -> onnx.ModelProto:
    """Relu -> ``fn`` (a call of the model-local function local.Swish: Sigmoid, Mul)
    -> Sigmoid, on a [1, 8, 30] tensor."""
    body = [
        helper.make_node("Sigmoid", ["i"], ["s"]),
        helper.make_node("Mul", ["i", "s"], ["o"]),
    ]
    swish = helper.make_function(
        "local", "Swish", ["i"], ["o"], body, [helper.make_opsetid("", 18)]
    )
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], "relu"),
        helper.make_node("Swish", ["a"], ["m"], "fn", domain="local"),
        helper.make_node("Sigmoid", ["m"], ["y"], "sig"),
    ]
    graph = helper.make_graph(
        nodes,
        "local",
        [helper.make_tensor_value_info("x", F, [1, 8, 30])],
        [helper.make_tensor_value_info("y", F, [1, 8, 30])],
    )
    opsets = [helper.make_opsetid("", 18), helper.make_opsetid("local", 1)]
    model = helper.make_model(graph, opset_imports=opsets, functions=[swish], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    return model


def _model(
    nodes: list[onnx.NodeProto],
    inits: list[onnx.TensorProto],
    shape: list[int],
    opset: int,
    values: str,
) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "late",
        [helper.make_tensor_value_info("x", F, shape)],
        [helper.make_tensor_value_info("y", F, shape)],
        inits,
        value_info=[helper.make_tensor_value_info(v, F, shape) for v in values],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    if opset >= 21 or all(n.op_type != "GroupNormalization" for n in nodes):
        # onnx's checker refuses GroupNormalization-18 (deprecated by 21); ORT runs it
        onnx.checker.check_model(model, full_check=True)
    return model


def _parts(model: onnx.ModelProto, ep: str, level: str) -> list[tuple[str, list[str]]]:
    plan = partitions(model, [ep]).plan(level)
    assert plan is not None
    return [(p.ep, p.nodes) for p in plan.partitions if p.ep != CPU_EP]


@pytest.mark.parametrize("level", ["exported", "optimized"])
@pytest.mark.parametrize("ep", ["qnn", "openvino"])
def test_the_body_of_an_unclaimed_function_op_is_a_partition_of_its_own(
    ep: str, level: str
) -> None:
    parts = [nodes for _, nodes in _parts(between_relus_and_sigmoids("Mish", 18), ep, level)]
    assert len(parts) == 3
    assert ["main/relu1", "main/relu2"] in parts and ["main/sig1", "main/sig2"] in parts
    body = next(p for p in parts if p[0].startswith('main/"fn/'))
    assert all(p.startswith('main/"fn/') for p in body) and len(body) == 3


@pytest.mark.parametrize("level", ["exported", "optimized"])
def test_qnn_takes_group_normalization_itself_at_both_levels(level: str) -> None:
    parts = _parts(between_relus_and_sigmoids("GroupNormalization", 21), "qnn", level)
    assert len(parts) == 1 and "main/fn" in parts[0][1]


@pytest.mark.parametrize("level", ["exported", "optimized"])
def test_openvino_refuses_a_late_cluster_that_holds_a_cpu_node(level: str) -> None:
    plan = partitions(after_conv(relu_first=False), ["openvino"]).plan(level)
    assert plan is not None
    # the Unsqueeze/Conv cluster is dropped in the first pass (the Conv's output is read
    # outside it); the GroupNormalization body clusters with them in the second, so ORT
    # refuses it: only the Sigmoid runs on OpenVINO
    assert [p.nodes for p in plan.partitions if p.ep == OV] == [["main/act"]]
    body = [p for p in plan.node_ep if p.startswith('main/"gn/')]
    assert body and all(plan.node_ep[p] == CPU_EP for p in body)
    assert "which already runs on CPU" in plan.released[body[0]]
    # with a Relu between them the first cluster is kept, and so is the body's
    relu = partitions(after_conv(relu_first=True), ["openvino"]).plan(level)
    assert relu is not None
    assert all(ep == OV for ep in relu.node_ep.values())


@pytest.mark.parametrize(
    ("opset", "groups", "claimed"), [(21, 4, True), (18, 4, False), (18, 8, True)]
)
def test_qnn_takes_group_normalization_with_a_scale_per_channel(
    opset: int, groups: int, claimed: bool
) -> None:
    plan = partitions(between_relus_and_sigmoids("GroupNormalization", opset, groups), ["qnn"])
    exported = plan.plan("exported")
    assert exported is not None
    assert ("main/fn" in exported.node_ep) == claimed
    if claimed:
        assert exported.node_ep["main/fn"] == QNN
    else:  # expanded, and ORT inlines it after QNN's first pass
        assert exported.graph is not None and exported.graph.inlined_late


@pytest.mark.parametrize("level", ["exported", "optimized"])
def test_a_model_local_function_stays_inlined_at_both_levels(level: str) -> None:
    # ORT inlines a call of a model-local function before any EP chooses (its
    # level-1 graph holds the body, as for a late-inlined op): not folded back
    plan = partitions(with_local_swish(), ["qnn"]).plan(level)
    assert plan is not None
    assert "main/fn" not in plan.node_ep and len(plan.node_ep) == 4
    assert set(plan.node_ep.values()) == {QNN}


CASES = {
    "local_swish": with_local_swish(),
    "mish": between_relus_and_sigmoids("Mish", 18),
    "gn18": between_relus_and_sigmoids("GroupNormalization", 18),
    "gn21": between_relus_and_sigmoids("GroupNormalization", 21),
    "gn18_per_channel": between_relus_and_sigmoids("GroupNormalization", 18, groups=8),
}


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_late_inlining_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    check_real("qnn", sys.executable, CASES)


@pytest.mark.slow
@pytest.mark.ort_openvino
def test_late_inlining_on_real_openvino() -> None:
    models = {
        **CASES,
        "after_conv": after_conv(relu_first=False),
        "after_relu": after_conv(relu_first=True),
    }
    check_real("openvino", str(openvino_runner()), models)
