"""ORT workers never leak (issue #20, item 5).

Under a hard ``ulimit -v`` lower than the worker's cap no worker started (raising
``RLIMIT_AS`` failed inside ``preexec_fn``): OL099 in the partition rules and ~6 empty
worker-log folders left in ``$TMPDIR`` per lint. SIGTERM or SIGKILL of onnxlint during
``--confirm`` orphaned the worker and left temp folders, one holding a copy of the model.
"""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from onnx import TensorProto, helper

from onnxlint import lintdeps
from onnxlint.runtime import client, processes
from onnxlint.runtime.results import STATUS_CRASH, STATUS_ERROR, STATUS_TIMEOUT, SessionResult
from tests.hostile import support as s

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="rlimits, process groups and /proc: Linux"
)

#: a hard address-space limit below the worker's default cap (8 GiB), above what
#: Python with onnx and onnxruntime maps
HARD_LIMIT = 4 * 2**30


def _loop_model(path: Path) -> None:
    sys.path.insert(0, str(s.REPO / "benchmarks"))
    import partition_models

    path.write_bytes(partition_models.loop_with_fallback().SerializeToString())


def _ours(tmpdir: Path) -> list[str]:
    return sorted(p.name for p in tmpdir.iterdir() if p.name.startswith("onnxlint-"))


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _gone(pid: int, patience_s: float = 60.0) -> bool:
    """Whether ``pid`` ends within a generous patience (a bound, not a timing claim)."""
    end = time.monotonic() + patience_s
    while _alive(pid):
        if time.monotonic() > end:
            return False
        time.sleep(0.1)
    return True


def _hard_limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (HARD_LIMIT, HARD_LIMIT))


@pytest.mark.parametrize("extra", [["--ep", "qnn"], ["--ep", "cpu", "--confirm", "--no-cache"]])
def test_workers_start_under_a_lower_hard_limit(tmp_path: Path, extra: list[str]) -> None:
    model = tmp_path / "m.onnx"
    _loop_model(model)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "onnxlint",
            str(model),
            *extra,
            "--format",
            "json",
            "--no-progress",
            "--fail-on",
            "error",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
        check=False,
        preexec_fn=_hard_limit,
        env={**os.environ, "TMPDIR": str(tmpdir)},
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    codes = [d["code"] for f in json.loads(proc.stdout)["files"] for d in f["diagnostics"]]
    assert "OL099" not in codes, proc.stdout
    assert "OL903" not in codes, proc.stdout
    if "--confirm" in extra:
        assert "OL905" in codes, codes  # the session ran
    assert _ours(tmpdir) == []


def test_worker_limit_respects_the_hard_limit() -> None:
    """The worker's (soft, hard) never exceeds the parent's hard limit."""
    script = (
        "import resource, sys\n"
        "from onnxlint.runtime.processes import worker_address_limit\n"
        f"resource.setrlimit(resource.RLIMIT_AS, ({HARD_LIMIT}, {HARD_LIMIT}))\n"
        "print(worker_address_limit(8192), worker_address_limit(1024), worker_address_limit(None))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    ).stdout.split(") ")
    assert out[0] == f"({HARD_LIMIT}, {HARD_LIMIT}"
    assert out[1] == f"({1024 * 2**20}, {1024 * 2**20}"
    assert out[2].strip() == "None"


#: (a shell runs background jobs with SIGINT ignored, and Python then keeps it ignored: the
#: script restores Python's own handler, as an interactive onnxlint has it)
_HUNG_SESSION = """
import signal, sys, threading, time
signal.signal(signal.SIGINT, signal.default_int_handler)
from onnxlint.runtime import client, processes
from onnxlint.runtime.results import STATUS_CRASH, STATUS_ERROR, STATUS_TIMEOUT, SessionResult

def report():
    while not processes._WORKERS or not processes._TEMP_DIRS:
        time.sleep(0.05)
    print(next(iter(processes._WORKERS)).proc.pid, flush=True)

threading.Thread(target=report, daemon=True).start()
model = open(sys.argv[1], "rb").read()
client.run_sessions(
    [client.SessionRequest(model, fault="hang")], "cpu", runner=sys.executable, timeout_s=600
)
"""


