"""The first lint of a model (issue 19, cold): one ORT worker for the whole lint, started
before onnx is imported, that answers ORT's limits first and then the level-1 graph.

Measured on the fixed costs of ``onnxlint --ep qnn MODEL`` with ``ONNXLINT_NO_CACHE=1``:
the CLI's head start imported onnx before it started its worker (the level-1 package
re-exported eligibility, which imports onnx), the one-file run then ended that worker
unused (turning worker reuse off drops the spare), and the opset rules started a second
worker for ORT's limits: three worker starts and three ``import onnxruntime`` on two
cores. Counted here, never timed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

from onnxlint import ort_versions
from onnxlint.runtime import processes
from onnxlint.runtime.identity import ort_identity
from tests.conftest import parse

REPO = Path(__file__).resolve().parents[2]

#: a model ORT's level-1 optimizers may change (a Relu and an Identity): it needs the worker
MODEL = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,4] x) => (float[N,4] y) {
    r = Relu(x)
    y = Identity(r)
}
"""

#: runs the CLI in a fresh interpreter and prints, for every worker started, whether onnx
#: was imported at that moment and whether it was started with a preface request
PROBE = """
import json, sys
from onnxlint.runtime import processes
starts = []
original = processes.Worker.__init__
def counted(self, *args, **kwargs):
    starts.append({"onnx": "onnx" in sys.modules, "preface": kwargs.get("preface") is not None})
    original(self, *args, **kwargs)
processes.Worker.__init__ = counted
from onnxlint.cli import main
code = main(sys.argv[1:])
sys.stdout.flush()
print("\\nPROBE " + json.dumps({"code": code, "starts": starts}))
"""

needs_ort = pytest.mark.skipif(ort_identity() is None, reason="onnxruntime is not installed")


def _run_cli(tmp_path: Path, *args: str, no_cache: bool = True) -> dict[str, object]:
    env = dict(os.environ, PYTHONPATH=str(REPO), ONNXLINT_CACHE_DIR=str(tmp_path / "cache"))
    env["ONNXLINT_NO_CACHE"] = "1" if no_cache else "0"
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
        check=False,
    )
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("PROBE ")]
    assert lines, done.stderr
    result: dict[str, object] = json.loads(lines[-1][len("PROBE ") :])
    return result


def _model_file(tmp_path: Path) -> Path:
    path = tmp_path / "m.onnx"
    onnx.save(parse(MODEL), str(path))
    return path


@needs_ort
def test_a_cold_one_file_lint_starts_one_worker_before_onnx_is_imported(tmp_path: Path) -> None:
    model = _model_file(tmp_path)
    got = _run_cli(tmp_path, str(model), "--ep", "qnn", "--isolated", "--format", "json")
    assert got["code"] in (0, 1)
    # one worker: the head start, taken by the level-1 job, that also answered the limits
    assert got["starts"] == [{"onnx": False, "preface": True}]


def _without_paths(value: object) -> object:
    if isinstance(value, dict):
        return {k: _without_paths(v) for k, v in value.items() if k != "path"}
    if isinstance(value, list):
        return [_without_paths(v) for v in value]
    return value


@needs_ort
def test_a_cold_lint_says_the_same_with_and_without_the_head_start(tmp_path: Path) -> None:
    """One file (the head start's worker answers the limits and the level-1 graph) and the
    same file among two (no head start: a worker for each) give the same report."""
    model = _model_file(tmp_path)
    twin = tmp_path / "twin"
    twin.mkdir()
    (twin / "m.onnx").write_bytes(model.read_bytes())
    flags = ["--ep", "qnn", "--isolated", "--format", "json", "--no-progress"]
    env = dict(os.environ, PYTHONPATH=str(REPO), ONNXLINT_NO_CACHE="1")

    def lint(*paths: Path) -> list[object]:
        out = subprocess.run(
            [sys.executable, "-m", "onnxlint", *map(str, paths), *flags],
            capture_output=True, text=True, env=env, timeout=300, check=False,
        )  # fmt: skip
        files = json.loads(out.stdout)["files"]
        return [_without_paths(f) for f in files]

    alone = lint(model)
    together = lint(model, twin / "m.onnx")
    assert alone == together[:1]


@needs_ort
def test_the_preface_answers_the_limits_a_worker_of_their_own_measures(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the disk cache off: an earlier test of the session may have stored the limits there
    monkeypatch.setenv("ONNXLINT_NO_CACHE", "1")
    ort_versions._memo.clear()
    request = ort_versions.limits_preface()
    assert request is not None  # nothing in memory, and the disk cache is off
    try:
        assert processes.prewarm(preface=request)
        spare = processes._SPARE
        assert spare is not None and spare[0].serving
        from_preface = ort_versions._prefaced_limits()
        assert from_preface is not None
        assert not Path(request["log_dir"]).exists()  # the preface's folder, once answered
        assert ort_versions._prefaced_limits() is None  # handed out once
        # a second head start while the spare waits starts nothing and leaves no folder
        again = ort_versions.limits_preface()
        assert again is not None and processes.prewarm(preface=again)
        assert not Path(again["log_dir"]).exists()
        # the spare still takes a request after its preface: it skips the preface's lines
        from onnxlint.runtime.batch import WorkerItem, run_items
        from onnxlint.runtime.runners import EpSpec

        before = processes.STARTED
        res = run_items(
            [WorkerItem(id="again", kind="limits")], spec=EpSpec("CPUExecutionProvider"),
            runner=sys.executable,
        )[0]  # fmt: skip
        assert before == processes.STARTED  # the spare answered it
        assert res.ok and res.request_id == "again"
        assert ort_versions._valid_limits(res.facts.get("limits")) == from_preface
        assert ort_versions.limits_of() == from_preface  # and a worker of their own (a new one)
        assert before + 1 == processes.STARTED
    finally:
        processes.drop_spare()
        ort_versions._memo.clear()


def test_no_preface_when_the_limits_are_known() -> None:
    identity = ort_identity()
    if identity is None:
        assert ort_versions.limits_preface() is None
        return
    key = json.dumps(identity, sort_keys=True)
    ort_versions._memo[key] = {"max_opset": 21, "ml_opset": 5, "max_ir": 10, "providers": []}
    try:
        assert ort_versions.limits_preface() is None
    finally:
        ort_versions._memo.pop(key, None)


def test_the_head_start_imports_neither_onnx_nor_the_worker_client() -> None:
    """What the CLI imports before it can start ORT's worker: no onnx, no numpy."""
    code = (
        "import sys\n"
        "import onnxlint.analyses.level1.prewarm\n"
        "import onnxlint.runtime\n"
        "print(sorted(m for m in ('onnx', 'numpy', 'onnxlint.runtime.client') if m in sys.modules))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.strip() == "[]"
