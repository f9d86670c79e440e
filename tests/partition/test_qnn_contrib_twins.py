"""A com.microsoft op that ONNX has no schema for, but whose outputs ORT's contrib
schema infers as an ai.onnx twin's (DynamicQuantizeLSTM: as LSTM's), has a static output
in ORT when its input is static, or once the named dims are fixed: QNN refuses the LSTM
itself and takes what follows it (issue #16, the quantized-LSTM OCR head of a model
shipped in a wheel, with its width fixed: Transpose, Reshape and the Gathers of its
Shape, predicted on CPU as "Cannot get shape").

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``).
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
HIDDEN = 4


def quantized_lstm(seq: int | str, hidden_size: bool = True) -> onnx.ModelProto:
    """DynamicQuantizeLSTM (bidirectional) -> Transpose -> Relu; ``seq`` the length of
    the sequence (a named dim when a string)."""
    rng = np.random.default_rng(0)
    nd, size = 2, 8

    def init(name: str, value: np.ndarray) -> onnx.TensorProto:
        return numpy_helper.from_array(value, name)

    inits = [
        init("W", rng.integers(0, 255, (nd, size, 4 * HIDDEN), dtype=np.uint8)),
        init("R", rng.integers(0, 255, (nd, HIDDEN, 4 * HIDDEN), dtype=np.uint8)),
        init("B", rng.standard_normal((nd, 8 * HIDDEN)).astype(np.float32)),
        init("W_scale", np.full((nd,), 0.01, np.float32)),
        init("W_zp", np.full((nd,), 128, np.uint8)),
        init("R_scale", np.full((nd,), 0.01, np.float32)),
        init("R_zp", np.full((nd,), 128, np.uint8)),
    ]
    attrs: dict[str, object] = {"direction": "bidirectional"}
    if hidden_size:
        attrs["hidden_size"] = HIDDEN
    lstm = helper.make_node(
        "DynamicQuantizeLSTM",
        ["x", "W", "R", "B", "", "", "", "", "W_scale", "W_zp", "R_scale", "R_zp"],
        ["y"],
        "lstm",
        domain="com.microsoft",
        **attrs,
    )
    nodes = [
        helper.make_node("Relu", ["x0"], ["x"], "pre"),
        lstm,
        helper.make_node("Transpose", ["y"], ["t"], "transpose", perm=[0, 2, 1, 3]),
        helper.make_node("Relu", ["t"], ["out"], "post"),
    ]
    graph = helper.make_graph(
        nodes,
        "quantized_lstm",
        [helper.make_tensor_value_info("x0", TensorProto.FLOAT, [seq, 1, size])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
        inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)]
    )
    model.ir_version = 8
    return model


def _eps(model: onnx.ModelProto, **config: object) -> dict[str, str]:
    plan = partitions(model, ["qnn"], **config).plan("exported")
    assert plan is not None
    return plan.node_ep


def test_static_input_gives_the_twins_static_output() -> None:
    eps = _eps(quantized_lstm(4))
    assert eps["main/lstm"] == CPU_EP
    assert eps["main/transpose"] == QNN
    assert eps["main/post"] == QNN


def test_fixed_named_dim_gives_the_twins_static_output() -> None:
    model = quantized_lstm("seq")
    assert _eps(model)["main/transpose"] == CPU_EP  # the sequence length is dynamic
    assert _eps(model, assume_dims={"seq": 4})["main/transpose"] == QNN


def test_without_hidden_size_no_twin_is_guessed() -> None:
    # the twin would read the hidden size from R in LSTM's layout, not the contrib one's
    assert _eps(quantized_lstm(4, hidden_size=False))["main/transpose"] == CPU_EP


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_contrib_twin_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    check_real("qnn", sys.executable, {"static": quantized_lstm(4)})
