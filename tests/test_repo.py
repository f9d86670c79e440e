"""Repository invariants: README commands, CI script, packaging of the data folder."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from .conftest import REPO


def _readme_commands() -> list[str]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    quick = readme.split("## Quick start")[1].split("\n## ")[0]
    return [b.strip() for b in re.findall(r"```sh\n(.*?)```", quick, re.S)]


def test_readme_has_the_two_newcomer_commands() -> None:
    install_run, tests = _readme_commands()[:2]
    assert "pip install" in install_run and "onnxlint examples/demo.onnx" in install_run
    assert "pytest" in tests


def test_ci_runs_exactly_the_readme_test_command() -> None:
    test_cmd = _readme_commands()[1]
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert test_cmd in [line.strip() for line in ci]


def test_demo_model_is_reproducible(tmp_path: Path) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_demo", REPO / "examples" / "build_demo.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.build().SerializeToString() == (REPO / "examples" / "demo.onnx").read_bytes()


@pytest.mark.slow
def test_wheel_ships_the_data_folder_and_works(tmp_path: Path) -> None:
    """Build the wheel, install it alone into a folder, and lint with it from elsewhere."""
    wheel_dir = tmp_path / "wheel"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheel_dir), str(REPO)],
        check=True,
        timeout=300,
    )
    wheel = next(wheel_dir.glob("onnxlint-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {p.name for p in (REPO / "rules").rglob("*.json")}
    assert {n.rsplit("/", 1)[-1] for n in names if n.startswith("onnxlint/_data/")} >= shipped
    assert "onnxlint/py.typed" in names
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        timeout=300,
    )
    probe = (
        "import onnxlint, onnxlint.data as d; "
        "print(onnxlint.__file__); print(d.data_dir()); "
        "from onnxlint.ort_versions import release; print(release('1.20').max_opset)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        env={"PYTHONPATH": str(target), "PATH": ""},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert out[0].startswith(str(target)) and out[1].endswith("_data") and out[2] == "21"
    lint = subprocess.run(
        [
            sys.executable,
            "-m",
            "onnxlint",
            str(REPO / "examples" / "demo.onnx"),
            "--format",
            "json",
        ],
        cwd=tmp_path,
        env={"PYTHONPATH": str(target), "PATH": ""},
        capture_output=True,
        text=True,
    )
    assert lint.returncode in (0, 1), lint.stderr
    assert '"OL105"' in lint.stdout or "OL105" in lint.stdout
