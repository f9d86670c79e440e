"""QNN claims a Reciprocal without checking its input shape: with a dynamic input the
node is taken and session creation then fails ("Dynamic shape is not supported yet";
issue #16, the tf2onnx LayerNorm of a shipped model whose value_info keeps symbolic
dims). Other unary ops with the same input are refused ("Cannot get shape") and fall
back to CPU. The profile says so as data: the global static-shape constraint skips
Reciprocal, whose own constraint has ``effect: fails_after_claim`` (OL506).

GRU is the same (the fifth held-out batch: the GRU encoders of arabic-name-romanizer): QNN
claims it whatever its input shapes and session creation fails when the sequence, the
batch or ``initial_h`` is dynamic, while an LSTM with the same input is refused and runs
on the CPU. An LSTM checks only its X: with X static and ``initial_h`` or ``initial_c``
dynamic it is claimed and fails the same way (the nineteenth held-out batch:
brainmaze-eeg-models' seizure model, its zero states sized by a Shape ORT does not fold
with optimizations disabled).

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint import lint
from onnxlint.analyses.assignment import Assignment

from .conftest import agreement, context


def unary(op: str, dim: int | str) -> onnx.ModelProto:
    """Relu(x) -> ``op`` with x of shape [dim, 8], and a static Relu beside it."""
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["r"], "relu"),
            helper.make_node(op, ["r"], ["y"], "op"),
            helper.make_node("Relu", ["x2"], ["y2"], "relu2"),
        ],
        "unary",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [dim, 8]),
            helper.make_tensor_value_info("x2", TensorProto.FLOAT, [1, 8]),
        ],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [dim, 8]),
            helper.make_tensor_value_info("y2", TensorProto.FLOAT, [1, 8]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def recurrent(
    op: str,
    seq: int | str,
    batch: int | str = 1,
    h0: int | str | None = None,
    c0: int | str | None = None,
) -> onnx.ModelProto:
    """Relu(x) -> ``op`` (hidden 8) -> Relu(Y_h), x [seq, batch, 8]; with ``h0`` (``c0``,
    LSTM only), the initial hidden (cell) state a Relu of a graph input [1, h0, 8]."""
    gates = {"GRU": 3, "LSTM": 4}[op]
    rng = np.random.default_rng(0)
    weights = [
        numpy_helper.from_array(rng.random(shape).astype(np.float32), name)
        for name, shape in (("W", (1, gates * 8, 8)), ("R", (1, gates * 8, 8)),
                            ("B", (1, 2 * gates * 8)))
    ]  # fmt: skip
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [seq, batch, 8])]
    nodes = [helper.make_node("Relu", ["x"], ["xr"], "relu")]
    rnn_inputs = ["xr", "W", "R", "B", ""]
    for state, dim in (("h0", h0), ("c0", c0)):
        if dim is not None:
            inputs.append(helper.make_tensor_value_info(state, TensorProto.FLOAT, [1, dim, 8]))
            nodes.append(helper.make_node("Relu", [state], [f"{state}r"], f"relu_{state}"))
            rnn_inputs += [""] * (5 + (state == "c0") - len(rnn_inputs)) + [f"{state}r"]
    nodes += [
        helper.make_node(op, rnn_inputs, ["y", "yh"], "rnn", hidden_size=8),
        helper.make_node("Relu", ["yh"], ["out"], "relu_out"),
    ]
    out = helper.make_tensor_value_info("out", TensorProto.FLOAT, None)
    graph = helper.make_graph(nodes, "recurrent", inputs, [out], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


#: (op, seq, batch, h0 batch, c0 batch) -> whether the QNN session fails
RECURRENT = {
    ("GRU", "T", 1, None, None): True,
    ("GRU", 4, "N", None, None): True,
    ("GRU", 4, 1, "N", None): True,
    ("GRU", 4, 1, None, None): False,
    ("GRU", 4, 1, 1, None): False,
    ("LSTM", "T", 1, None, None): False,
    ("LSTM", 4, 1, "N", None): True,
    ("LSTM", 4, 1, None, "N"): True,
    ("LSTM", 4, 1, 1, 1): False,
    ("LSTM", 4, "N", "N", None): False,
}


#: (op, first dim) -> whether the QNN session fails
CASES = {
    ("Reciprocal", "N"): True,
    ("Reciprocal", 1): False,
    ("Sqrt", "N"): False,
}


def _codes(model: onnx.ModelProto) -> set[str]:
    return {d.code for d in lint(model, eps=["qnn"]).diagnostics if d.severity.name == "ERROR"}


@pytest.mark.parametrize(("case", "fails"), list(CASES.items()))
def test_reciprocal_with_a_dynamic_input_fails_the_session(
    case: tuple[str, int | str], fails: bool
) -> None:
    assert ("OL506" in _codes(unary(*case))) is fails


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_reciprocal_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    spec = agreement.EPS["qnn"]
    with tempfile.TemporaryDirectory() as tmp:
        jobs = []
        for op, dim in CASES:
            path = Path(tmp) / f"{op}_{dim}.onnx"
            path.write_bytes(unary(op, dim).SerializeToString())
            jobs.append(
                {
                    "id": f"{op}_{dim}",
                    "path": str(path),
                    "level": "disabled",
                    "provider": spec["provider"],
                    "options": spec["options"],
                    "plugin": spec["plugin"],
                }
            )
        real = agreement.run_real(jobs, sys.executable, timeout_s=300)
    for (op, dim), fails in CASES.items():
        r = real[f"{op}_{dim}"]
        assert (not r.get("ok")) is fails, r
        if fails:
            assert "Dynamic shape is not supported yet" in str(r.get("error"))


@pytest.mark.parametrize(("case", "fails"), list(RECURRENT.items()))
def test_recurrent_with_a_dynamic_input_fails_the_session(
    case: tuple[str, int | str, int | str, int | str | None, int | str | None], fails: bool
) -> None:
    assert ("OL506" in _codes(recurrent(*case))) is fails


def test_lstm_with_a_dynamic_input_is_refused() -> None:
    ctx = context(recurrent("LSTM", "T"), ["qnn"])
    la = ctx.analysis(Assignment).exported
    rnn = next(na for na in la if na.node.name == "rnn")
    assert rnn.first_claimer == "CPUExecutionProvider"


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_recurrent_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    spec = agreement.EPS["qnn"]
    with tempfile.TemporaryDirectory() as tmp:
        jobs = []
        for case in RECURRENT:
            key = "_".join(map(str, case))
            path = Path(tmp) / f"{key}.onnx"
            path.write_bytes(recurrent(*case).SerializeToString())
            jobs.append(
                {
                    "id": key,
                    "path": str(path),
                    "level": "disabled",
                    "provider": spec["provider"],
                    "options": spec["options"],
                    "plugin": spec["plugin"],
                }
            )
        real = agreement.run_real(jobs, sys.executable, timeout_s=300)
    for case, fails in RECURRENT.items():
        r = real["_".join(map(str, case))]
        assert (not r.get("ok")) is fails, r
        if fails:
            assert "Dynamic shape is not supported yet" in str(r.get("error"))
        else:
            on_qnn = {
                n["name"]
                for p in r["partitions"]
                if p["ep"] == spec["provider"]
                for n in p["nodes"]
            }
            # an LSTM with a dynamic X is refused; with X static it is on QNN
            static_x = isinstance(case[1], int) and isinstance(case[2], int)
            assert ("rnn" in on_qnn) is static_x, r
