"""QNN's GRU builder compares the ``activations`` attribute with the lower-case names
``sigmoid`` and ``tanh``: a GRU that spells the default functions as ONNX does ("Sigmoid",
"Tanh", what tf2onnx 1.17.0 writes for every Keras GRU) is refused ("QNN EP doesn't support
non-default activations for GRU.") and runs on the CPU, while one without the attribute, or
with the lower-case names, is taken (the fourteenth held-out batch: the Keras GRU's node
predicted on QNN, and OL506 reported for its dynamic input, though the session loaded).

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``).
"""

from __future__ import annotations

import sys

import onnx
import pytest
from onnx import helper

from onnxlint import lint
from onnxlint.analyses.assignment import Assignment

from .conftest import context, real_sessions
from .test_qnn_claimed_then_fails import recurrent


def gru(activations: list[str] | None, seq: int | str = 4) -> onnx.ModelProto:
    """Relu(x) -> GRU (hidden 8, linear_before_reset=1) -> Relu(Y_h), x [seq, 1, 8]."""
    model = recurrent("GRU", seq)
    node = next(n for n in model.graph.node if n.op_type == "GRU")
    node.attribute.append(helper.make_attribute("linear_before_reset", 1))
    if activations is not None:
        node.attribute.append(helper.make_attribute("activations", activations))
    return model


#: name -> (activations, sequence dim, whether QNN takes the GRU)
CASES: dict[str, tuple[list[str] | None, int | str, bool]] = {
    "absent": (None, 4, True),
    "onnx_spelling": (["Sigmoid", "Tanh"], 4, False),
    "lower_case": (["sigmoid", "tanh"], 4, True),
    "onnx_spelling_dynamic": (["Sigmoid", "Tanh"], "T", False),
}


def _on_qnn(model: onnx.ModelProto) -> bool:
    la = context(model, ["qnn"]).analysis(Assignment).exported
    return next(na for na in la if na.node.name == "rnn").first_claimer != "CPUExecutionProvider"


@pytest.mark.parametrize("name", list(CASES))
def test_gru_activations_decide_the_claim(name: str) -> None:
    acts, seq, taken = CASES[name]
    assert _on_qnn(gru(acts, seq)) is taken


def test_refused_gru_with_a_dynamic_input_does_not_fail_the_session() -> None:
    """The refusal comes first: no OL506 for a GRU QNN never takes."""
    codes = {d.code for d in lint(gru(["Sigmoid", "Tanh"], "T"), eps=["qnn"]).diagnostics}
    assert "OL506" not in codes
    assert "OL506" in {d.code for d in lint(gru(None, "T"), eps=["qnn"]).diagnostics}


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_gru_activations_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    real = real_sessions("qnn", sys.executable, {k: gru(a, s) for k, (a, s, _) in CASES.items()})
    for name, (_, _, taken) in CASES.items():
        for level in ("disabled", "basic"):
            r = real[f"{name}|{level}"]
            assert r.get("ok"), r
            on_qnn = {n["name"] for p in r["partitions"] if "QNN" in p["ep"] for n in p["nodes"]}
            assert ("rnn" in on_qnn) is taken, (name, level, r)
