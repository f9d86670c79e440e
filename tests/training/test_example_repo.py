"""examples/training-repo and .pre-commit-hooks.yaml: the recipes, run as CI would run them.

The YAML files are parsed and their onnxlint commands executed; the outputs are
checked in the exact formats (SARIF against the 2.1.0 schema, annotation lines
by pattern). The end-to-end run (export script + the example's own pytest) needs
torch and is marked ``torch``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import REPO, run_cli
from .test_ci_formats import _check_code_scanning, _errors

yaml = pytest.importorskip("yaml", reason="PyYAML is not installed (it is in the test extra)")

EXAMPLE = REPO / "examples" / "training-repo"
WORKFLOWS = EXAMPLE / ".github" / "workflows"
ANNOTATION = re.compile(r"^::(error|warning|notice) file=[^,:]+,title=OL\d{3} [a-z0-9-]+::\S.*$")


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


@pytest.fixture
def example(tmp_path: Path) -> Path:
    """A scratch copy of the example repo (tests never write into the source tree)."""
    dest = tmp_path / "training-repo"
    shutil.copytree(
        EXAMPLE, dest, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", "*.pyc")
    )
    return dest


def test_hook_definition() -> None:
    (hook,) = _load(REPO / ".pre-commit-hooks.yaml")
    assert hook["id"] == "onnxlint"
    assert hook["entry"] == "onnxlint"
    assert hook["language"] == "python"
    files = re.compile(hook["files"])
    for name in ("model.onnx", "zoo/a/b.onnxtxt"):
        assert files.search(name), name
    for name in ("model.onnx.data", "weights.bin", "model.onnxtxt.bak", "export.py"):
        assert not files.search(name), name


def test_example_pre_commit_config_runs_the_hook(example: Path) -> None:
    (repo,) = _load(example / ".pre-commit-config.yaml")["repos"]
    assert repo["repo"].endswith("/onnxlint")
    (hook,) = repo["hooks"]
    assert hook["id"] == "onnxlint"
    # what pre-commit runs: the hook's entry, its args, then the matching staged files
    res = run_cli(*hook["args"], "models/legacy.onnxtxt", cwd=example)
    assert res.returncode == 0, res.stdout + res.stderr  # the repo's per-file ignore applies


def _onnxlint_steps(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    steps = [s for job in workflow["jobs"].values() for s in job["steps"]]
    return [s for s in steps if str(s.get("run", "")).startswith("onnxlint ")]


def test_code_scanning_recipe(example: Path) -> None:
    wf = _load(WORKFLOWS / "onnxlint-code-scanning.yml")
    assert wf["permissions"]["security-events"] == "write"
    (lint,) = _onnxlint_steps(wf)
    args = shlex.split(lint["run"])[1:]
    assert args[args.index("--format") + 1] == "sarif"
    out = args[args.index("--output") + 1]
    steps = [s for job in wf["jobs"].values() for s in job["steps"]]
    upload = next(
        s for s in steps if str(s.get("uses", "")).startswith("github/codeql-action/upload-sarif@")
    )
    assert upload["with"]["sarif_file"] == out
    # run the recipe's command; a finding so that there is a result to check
    (example / "models" / "new.onnxtxt").write_text(
        (example / "models" / "legacy.onnxtxt").read_text()
    )
    res = run_cli(*args, cwd=example)
    assert res.returncode == 0, res.stderr  # warnings only: the workflow would go on
    doc = json.loads((example / out).read_text())
    assert _errors(doc) == []
    _check_code_scanning(doc)
    uris = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for r in doc["runs"][0]["results"]
    }
    assert uris == {"models/new.onnxtxt"}  # legacy's finding is silenced by per-file-ignores


def test_annotations_recipe(example: Path) -> None:
    wf = _load(WORKFLOWS / "onnxlint-annotations.yml")
    (lint,) = _onnxlint_steps(wf)
    args = shlex.split(lint["run"])[1:]
    assert args[args.index("--format") + 1] == "github"
    (example / "models" / "new.onnxtxt").write_text(
        (example / "models" / "legacy.onnxtxt").read_text()
    )
    res = run_cli(*args, cwd=example)
    lines = res.stdout.splitlines()
    # exact line for the known finding; every other line (rules added later) in the same format
    assert (
        "::warning file=models/new.onnxtxt,title=OL105 unused-initializer::"
        "tensor 'old_scale': initializer 'old_scale' is never used (2 elements)"
    ) in lines
    assert all(ANNOTATION.match(line) for line in lines), lines
    # the CPU wheel only: the torch install step names the CPU index
    runs = [str(s.get("run", "")) for job in wf["jobs"].values() for s in job["steps"]]
    assert any("pip install torch" in r and "/whl/cpu" in r for r in runs)


@pytest.mark.torch
@pytest.mark.slow
def test_example_repo_end_to_end(example: Path) -> None:
    pytest.importorskip(
        "torch", reason="torch is not installed (install the CPU wheel: .ci/torch-tests.sh)"
    )
    exported = subprocess.run(
        [sys.executable, "export.py", "--ep", "qnn", "--out", "models/tinynet.onnx"],
        cwd=example,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert exported.returncode == 0, exported.stdout + exported.stderr
    assert "export with opset_version=" in exported.stdout
    assert (example / "models" / "tinynet.onnx").is_file()
    # the export left nothing but the model behind
    assert sorted(p.name for p in (example / "models").iterdir()) == [
        "legacy.onnxtxt",
        "tinynet.onnx",
    ]

    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--onnxlint-ep", "qnn"],
        cwd=example,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "2 passed" in tests.stdout
    assert "= onnxlint =" in tests.stdout
    assert "tinynet.onnx: " in tests.stdout

    lint = run_cli("models", "--ep", "qnn", "--format", "github", cwd=example)
    assert lint.returncode == 0, lint.stdout + lint.stderr


@pytest.mark.slow
def test_hook_under_pre_commit(tmp_path: Path) -> None:
    """The real thing: ``pre-commit try-repo`` builds the hook from this repository and runs it."""
    pytest.importorskip("pre_commit", reason="pre-commit is not installed (pip install pre-commit)")
    if not (REPO / ".git").exists() or shutil.which("git") is None:
        pytest.skip("needs this repository as a git checkout and the git command")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "bad.onnxtxt").write_text(
        (REPO / "examples" / "training-repo" / "models" / "legacy.onnxtxt")
        .read_text()
        .replace('"" : 13', '"" : 99')
    )
    (repo / "notes.txt").write_text("not a model")

    def run(*cmd: str) -> subprocess.CompletedProcess[str]:
        # pre-commit builds the hook's environment under PRE_COMMIT_HOME: keep it in tmp
        env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}
        return subprocess.run(
            cmd, cwd=repo, capture_output=True, text=True, timeout=900, check=False, env=env
        )

    run("git", "init", "-q")
    run("git", "add", "bad.onnxtxt", "notes.txt")
    res = run(sys.executable, "-m", "pre_commit", "try-repo", str(REPO), "onnxlint", "--all-files")
    assert res.returncode == 1, res.stdout + res.stderr  # the hook ran and found the error
    assert "OL201" in res.stdout
    assert "notes.txt" not in res.stdout  # only models are passed to the hook
