"""Models and helpers for the training-repo entry points (testing, plugin, baselines, CI formats)."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

REPO = Path(__file__).resolve().parents[2]

#: one error on a named node (OL204 at main/win: HannWindow exists from opset 17, and ORT
#: has no older one of its own, as it has of LayerNormalization), one tensor warning
#: (OL105 unused_w)
BAD_TEXT = """\
<ir_version: 8, opset_import: ["" : 13]>
g (float[1,4] x) => (float[1,4] y)
    <int64 n = {4}, float[2] unused_w = {1.0, 2.0}> {
    [win] w = HannWindow(n)
    [act] y = Mul(x, w)
}
"""

#: the fixed form: the opset that has HannWindow, no unused weight
GOOD_TEXT = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] y)
    <int64 n = {4}> {
    [win] w = HannWindow(n)
    [act] y = Mul(x, w)
}
"""

#: only a warning (OL105), no error
WARN_TEXT = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] y) <float[2] unused_w = {1.0, 2.0}> {
    [act] y = Relu(x)
}
"""


def parse(text: str) -> onnx.ModelProto:
    return onnx.parser.parse_model(text)


def write_model(folder: Path, name: str, text: str, metadata: dict[str, str] | None = None) -> Path:
    """Save ``text`` as a binary .onnx (or ONNX text for .onnxtxt) under ``folder``."""
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".onnxtxt" and not metadata:
        path.write_text(text)
        return path
    model = parse(text)
    if metadata:
        onnx.helper.set_model_props(model, metadata)
    onnx.save(model, path)
    return path


def run_cli(
    *args: str, cwd: Path, subprocess_run: bool = False, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """Run ``onnxlint ARGS`` in ``cwd``; in-process by default (no interpreter start-up).

    ``subprocess_run=True`` runs ``python -m onnxlint`` for the tests that need
    the real process boundary.
    """
    if subprocess_run:
        env = {**os.environ, "NO_COLOR": "1"}
        return subprocess.run(
            [sys.executable, "-m", "onnxlint", *args],
            capture_output=True,
            text=True,
            cwd=cwd,
            timeout=timeout,
            env=env,
            check=False,
        )
    from onnxlint.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:  # argparse exits on usage errors
                code = exc.code if isinstance(exc.code, int) else 2
    finally:
        os.chdir(old)
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


@pytest.fixture(autouse=True)
def _private_session_records(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep this suite's checks out of the plugin's summary of the project's own test run."""
    from onnxlint import testing

    monkeypatch.setattr(testing, "CHECKED", [])


@pytest.fixture
def zoo(tmp_path: Path) -> Path:
    """A small model zoo: one bad, one good, one with only a warning."""
    write_model(tmp_path / "models", "bad.onnxtxt", BAD_TEXT)
    write_model(tmp_path / "models", "good.onnxtxt", GOOD_TEXT)
    write_model(tmp_path / "models", "warn.onnx", WARN_TEXT)
    return tmp_path


def torch_or_skip() -> object:
    """``import torch`` or skip with the reason CI needs to see."""
    return pytest.importorskip(
        "torch", reason="torch is not installed (install the CPU wheel: .ci/torch-tests.sh)"
    )
