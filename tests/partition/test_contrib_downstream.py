"""What follows an ORT contrib operator has the types and shapes ORT resolves
(``analyses.contrib_types``): QNN takes the nodes after a SkipLayerNormalization, a
MatMulNBits or a QLinearAdd (before, their inputs had no shape and QNN was predicted to
refuse them: "QNN needs every tensor shape to be static"), and the ai.onnx
SimplifiedLayerNormalization (first output only) and com.microsoft Gelu themselves; OpenVINO
fails to compile a
SkipLayerNormalization that writes more than its first output (measured, both levels),
a failure that was flagged only by accident before (OL509, an input of unknown rank)."""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

from onnxlint.analyses.assignment import Assignment

from .conftest import check_real, context, openvino_runner, qnn_cpu_nodes, real_sessions

MS = "com.microsoft"


def _init(name: str, shape: list[int], dtype: type = np.float32) -> onnx.TensorProto:
    rng = np.random.default_rng(0)
    if np.issubdtype(dtype, np.integer):
        return numpy_helper.from_array(rng.integers(0, 16, size=shape).astype(dtype), name)
    return numpy_helper.from_array(rng.standard_normal(shape).astype(dtype), name)


def _model(
    nodes: list[onnx.NodeProto],
    inputs: list[onnx.ValueInfoProto],
    outputs: list[str],
    inits: list[onnx.TensorProto],
) -> onnx.ModelProto:
    for n in nodes:
        n.name = n.name or n.output[0]
    graph = h.make_graph(
        nodes,
        "g",
        inputs,
        [h.make_value_info(o, onnx.TypeProto()) for o in outputs],
        initializer=inits,
    )
    # graph outputs declared without a type: ORT and onnxlint give them the inferred one
    for o in graph.output:
        o.type.tensor_type.elem_type = T.FLOAT
    model = h.make_model(
        graph, opset_imports=[h.make_opsetid("", 17), h.make_opsetid(MS, 1)], ir_version=8
    )
    return model


def skip_layer_norm(outputs: int = 1) -> onnx.ModelProto:
    """SkipLayerNormalization, then MatMul, Add and Relu on its output."""
    sln_out = ["n", "", "", "sum"][:outputs] if outputs != 3 else ["n", "mean", "inv"]
    nodes = [
        h.make_node(
            "SkipLayerNormalization",
            ["x", "skip", "gamma", "beta"],
            sln_out,
            domain=MS,
            epsilon=1e-5,
        ),
        h.make_node("MatMul", ["n", "w"], ["m"]),
        h.make_node("Add", ["m", "bias"], ["a"]),
        h.make_node("Relu", ["a"], ["y"]),
    ]
    outputs_ = ["y"]
    if outputs == 4:
        nodes.append(h.make_node("Add", ["sum", "y"], ["y2"]))
        outputs_ = ["y2"]
    return _model(
        nodes,
        [
            h.make_tensor_value_info("x", T.FLOAT, [1, 4, 8]),
            h.make_tensor_value_info("skip", T.FLOAT, [1, 4, 8]),
        ],
        outputs_,
        [_init("gamma", [8]), _init("beta", [8]), _init("w", [8, 8]), _init("bias", [8])],
    )


def matmul_nbits() -> onnx.ModelProto:
    """MatMulNBits (4-bit weights, block 16), then Add and Relu."""
    return _model(
        [
            h.make_node(
                "MatMulNBits",
                ["x", "qw", "qs"],
                ["m"],
                domain=MS,
                K=16,
                N=8,
                bits=4,
                block_size=16,
            ),
            h.make_node("Add", ["m", "bias"], ["a"]),
            h.make_node("Relu", ["a"], ["y"]),
        ],
        [h.make_tensor_value_info("x", T.FLOAT, [1, 4, 16])],
        ["y"],
        [_init("qw", [8, 1, 8], np.uint8), _init("qs", [8]), _init("bias", [8])],
    )


def qlinear_add() -> onnx.ModelProto:
    """QuantizeLinear, QLinearAdd (com.microsoft), DequantizeLinear, then Relu."""
    scale = numpy_helper.from_array(np.array(0.05, np.float32), "s")
    zero = numpy_helper.from_array(np.array(128, np.uint8), "z")
    return _model(
        [
            h.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
            h.make_node("QLinearAdd", ["q", "s", "z", "qb", "s", "z", "s", "z"], ["qa"], domain=MS),
            h.make_node("DequantizeLinear", ["qa", "s", "z"], ["d"]),
            h.make_node("Transpose", ["d"], ["y"], perm=[0, 2, 1]),
        ],
        [h.make_tensor_value_info("x", T.FLOAT, [1, 4, 8])],
        ["y"],
        [scale, zero, _init("qb", [1, 4, 8], np.uint8)],
    )


