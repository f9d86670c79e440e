"""QNN HTP claims a Conv whose input has another number of channels than its weight takes
(input dim 1 against the weight's dim 1 times ``group``) in its first capability pass and
refuses it once ORT has rewritten it to NHWC: session creation fails ("Conv with
domain:com.ms.internal.nhwc was inserted using the NHWC format ... but was not selected by
that EP"). Issue #16, held-out batch 10: optimum's ViT exports read ``pixel_values``
[batch_size, num_channels, height, width], and with ``num_channels`` fixed to 1 the patch
Conv (3 input channels) fails so. The profile's ``partitioning.layout_pass_failures``
(``channel_mismatch``) holds the refusal; OL512 reports it. The same Conv with the channel
dim right, or left free, loads.

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
from onnxlint.config import Config

from .conftest import real_sessions


def _conv(w_channels: int, group: int = 1, channels: str | int = "C") -> onnx.ModelProto:
    """x [N, channels, 16, 16] -> Conv(8 x w_channels x 4 x 4, stride 4, group) -> Relu."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.standard_normal((8, w_channels, 4, 4)).astype("f4"), "w"),
        numpy_helper.from_array(np.zeros(8, np.float32), "b"),
    ]
    conv = helper.make_node(
        "Conv", ["x", "w", "b"], ["c"], "conv", kernel_shape=[4, 4], strides=[4, 4], group=group
    )
    graph = helper.make_graph(
        [conv, helper.make_node("Relu", ["c"], ["y"], "relu")],
        "conv_channels",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", channels, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8, 4, 4])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


#: case -> (model, dims fixed, whether the session fails)
CASES: dict[str, tuple[onnx.ModelProto, dict[str, int], bool]] = {
    "fixed_to_1": (_conv(3), {"N": 1, "C": 1}, True),
    "static_1": (_conv(3, channels=1), {"N": 1}, True),
    "group_2_of_2": (_conv(2, group=2), {"N": 1, "C": 2}, True),
    "fixed_to_3": (_conv(3), {"N": 1, "C": 3}, False),
    "group_2_of_4": (_conv(2, group=2), {"N": 1, "C": 4}, False),
    "free": (_conv(3), {"N": 1}, False),
}


@pytest.mark.parametrize("case", CASES)
def test_a_conv_with_the_wrong_channels_fails_after_the_layout_transform(case: str) -> None:
    model, dims, fails = CASES[case]
    report = lint(model, eps=["qnn"], config=Config(eps=("qnn",), assume_dims=dims), what_if=False)
    errors = [
        (d.code, d.location.node_name) for d in report.diagnostics if d.severity.name == "ERROR"
    ]
    assert errors == ([("OL512", "conv")] if fails else []), case
    if fails:
        msg = next(d.message for d in report.diagnostics if d.code == "OL512")
        assert "channels" in msg, msg


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_conv_channels_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    models = {name: model for name, (model, _, _) in CASES.items()}
    dims = {name: d for name, (_, d, _) in CASES.items() if d}
    real = real_sessions("qnn", sys.executable, models, free_dims=dims)
    for name, (_, _, fails) in CASES.items():
        for level in ("disabled", "basic"):
            r = real[f"{name}|{level}"]
            if fails:
                assert not r.get("ok") and "NHWC" in str(r.get("error")), (name, level, r)
            else:
                assert r.get("ok"), (name, level, r)
