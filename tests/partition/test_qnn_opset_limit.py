"""QNN's opset limits: at least opset 7 (ORT's layout transformer, measured), and at most
what the ORT that loads it loads. QNN is a plugin library the installed onnxruntime
loads, so its highest opset is that ORT's: with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0
(QAIRT 2.51 HTP simulator, ``soc_model=60``) a Conv -> Relu at opsets 27 and 28 runs on
QNN at both levels, with the NHWC layout transform. The profile had kept 26, measured
with onnxruntime 1.31.1, and predicted the CPU, saying the layout transformer "does not
handle opsets below 7" of an opset-28 model.
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from onnxlint.analyses.capability import NodeFacts, evaluate
from onnxlint.ort_versions import installed_limits
from onnxlint.profiles import load_profile
from onnxlint.profiles.model import OpsetLimit

from .conftest import check_real, partitions

QNN = "QNNExecutionProvider"


def conv_relu(opset: int) -> onnx.ModelProto:
    """Conv (3x3, pads 1) -> Relu of float[1, 3, 8, 8] at ``opset``."""
    w = numpy_helper.from_array(np.linspace(-1, 1, 108, dtype=np.float32).reshape(4, 3, 3, 3), "w")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["y"], name="relu"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 4, 8, 8])],
        [w],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def _installed_max() -> int:
    found = installed_limits()
    return int(found["max_opset"]) if found else 0


def test_limit_names_the_end_it_is_past() -> None:
    limit = OpsetLimit(min=7, max=26, reason="above", provenance="p", min_reason="below")
    assert limit.refusal(5) == ("below", "p")
    assert limit.refusal(27) == ("above", "p")
    assert limit.refusal(7) is None and limit.refusal(26) is None
    assert OpsetLimit(min=7, max=26, reason="both").refusal(5) == ("both", None)


def test_qnn_limit_follows_the_installed_ort() -> None:
    limit = load_profile("qnn").opsets["ai.onnx"]
    assert limit.min == 7
    if _installed_max():
        assert limit.max == _installed_max()
        assert "(installed)" in (limit.reason or "")


def test_below_the_layout_transformers_minimum() -> None:
    v = evaluate(load_profile("qnn"), NodeFacts(op_type="Relu", domain="ai.onnx", opset=5))
    assert not v.claimed
    assert "does not handle opsets below 7" in v.reason


@pytest.mark.parametrize("opset", [27, 28])
def test_newest_opsets_run_on_qnn(opset: int) -> None:
    if _installed_max() < opset:
        pytest.skip(f"the installed onnxruntime loads ai.onnx up to opset {_installed_max()}")
    plan = partitions(conv_relu(opset), ["qnn"]).plan("exported")
    assert plan is not None
    assert set(plan.node_ep.values()) == {QNN}, plan.node_ep


def test_above_the_installed_ort() -> None:
    top = _installed_max()
    if not top:
        pytest.skip("no onnxruntime to ask")
    facts = NodeFacts(op_type="Relu", domain="ai.onnx", opset=top + 1)
    v = evaluate(load_profile("qnn"), facts)
    assert not v.claimed
    assert f"loads ai.onnx up to opset {top}" in v.reason
    assert "below 7" not in v.reason


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_newest_opsets_on_real_qnn(qnn_available: None) -> None:
    top = _installed_max()
    models = {f"opset{o}": conv_relu(o) for o in (26, 27, 28) if o <= top}
    check_real("qnn", sys.executable, models)