def after_relu(
    node: onnx.NodeProto,
    inits: list[onnx.TensorProto],
    shape: list[int],
    contrib: bool = True,
) -> onnx.ModelProto:
    """Relu, ``node`` (reading the Relu's ``x``, writing ``n``), Relu."""
    nodes = [h.make_node("Relu", ["x0"], ["x"]), node, h.make_node("Relu", ["n"], ["y"])]
    model = _model(nodes, [h.make_tensor_value_info("x0", T.FLOAT, shape)], ["y"], inits)
    if not contrib:
        del model.opset_import[1]
    return model


def simplified_layer_norm(outputs: int = 1, rank: int = 3) -> onnx.ModelProto:
    """ai.onnx SimplifiedLayerNormalization (ORT registers it there; its transformer
    optimizer writes it), with or without its inv_std_var output."""
    node = h.make_node(
        "SimplifiedLayerNormalization",
        ["x", "gamma"],
        ["n", "inv"][:outputs],
        axis=-1,
        epsilon=1e-6,
    )
    return after_relu(node, [_init("gamma", [8])], [1, 4, 8][-rank:], contrib=False)


def contrib_gelu() -> onnx.ModelProto:
    return after_relu(h.make_node("Gelu", ["x"], ["n"], domain=MS), [], [1, 4, 8])


QNN_CASES = {
    "skip_layer_norm": skip_layer_norm(),
    "matmul_nbits": matmul_nbits(),
    "qlinear_add": qlinear_add(),
    "simplified_layer_norm": simplified_layer_norm(),
    "simplified_layer_norm_rank2": simplified_layer_norm(rank=2),
    "simplified_layer_norm_inv": simplified_layer_norm(outputs=2),
    "contrib_gelu": contrib_gelu(),
}
#: the nodes after the contrib op (named after their outputs), which QNN takes
DOWNSTREAM = {
    "skip_layer_norm": ("m", "a", "y"),
    "matmul_nbits": ("a", "y"),
    "qlinear_add": ("y",),
}


#: QNN picks a node by its op type: ai.onnx SimplifiedLayerNormalization and com.microsoft
#: Gelu are taken (qnn-builder-domains), the former with its first output only: asked for
#: inv_std_var too it stays on the CPU (qnn-simplified-layernorm-outputs)
CONTRIB_ON_QNN = {
    "simplified_layer_norm": True,
    "simplified_layer_norm_rank2": True,
    "simplified_layer_norm_inv": False,
    "contrib_gelu": True,
}


@pytest.mark.parametrize("name", sorted(CONTRIB_ON_QNN))
def test_qnn_takes_contrib_ops_by_op_type(name: str) -> None:
    on_cpu = qnn_cpu_nodes(QNN_CASES[name])
    assert ("main/n" not in on_cpu) is CONTRIB_ON_QNN[name], sorted(on_cpu)


@pytest.mark.parametrize("name", sorted(DOWNSTREAM))
def test_qnn_takes_what_follows_a_contrib_op(name: str) -> None:
    on_cpu = qnn_cpu_nodes(QNN_CASES[name])
    assert on_cpu.isdisjoint(f"main/{n}" for n in DOWNSTREAM[name]), (name, sorted(on_cpu))


def test_downstream_types_are_known() -> None:
    lg = context(skip_layer_norm(), ["qnn"]).analysis(Assignment).exported
    graph = lg.graph
    main = graph.index.main
    assert graph.value_type(main, "m").shape == (1, 4, 8)


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_contrib_downstream_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    check_real("qnn", sys.executable, QNN_CASES)


OV_CASES = {f"sln_{n}": skip_layer_norm(n) for n in (1, 3, 4)}


@pytest.mark.parametrize(("name", "fails"), [("sln_1", False), ("sln_3", True), ("sln_4", True)])
def test_openvino_skip_layer_norm_outputs(name: str, fails: bool) -> None:
    from onnxlint.analyses.level_graph import EXPORTED

    la = context(OV_CASES[name], ["openvino"]).analysis(Assignment).level(EXPORTED)
    assert la is not None
    failing = [na.node.op_type for na in la if any(v.fails_after_claim for v in na.verdicts)]
    assert failing == (["SkipLayerNormalization"] if fails else []), name


@pytest.mark.slow
@pytest.mark.ort_openvino
def test_openvino_skip_layer_norm_on_real_openvino() -> None:
    runner = str(openvino_runner())
    real = real_sessions("openvino", runner, OV_CASES)
    for level in ("disabled", "basic"):
        assert real[f"sln_1|{level}"].get("ok"), real
        for name in ("sln_3", "sln_4"):
            r = real[f"{name}|{level}"]
            # the worker keeps the head of the error only (the frontend's message is later)
            assert not r.get("ok") and "openvino" in str(r.get("error")), (name, r)
    check_real("openvino", runner, {"sln_1": OV_CASES["sln_1"]})
