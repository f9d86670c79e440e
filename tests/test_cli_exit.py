"""``onnxlint`` as a command exits without interpreter teardown (``cli.run``): same output, same codes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

from onnxlint import cli
from tests.conftest import parse

MODEL = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,4] x) => (float[N,4] y) {
    y = Relu(x)
}
"""


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "m.onnx"
    onnx.save(parse(MODEL), path)
    return path


def _command(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "onnxlint", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("extra", "code"),
    [
        ([], 0),
        (["--fail-on", "hint"], 1),
        (["--format", "json"], 0),
        # N is dynamic: a QNN warning (its nodes run on CPU), at or above --fail-on
        (["--ep", "qnn", "--format", "sarif", "--fail-on", "warning"], 1),
        (["MISSING"], 2),
    ],
    ids=["clean", "findings", "json", "sarif-qnn", "missing-file"],
)
def test_command_output_and_exit_code_match_main(
    model: Path, extra: list[str], code: int, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = [str(model.parent / "missing.onnx") if "MISSING" in extra else str(model)]
    args = [*paths, "--isolated", "--no-progress", *(a for a in extra if a != "MISSING")]
    proc = _command(*args)
    assert cli.main(args) == code
    out = capsys.readouterr().out
    assert proc.returncode == code, proc.stderr
    assert proc.stdout == out
    assert proc.stdout.strip()  # flushed before the hard exit


def test_output_file_is_complete(model: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    proc = _command(str(model), "--isolated", "--format", "json", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.read_text().rstrip().endswith("}")


def test_subcommands_exit_the_ordinary_way() -> None:
    proc = _command("rules")
    assert proc.returncode == 0 and "OL101" in proc.stdout
