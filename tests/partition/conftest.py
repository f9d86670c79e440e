"""Helpers for the partition tests: lint context for a model, hand-built models."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import onnx
import pytest

from onnxlint.analyses.partition import Partitions
from onnxlint.config import Config
from onnxlint.context import LintContext
from onnxlint.engine import resolve_eps
from onnxlint.index import ModelIndex
from onnxlint.loader import load

from ..conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import partition_agreement as agreement
import partition_models

__all__ = [
    "check_real",
    "context",
    "openvino_runner",
    "partition_models",
    "partitions",
    "real_sessions",
]


def context(model: onnx.ModelProto | str, eps: Sequence[str], **config: Any) -> LintContext:
    if isinstance(model, str):
        model = onnx.parser.parse_model(model)
    cfg = Config(**config)
    loaded = load(model.SerializeToString(), cfg.limits)
    assert loaded.model is not None
    return LintContext(
        loaded=loaded, index=ModelIndex(loaded.model), config=cfg, eps=resolve_eps(list(eps), cfg)
    )


def partitions(model: onnx.ModelProto | str, eps: Sequence[str], **config: Any) -> Partitions:
    return context(model, eps, **config).analysis(Partitions)


def relu_to_relu(
    nodes: Sequence[onnx.NodeProto],
    inits: Sequence[onnx.TensorProto],
    name: str,
    x_shape: Sequence[int],
    y_shape: Sequence[int],
) -> onnx.ModelProto:
    """An opset-21 model of ``nodes`` (float ``x`` in, float ``y`` out), checked: the small
    QDQ graphs the real-QNN tests measure, a Relu before and after the unit."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        list(nodes),
        name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(y_shape))],
        list(inits),
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    m.ir_version = 10
    onnx.checker.check_model(m)
    return m


def qnn_cpu_nodes(model: onnx.ModelProto) -> set[str]:
    """The node paths QNN leaves to CPU in the exported graph's predicted plan."""
    plan = partitions(model, ["qnn"]).plan("exported")
    assert plan is not None
    return {p for p, ep in plan.node_ep.items() if ep == "CPUExecutionProvider"}


def real_sessions(
    ep: str,
    runner: str,
    models: Mapping[str, onnx.ModelProto],
    timeout_s: float = 300,
    free_dims: Mapping[str, Mapping[str, int]] | None = None,
) -> dict[str, dict[str, Any]]:
    """Real sessions on ``ep`` (``runner``'s interpreter) of every model at both levels,
    keyed ``name|disabled`` and ``name|basic``; ``free_dims``: per model, the named dims
    its sessions fix (``add_free_dimension_override_by_name``)."""
    spec = agreement.EPS[ep]
    with tempfile.TemporaryDirectory() as tmp:
        jobs = []
        for name, model in models.items():
            path = Path(tmp) / f"{name}.onnx"
            path.write_bytes(model.SerializeToString())
            for level in ("disabled", "basic"):
                jobs.append(
                    {
                        "id": f"{name}|{level}",
                        "path": str(path),
                        "level": level,
                        "provider": spec["provider"],
                        "options": spec["options"],
                        "plugin": spec["plugin"],
                        **(
                            {"free_dims": dict(free_dims[name])}
                            if free_dims and name in free_dims
                            else {}
                        ),
                    }
                )
        return agreement.run_real(jobs, runner, timeout_s=timeout_s)


def check_real(ep: str, runner: str, models: Mapping[str, onnx.ModelProto]) -> None:
    """Real sessions on ``ep`` (``runner``'s interpreter) at both levels agree with the
    prediction node for node and in the number of accelerator partitions."""
    spec = agreement.EPS[ep]
    real = real_sessions(ep, runner, models)
    for name, model in models.items():
        plans = agreement.predict(model, ep)
        for level in ("disabled", "basic"):
            r = real[f"{name}|{level}"]
            assert r.get("ok"), (name, level, r)
            got = agreement.compare(plans[level], r, spec["provider"])
            assert got["diffs"] == [], (name, level, got["diffs"])
            assert got["real_partitions"] == got["predicted_partitions"], (name, level, got)


def compile_failures(model: onnx.ModelProto, ep: str) -> list[str]:
    """The messages of OL513 (a partition the EP fails to compile) on ``model``."""
    from onnxlint.analyses.partition import Partitions
    from onnxlint.rules.ep_session_failures import EpPartitionFailsToCompile

    ctx = context(model, [ep])
    ctx.analysis(Partitions)
    EpPartitionFailsToCompile().check_model(ctx)
    return [d.message for d in ctx.diagnostics if d.code == "OL513"]


def assert_real_failures(
    ep: str, runner: str, models: Mapping[str, onnx.ModelProto], fails: Mapping[str, bool]
) -> None:
    """Real sessions of every model on ``ep`` fail at both levels exactly where ``fails`` says."""
    real = real_sessions(ep, runner, models)
    for name in models:
        for level in ("disabled", "basic"):
            r = real[f"{name}|{level}"]
            assert (not r.get("ok")) is fails[name], (name, level, r)


def openvino_runner() -> Path:
    """The OpenVINO runner's interpreter; skips the test where the venv is missing."""
    runner = REPO / ".venv-openvino" / "bin" / "python"
    if not runner.exists():
        pytest.skip("the OpenVINO runner venv (.venv-openvino, .ci/setup-openvino.sh) is missing")
    return runner


@pytest.fixture
def qnn_available() -> None:
    try:
        import onnxruntime_qnn  # noqa: F401
    except ImportError:
        pytest.skip("onnxruntime-qnn is not installed")
