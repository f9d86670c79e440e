"""QNN finds its op builders by op type whatever the node's domain, so QNN HTP takes a
``com.microsoft`` Gelu and a SimplifiedLayerNormalization in the ``ai.onnx`` domain
(where ORT registers its kernel and its transformer optimizer writes it), which the
profile read from the builder list had in the other domain only (issue #16, third
held-out batch: the ORT optimizer outputs). It refuses an LSTM that carries an
``activations`` attribute, even one naming the default functions (the g2p-id-py wheel's
tf2onnx LSTMs: "QNN EP doesn't support non-default activations for LSTM.").

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

from .conftest import agreement, partitions, real_sessions

QNN = "QNNExecutionProvider"
HIDDEN = 8


def contrib_op(op: str) -> onnx.ModelProto:
    """Relu -> ``op`` (``gelu``: com.microsoft Gelu; ``simplified_ln``: ai.onnx
    SimplifiedLayerNormalization) -> Relu; the node under test is named ``op``."""
    if op == "gelu":
        node = helper.make_node("Gelu", ["x"], ["y"], "op", domain="com.microsoft")
    else:
        node = helper.make_node(
            "SimplifiedLayerNormalization", ["x", "g"], ["y"], "op", axis=-1, epsilon=1e-5
        )
    shape = [2, 4, HIDDEN]
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x0"], ["x"], "pre"),
            node,
            helper.make_node("Relu", ["y"], ["out"], "post"),
        ],
        op,
        [helper.make_tensor_value_info("x0", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, shape)],
        [numpy_helper.from_array(np.ones(HIDDEN, np.float32), "g")],
        # declared: onnxlint infers no shape through ORT's own ops (a separate class)
        value_info=[helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    return model


def lstm(activations: list[str] | None) -> onnx.ModelProto:
    """Relu -> LSTM (node ``op``, with the ``activations`` attribute when given) -> Relu."""
    rng = np.random.default_rng(0)
    extra = {} if activations is None else {"activations": activations}
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x0"], ["x"], "pre"),
            helper.make_node("LSTM", ["x", "W", "R"], ["y"], "op", hidden_size=HIDDEN, **extra),
            helper.make_node("Relu", ["y"], ["out"], "post"),
        ],
        "lstm",
        [helper.make_tensor_value_info("x0", TensorProto.FLOAT, [5, 1, 4])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [5, 1, 1, HIDDEN])],
        [
            numpy_helper.from_array(
                rng.standard_normal((1, 4 * HIDDEN, 4)).astype(np.float32), "W"
            ),
            numpy_helper.from_array(
                rng.standard_normal((1, 4 * HIDDEN, HIDDEN)).astype(np.float32), "R"
            ),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


CASES = {
    "gelu": (contrib_op("gelu"), QNN),
    "simplified_ln": (contrib_op("simplified_ln"), QNN),
    "lstm": (lstm(None), QNN),
    "lstm_default_activations": (lstm(["Sigmoid", "Tanh", "Tanh"]), CPU_EP),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_node_goes_where_qnn_puts_it(name: str) -> None:
    model, ep = CASES[name]
    for level in ("exported", "optimized"):
        plan = partitions(model, ["qnn"]).plan(level)
        assert plan is not None
        assert plan.node_ep["main/op"] == ep, level


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_op_domains_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    real = real_sessions("qnn", sys.executable, {k: m for k, (m, _) in CASES.items()})
    for name, (model, ep) in CASES.items():
        plans = agreement.predict(model, "qnn")
        for level in ("disabled", "basic"):
            r = real[f"{name}|{level}"]
            assert r.get("ok"), (name, level, r)
            placed = {nd["name"]: p["ep"] for p in r["partitions"] for nd in p["nodes"]}
            assert placed["op"] == ep, (name, level, placed)
            assert plans[level].node_ep["main/op"] == ep, (name, level)
