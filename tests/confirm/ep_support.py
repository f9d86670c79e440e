"""Which real EPs this machine can confirm on; tests that need one skip, saying why."""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path

import pytest

from onnxlint.runtime.discovery import RunnerInfo, discover
from onnxlint.runtime.runners import resolve_runner

ROOT = Path(__file__).resolve().parents[2]
OPENVINO_PYTHON = ROOT / ".venv-openvino" / "bin" / "python"


@cache
def _info(python: str) -> RunnerInfo:
    return discover(python)


def runner_for(ep: str) -> str:
    if ep == "openvino":
        return str(OPENVINO_PYTHON)
    return resolve_runner(ep, None, root=ROOT) if ep != "cpu" else sys.executable


def require_ep(ep: str) -> str:
    """The interpreter that runs ``ep`` here, or skip the test with the reason."""
    python = runner_for(ep)
    if not Path(python).exists():
        hint = " (run .ci/setup-openvino.sh)" if ep == "openvino" else ""
        pytest.skip(f"no runner interpreter for {ep}: {python}{hint}")
    info = _info(python)
    if not info.ok:
        pytest.skip(f"runner {python} cannot import onnxruntime: {info.error}")
    if not info.has(ep):
        pytest.skip(f"{ep} is not available under {python}; it has {info.providers()}")
    return python
