"""QNN HTP claims a MaxPool of a uint8 or int8 tensor in its first capability pass and
refuses it once ORT has rewritten it to NHWC ("Failed to add node."): no QuantizeLinear
/DequantizeLinear unit gives the tensor a quantization. Session creation fails ("MaxPool
with domain:com.ms.internal.nhwc was inserted using the NHWC format ... but was not
selected by that EP"; issue #16, third held-out batch: the QOperator ResNet, whose
MaxPool sits between two QLinearConvs on their uint8 tensors). The profile lists int8 and
uint8 among MaxPool's types and the refusal in ``partitioning.layout_pass_failures``
(``integer_input``); OL512 reports it. A float MaxPool and a QDQ MaxPool load.

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

from .conftest import check_real, real_sessions

C = 8


def _model(name: str, nodes: list, elem: int, inits: list) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info("x", elem, [1, C, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, C, 4, 4])],
        inits,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
    )
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _pool(src: str, out: str = "p") -> onnx.NodeProto:
    return helper.make_node(
        "MaxPool", [src], [out], "pool", kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]
    )


def plain(elem: int) -> onnx.ModelProto:
    """MaxPool of a graph input of ``elem`` -> Cast to float."""
    nodes = [_pool("x"), helper.make_node("Cast", ["p"], ["y"], "cast", to=TensorProto.FLOAT)]
    return _model(f"plain_{elem}", nodes, elem, [])


def _scales() -> list[onnx.TensorProto]:
    return [
        numpy_helper.from_array(np.array(0.02, np.float32), "s"),
        numpy_helper.from_array(np.array(128, np.uint8), "z"),
    ]


def qdq() -> onnx.ModelProto:
    """Relu -> Q -> DQ -> MaxPool -> Q -> DQ -> Relu: the MaxPool is a QDQ unit's target."""
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], "pre"),
        helper.make_node("QuantizeLinear", ["r", "s", "z"], ["q"], "q"),
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"], "dq"),
        _pool("d"),
        helper.make_node("QuantizeLinear", ["p", "s", "z"], ["q2"], "q2"),
        helper.make_node("DequantizeLinear", ["q2", "s", "z"], ["d2"], "dq2"),
        helper.make_node("Relu", ["d2"], ["y"], "post"),
    ]
    return _model("qdq", nodes, TensorProto.FLOAT, _scales())


def qoperator() -> onnx.ModelProto:
    """Q -> QLinearConv -> MaxPool -> QLinearConv -> DQ, as the QOperator format writes a
    ResNet stem."""
    rng = np.random.default_rng(0)
    inits = [
        *_scales(),
        numpy_helper.from_array(np.array(0.01, np.float32), "ws"),
        numpy_helper.from_array(np.array(0, np.int8), "wz"),
        numpy_helper.from_array(rng.integers(-50, 50, (C, C, 3, 3)).astype(np.int8), "w1"),
        numpy_helper.from_array(rng.integers(-50, 50, (C, C, 1, 1)).astype(np.int8), "w2"),
        numpy_helper.from_array(np.zeros(C, np.int32), "b"),
    ]

    def conv(x: str, w: str, y: str, name: str, k: int) -> onnx.NodeProto:
        ins = [x, "s", "z", w, "ws", "wz", "s", "z", "b"]
        return helper.make_node(
            "QLinearConv", ins, [y], name, kernel_shape=[k, k], pads=[k // 2] * 4
        )

    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], "q"),
        conv("xq", "w1", "c1", "conv1", 3),
        _pool("c1"),
        conv("p", "w2", "c2", "conv2", 1),
        helper.make_node("DequantizeLinear", ["c2", "s", "z"], ["y"], "dq"),
    ]
    return _model("qoperator", nodes, TensorProto.FLOAT, inits)


FAILING = {
    "uint8": lambda: plain(TensorProto.UINT8),
    "int8": lambda: plain(TensorProto.INT8),
    "qoperator": qoperator,
}
LOADING = {"float": lambda: plain(TensorProto.FLOAT), "qdq": qdq}


def _errors(model: onnx.ModelProto) -> list[tuple[str, str | None]]:
    report = lint(model, eps=["qnn"], what_if=False)
    return [
        (d.code, d.location.node_name) for d in report.diagnostics if d.severity.name == "ERROR"
    ]


@pytest.mark.parametrize("case", [*FAILING, *LOADING])
def test_an_integer_maxpool_fails_after_the_layout_transform(case: str) -> None:
    make = FAILING.get(case) or LOADING[case]
    assert _errors(make()) == ([("OL512", "pool")] if case in FAILING else []), case


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_integer_maxpool_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    real = real_sessions("qnn", sys.executable, {k: f() for k, f in FAILING.items()})
    for case in FAILING:
        for level in ("disabled", "basic"):
            r = real[f"{case}|{level}"]
            assert not r.get("ok") and "NHWC" in str(r.get("error")), (case, level, r)
    check_real("qnn", sys.executable, {k: f() for k, f in LOADING.items()})
