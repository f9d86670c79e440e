"""QNN HTP and a reflect Pad whose pads reach past its input.

QNN's Pad builder refuses reflect mode when a begin or end pad amount is greater than the
input's dimension - 1 ("Pad amount should not be greater than shape(input[0])[i] - 1"):
the Pad runs on the CPU (a ``pad_room`` constraint, read from the constant pads and the
static input shape). Constant and edge modes have no such bound. Seen on an onnx-asr
feature extractor whose waveform length is fixed to 1, whose STFT follows the Pad: ONNX's
inference gives an STFT that leaves ``onesided`` unset n_fft bins, ORT's n_fft / 2 + 1
(its default), so the MatMul by the mel filter bank after it has a static shape and QNN
takes it (``session_types._INFERENCE_DEFAULTS``). Measured with onnxruntime 1.32.0 +
onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator, ``soc_model=60``), both levels.
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


def padded(width: int, pads: list[int], mode: str) -> onnx.ModelProto:
    """Relu -> Pad (``mode``, constant ``pads``) -> Sigmoid on a [1, ``width``] tensor."""
    out = width + pads[1] + pads[3]
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="pre"),
        helper.make_node("Pad", ["r", "pads"], ["p"], name="pad", mode=mode),
        helper.make_node("Sigmoid", ["p"], ["y"], name="post"),
    ]
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        nodes,
        "pad",
        [helper.make_tensor_value_info("x", f, [1, width])],
        [helper.make_tensor_value_info("y", f, [1, out])],
        [numpy_helper.from_array(np.array(pads, np.int64), "pads")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    return model


#: name -> (width, pads, mode, whether QNN takes the Pad)
CASES = {
    "reflect_past_a_one_wide_input": (1, [0, 200, 0, 200], "reflect", False),
    "reflect_one_too_far": (8, [0, 8, 0, 0], "reflect", False),
    "reflect_end_one_too_far": (8, [0, 0, 0, 8], "reflect", False),
    "reflect_to_the_edge": (8, [0, 7, 0, 7], "reflect", True),
    "constant_past_the_input": (1, [0, 200, 0, 200], "constant", True),
    "edge_past_the_input": (1, [0, 3, 0, 3], "edge", True),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_reflect_pad_room_on_qnn(name: str) -> None:
    width, pads, mode, taken = CASES[name]
    parts = partitions(padded(width, pads, mode), ["qnn"])
    for level in ("exported", "optimized"):
        plan = parts.plan(level)
        assert plan is not None
        assert plan.node_ep["main/pad"] == (QNN if taken else CPU_EP), (name, level)


def spectrogram(width: int) -> onnx.ModelProto:
    """Pad (reflect by 200) -> STFT (n_fft 400, hop 160, ``onesided`` unset) ->
    ReduceSumSquare -> MatMul by a [201, 8] filter bank -> Log, on a [1, ``width``] signal."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(np.array([0, 200, 0, 200], np.int64), "pads"),
        numpy_helper.from_array(np.array(160, np.int64), "hop"),
        numpy_helper.from_array(np.hanning(400).astype(np.float32), "window"),
        numpy_helper.from_array(rng.random((201, 8)).astype(np.float32), "bank"),
    ]
    nodes = [
        helper.make_node("Pad", ["x", "pads"], ["p"], name="pad", mode="reflect"),
        helper.make_node("STFT", ["p", "hop", "window"], ["s"], name="stft"),
        helper.make_node("ReduceSumSquare", ["s"], ["power"], name="power", axes=[-1], keepdims=0),
        helper.make_node("MatMul", ["power", "bank"], ["mel"], name="mel"),
        helper.make_node("Log", ["mel"], ["y"], name="log"),
    ]
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        nodes,
        "spectrogram",
        [helper.make_tensor_value_info("x", f, [1, width])],
        [helper.make_tensor_value_info("y", f, None)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_the_spectrogram_after_a_cpu_pad_has_static_shapes() -> None:
    parts = partitions(spectrogram(1), ["qnn"])
    for level in ("exported", "optimized"):
        plan = parts.plan(level)
        assert plan is not None
        assert plan.node_ep["main/pad"] == CPU_EP, level
        for name in ("stft", "mel", "log"):
            assert plan.node_ep[f"main/{name}"] == QNN, (name, level)


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_reflect_pad_room_on_real_qnn(qnn_available: None) -> None:
    models = {name: padded(w, p, m) for name, (w, p, m, _) in CASES.items()}
    models["spectrogram"] = spectrogram(1)
    check_real("qnn", sys.executable, models)
