"""Shared fixtures: models from ONNX text, the onnx package's light models, CLI runner."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

REPO = Path(__file__).resolve().parent.parent


def light_models() -> list[Path]:
    base = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
    return sorted(base.glob("*.onnx"))


def parse(text: str) -> onnx.ModelProto:
    return onnx.parser.parse_model(text)


def run_cli(
    *args: str, cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "onnxlint", *args],
        capture_output=True,
        text=True,
        cwd=cwd or REPO,
        timeout=timeout,
        env=env,
        check=False,
    )


@pytest.fixture
def cli():
    return run_cli
