"""Proof by system call: no command opens a file outside the model's folder (issue #20).

Each command runs under ``strace -f -e trace=open,openat`` (children included: the
level-1 and confirmation workers) on a model whose tensors name an outside file in
three ways: an absolute location, a folder symlink inside the model's folder that points
outside, and a plain name that exists only relative to the working directory. The test
fails on any open of that file, whatever the path it was opened by.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from onnx import TensorProto, helper

from tests.hostile.support import REPO

STRACE = shutil.which("strace")
SECRET = "secret-weights.bin"


def _strace_works() -> bool:
    if STRACE is None or not sys.platform.startswith("linux"):
        return False
    probe = subprocess.run(
        [STRACE, "-f", "-e", "trace=openat", "-o", "/dev/null", "true"],
        capture_output=True,
        timeout=30,
        check=False,
    )
    return probe.returncode == 0


pytestmark = pytest.mark.skipif(not _strace_works(), reason="needs strace and ptrace")


def _external(name: str, location: str) -> TensorProto:
    tensor = TensorProto(name=name, data_type=TensorProto.INT64, dims=[] if name == "M" else [2])
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", "8")):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    return tensor


def _hostile(folder: Path, outside: Path) -> Path:
    """benchmarks' Loop model, its trip count and two more constants external, all three
    leading to ``outside/SECRET`` (the trip count by a plain name: the one the partition
    analysis once read relative to the working directory)."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    import partition_models

    (outside / SECRET).write_bytes(bytes(16))
    (folder / "data").symlink_to(outside, target_is_directory=True)
    model = partition_models.loop_with_fallback()
    trips = next(t for t in model.graph.initializer if t.name == "M")
    trips.CopyFrom(_external("M", SECRET))
    for i, ref in enumerate([str(outside / SECRET), f"data/{SECRET}"]):
        const = helper.make_node("Constant", [], [f"unused{i}"], value=_external(f"w{i}", ref))
        model.graph.node.insert(0, const)
    path = folder / "m.onnx"
    path.write_bytes(model.SerializeToString())
    return path


COMMANDS = {
    "lint": ["--format", "json", "--no-progress"],
    "lint-cuda": ["--ep", "cuda", "--report", "partitions", "--format", "json", "--no-progress"],
    "confirm": ["--ep", "cpu", "--confirm", "--no-cache", "--format", "json", "--no-progress"],
    "fix-shapes": None,
    "compile": None,
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_no_command_opens_the_outside_file(tmp_path: Path, command: str) -> None:
    folder, outside = tmp_path / "model", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    model = _hostile(folder, outside)
    if command == "fix-shapes":
        args = ["fix-shapes", str(model), "-o", str(folder / "fixed.onnx"), "--dim", "N=1"]
    elif command == "compile":
        args = ["compile", str(model), "--ep", "qnn", "-o", str(folder / "ctx.onnx")]
    else:
        args = [str(model), *COMMANDS[command]]
    log = tmp_path / "strace.log"
    proc = subprocess.run(
        [
            STRACE or "strace",
            "-f",
            "-e",
            "trace=open,openat",
            "-o",
            str(log),
            sys.executable,
            "-m",
            "onnxlint",
            *args,
        ],
        capture_output=True,
        text=True,
        cwd=outside,  # where a working-directory fallback would find the plain name
        timeout=300,
        check=False,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 1, 2), (proc.returncode, proc.stdout[-2000:], proc.stderr)
    opened = [line for line in log.read_text().splitlines() if SECRET in line]
    assert opened == [], opened