def _start_hung(tmp_path: Path) -> tuple[subprocess.Popen[str], int, Path]:
    model = tmp_path / "m.onnx"
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    model.write_bytes(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    )
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-c", _HUNG_SESSION, str(model)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "TMPDIR": str(tmpdir)},
        start_new_session=True,
    )
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], 120)
    if not ready:  # never hang the test run: end the script and whatever it started
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        pytest.fail("the script never reported its worker")
    pid = int(proc.stdout.readline())
    assert _alive(pid)
    # the model copy handed to the worker
    assert any(n.startswith("onnxlint-models-") for n in _ours(tmpdir)), _ours(tmpdir)
    return proc, pid, tmpdir


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_ends_the_worker_and_removes_temp_folders(tmp_path: Path, sig: int) -> None:
    proc, worker, tmpdir = _start_hung(tmp_path)
    proc.send_signal(sig)
    proc.wait(timeout=120)
    assert proc.returncode != 0
    if sig == signal.SIGTERM:
        assert proc.returncode == -signal.SIGTERM  # and died of the same signal
    assert _gone(worker), f"worker {worker} outlived its parent"
    assert _ours(tmpdir) == []


def test_sigkill_ends_the_worker_and_the_next_run_sweeps(tmp_path: Path) -> None:
    proc, worker, tmpdir = _start_hung(tmp_path)
    proc.kill()
    proc.wait(timeout=120)
    assert _gone(worker), "PR_SET_PDEATHSIG should end the worker with its parent"
    left = _ours(tmpdir)
    assert left, "a SIGKILLed process cannot clean up; the next one sweeps"
    processes._sweep_stale_temp_dirs(tmpdir)
    assert _ours(tmpdir) == []


def test_sweep_keeps_folders_of_live_processes_and_others(tmp_path: Path) -> None:
    mine = tmp_path / f"onnxlint-models-{os.getpid()}-abc"
    live = tmp_path / f"onnxlint-worker-logs-{os.getppid()}-abc"
    other = tmp_path / "onnxlint-unrelated-1-abc"
    for p in (mine, live, other):
        p.mkdir()
    processes._sweep_stale_temp_dirs(tmp_path)
    assert mine.exists() and live.exists() and other.exists()


class _FailedRun:
    """What ``start_optimize`` hands back when its worker hung (or crashed) on the model."""

    def __init__(self, status: str, error: str) -> None:
        self.status, self.error = status, error

    def result(self) -> list[SessionResult]:
        return [
            SessionResult(
                request_id="level1", status=self.status, provider="CPUExecutionProvider",
                error=self.error,
            )
        ]  # fmt: skip

    def cancel(self) -> None:
        pass


@pytest.mark.parametrize(
    ("status", "error", "says"),
    [
        (STATUS_TIMEOUT, "no result within 120 s; worker killed", "within 120 s"),
        (STATUS_CRASH, "worker killed by signal SIGSEGV while on this request", "crashed"),
        (STATUS_ERROR, "[ONNXRuntimeError] : 1 : FAIL : Load model failed", None),
    ],
)
def test_a_failed_level1_worker_has_its_own_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: str, error: str, says: str | None
) -> None:
    """A hung level-1 worker cost its 120 s silently; ORT's own refusal is no OL605."""
    import onnxlint

    monkeypatch.setenv("ONNXLINT_NO_CACHE", "1")
    monkeypatch.setattr(client, "start_optimize", lambda *a, **k: _FailedRun(status, error))
    model = tmp_path / "m.onnx"
    _loop_model(model)
    with lintdeps.recording() as deps:
        report = onnxlint.lint(model, eps=["qnn"])
    found = [d for d in report.diagnostics if d.code == "OL605"]
    assert "OL099" not in {d.code for d in report.diagnostics}
    if says is None:
        assert found == []
        assert deps.volatile == []  # ORT's refusal is the model's: a report cache may keep it
    else:
        assert len(found) == 1 and says in found[0].message, found
        assert found[0].message_id == status
        # the worker's failure may not happen next time: no report cache keeps this report
        assert deps.volatile == [f"ORT's level-1 worker: {status}"]


def test_a_built_level1_graph_has_no_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import onnxlint

    monkeypatch.setenv("ONNXLINT_NO_CACHE", "1")
    model = tmp_path / "m.onnx"
    _loop_model(model)
    report = onnxlint.lint(model, eps=["qnn"])
    assert report.stats.get("partition_level") == "optimized"
    assert "OL605" not in {d.code for d in report.diagnostics}
