"""QNN HTP validates its node units one by one in one model wrapper, where an 8-bit tensor
outside QDQ node units is added once, by the first unit that reads or writes it: with its
quantization by a QuantizeLinear QNN builds (or a QOperator op), as a plain integer by a
Gather, Reshape or Transpose outside any unit (a Transpose carries a quantized input's
quantization over). The HTP backend then fails to add ("Failed to add node."):

- a DequantizeLinear outside any unit that reads a plain tensor (the uint8 embedding
  Gather of the dynamically quantized BERT and text2tashkeel, the Reshapes ORT writes
  around the QOperator ViT's QGemm);
- a Reshape outside any unit that reads a quantized tensor (the QOperator ViT's Reshape
  after QLinearConv);

and takes a uint8 Transpose of a quantized tensor, which its op builder's types leave out
(the QuantizeLinear -> Transpose -> DequantizeLinear ORT's level 1 writes in the QDQ
ConvNeXt exports). ``partitioning.integer_tensor_registration``.

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``), at both graph levels.
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from .conftest import check_real, partitions


def _model(
    name: str, nodes: list[onnx.NodeProto], x: onnx.ValueInfoProto, out: list[int]
) -> onnx.ModelProto:
    inits = [
        numpy_helper.from_array(np.array(0.02, np.float32), "s"),
        numpy_helper.from_array(np.array(128, np.uint8), "z"),
        numpy_helper.from_array(np.array([1, 32], np.int64), "shp"),
        numpy_helper.from_array(
            np.random.default_rng(0).integers(0, 255, (16, 8)).astype(np.uint8), "tab"
        ),
    ]
    graph = helper.make_graph(
        nodes, name, [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)], inits
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


_F = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8])
_U = helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 4, 8])


def _quantized(middle: list[onnx.NodeProto], last: str) -> list[onnx.NodeProto]:
    """Relu -> QuantizeLinear -> ``middle`` -> DequantizeLinear(``last``) -> Relu."""
    return [
        helper.make_node("Relu", ["x"], ["r"], "relu0"),
        helper.make_node("QuantizeLinear", ["r", "s", "z"], ["q"], "q"),
        *middle,
        helper.make_node("DequantizeLinear", [last, "s", "z"], ["d"], "dq"),
        helper.make_node("Relu", ["d"], ["y"], "relu1"),
    ]


def _tail(src: str) -> list[onnx.NodeProto]:
    return [
        helper.make_node("DequantizeLinear", [src, "s", "z"], ["d"], "dq"),
        helper.make_node("Relu", ["d"], ["y"], "relu1"),
    ]


_TRANSPOSE = helper.make_node("Transpose", ["q"], ["t"], "tr", perm=[0, 2, 1])

#: model, and the nodes QNN leaves to the CPU
CASES = {
    "q_transpose_dq": (
        lambda: _model("q_transpose_dq", _quantized([_TRANSPOSE], "t"), _F, [1, 8, 4]),
        set(),
    ),
    "q_reshape_dq": (
        lambda: _model(
            "q_reshape_dq",
            _quantized([helper.make_node("Reshape", ["q", "shp"], ["t"], "rs")], "t"),
            _F,
            [1, 32],
        ),
        {"rs", "dq"},
    ),
    "q_transpose_reshape_dq": (
        lambda: _model(
            "q_transpose_reshape_dq",
            _quantized([_TRANSPOSE, helper.make_node("Reshape", ["t", "shp"], ["t2"], "rs")], "t2"),
            _F,
            [1, 32],
        ),
        {"rs", "dq"},
    ),
    "input_reshape_dq": (
        lambda: _model(
            "input_reshape_dq",
            [helper.make_node("Reshape", ["x", "shp"], ["t"], "rs"), *_tail("t")],
            _U,
            [1, 32],
        ),
        {"dq"},
    ),
    "gather_dq": (
        lambda: _model(
            "gather_dq",
            [helper.make_node("Gather", ["tab", "ids"], ["g"], "gather"), *_tail("g")],
            helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 4]),
            [1, 4, 8],
        ),
        {"gather", "dq"},
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_qnn_adds_an_eight_bit_tensor_outside_units_as_its_first_node_did(case: str) -> None:
    make, on_cpu = CASES[case]
    model = make()
    for level in ("exported", "optimized"):
        plan = partitions(model, ["qnn"]).plan(level)
        assert plan is not None
        got = {p.split("/")[-1] for p, ep in plan.node_ep.items() if ep == "CPUExecutionProvider"}
        assert got == on_cpu, (case, level)


def test_the_release_says_why() -> None:
    plan = partitions(CASES["gather_dq"][0](), ["qnn"]).plan("exported")
    assert plan is not None
    assert "Failed to add node" in plan.released["main/dq"]


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_integer_tensors_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    check_real("qnn", sys.executable, {k: make() for k, (make, _) in CASES.items()})
