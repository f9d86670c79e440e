"""Helpers for the runtime tests: tiny models and EP availability (imported by test modules)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import onnx
import onnx.helper as oh
import pytest

from onnxlint.runtime.discovery import RunnerInfo, discover
from onnxlint.runtime.runners import resolve_runner

ROOT = Path(__file__).resolve().parents[2]
TP = onnx.TensorProto


def relu_model(name: str = "r0", opset: int = 17) -> onnx.ModelProto:
    graph = oh.make_graph(
        [oh.make_node("Relu", ["x"], ["y"], name=name)],
        "relu",
        [oh.make_tensor_value_info("x", TP.FLOAT, [1, 3, 4, 4])],
        [oh.make_tensor_value_info("y", TP.FLOAT, [1, 3, 4, 4])],
    )
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", opset)])
    model.ir_version = 8
    return model


@cache
def _info(python: str) -> RunnerInfo:
    return discover(python)


def runner_for(ep: str) -> str:
    return resolve_runner(ep, None, root=ROOT)


def require_ep(ep: str) -> str:
    """The runner interpreter for ``ep``, or skip the test saying why."""
    python = runner_for(ep)
    if not Path(python).exists():
        pytest.skip(f"no runner interpreter for {ep}: {python}")
    info = _info(python)
    if not info.ok:
        pytest.skip(f"runner {python} cannot import onnxruntime: {info.error}")
    if not info.has(ep):
        hint = " (run .ci/setup-openvino.sh)" if ep == "openvino" else ""
        pytest.skip(f"{ep} is not available under {python}{hint}; has {info.providers()}")
    return python
