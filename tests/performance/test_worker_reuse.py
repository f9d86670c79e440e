"""One warm ORT level-1 worker per run (issue 19): a folder starts one worker serially and
at most N with ``-j N``, a worker that crashed or hung is never asked again, and the
output is that of one worker per file."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import onnx
import pytest

from onnxlint import cli
from onnxlint.ep_names import CPU_EP
from onnxlint.runtime import processes
from onnxlint.runtime.batch import WorkerItem
from onnxlint.runtime.client import PendingRun
from onnxlint.runtime.runners import EpSpec
from tests.conftest import parse

MODEL = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,4] x) => (float[N,4] y) {
    r = OP(x)
    y = Identity(r)
}
"""
OPS = ["Relu", "Sigmoid", "Tanh", "Abs", "Neg", "Exp"]


@pytest.fixture
def reuse() -> Iterator[None]:
    processes.set_reuse(True)
    yield
    processes.set_reuse(False)
    assert processes._SPARE is None


def _folder(tmp_path: Path, count: int) -> Path:
    folder = tmp_path / "models"
    folder.mkdir(parents=True)
    for k in range(count):
        onnx.save(parse(MODEL.replace("OP", OPS[k])), str(folder / f"m{k}.onnx"))
    return folder


def _optimize(tmp_path: Path, name: str, model: Path, **payload: object) -> PendingRun:
    item = WorkerItem(
        id=name,
        kind="optimize",
        payload={
            "model_path": str(model),
            "output_path": str(tmp_path / f"{name}.level1.onnx"),
            "optimization": "basic",
            **payload,
        },
    )
    return PendingRun([item], spec=EpSpec(CPU_EP), runner=sys.executable, timeout_s=60)


def _count_starts(monkeypatch: pytest.MonkeyPatch, log: Path) -> None:
    """Append a line to ``log`` for every worker process started, in this process and
    in the ``-j`` lint processes forked from it."""
    original = processes.Worker.__init__

    def counted(self: processes.Worker, *args: object, **kwargs: object) -> None:
        original(self, *args, **kwargs)  # type: ignore[arg-type]
        with open(log, "a") as fh:
            fh.write(f"{os.getpid()} {self.proc.pid}\n")

    monkeypatch.setattr(processes.Worker, "__init__", counted)


ARGS = ["--ep", "qnn", "--isolated", "--no-progress", "--no-cache", "--format", "json"]


def test_a_serial_folder_run_starts_one_worker_and_ends_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _folder(tmp_path, 5)
    # ORT's limits (asked of a worker of their own once per process) are known from here on
    assert cli.main([str(folder / "m0.onnx"), *ARGS]) in (0, 1)
    log = tmp_path / "starts.log"
    _count_starts(monkeypatch, log)
    assert cli.main([str(folder), *ARGS]) in (0, 1)
    assert len(log.read_text().splitlines()) == 1  # one worker answered all five models
    assert processes._SPARE is None and not processes.reuse_enabled()
    assert not processes._WORKERS  # and it was ended with the run


def test_jobs_2_starts_at_most_two_workers_and_prints_what_serial_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _folder(tmp_path, 6)
    log = tmp_path / "starts.log"
    _count_starts(monkeypatch, log)
    serial = cli.main([str(folder), *ARGS])  # ORT's limits are known from here on
    out_serial = capsys.readouterr().out
    log.unlink()
    parallel = cli.main([str(folder), *ARGS, "-j", "2"])
    assert (serial, out_serial) == (parallel, capsys.readouterr().out)
    starts = log.read_text().splitlines()
    lint_processes = {line.split()[0] for line in starts}
    assert str(os.getpid()) not in lint_processes  # the lints ran in the pool ...
    assert 1 <= len(starts) <= 2  # ... with one warm worker each, not one per model
    assert len(lint_processes) == len(starts)
    for line in starts if sys.platform == "linux" else []:  # each ended with its process
        assert _ended(int(line.split()[1])), line


def _ended(pid: int, wait_s: float = 10.0) -> bool:
    """Whether ``pid`` is gone or a zombie (its parent, a pool process, has exited)."""
    import time

    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def test_a_worker_that_answered_is_kept_and_answers_the_next_model(
    tmp_path: Path, reuse: None
) -> None:
    folder = _folder(tmp_path, 2)
    first = _optimize(tmp_path, "a", folder / "m0.onnx")
    worker = first.worker
    assert worker is not None
    pid = worker.proc.pid
    assert first.result()[0].ok
    # handed over, not cloned: the run forgot it and the spare is that very object
    assert first.worker is None
    assert processes._SPARE is not None and processes._SPARE[0] is worker
    second = _optimize(tmp_path, "b", folder / "m1.onnx")
    assert second.worker is not None and second.worker.proc.pid == pid
    res = second.result()[0]
    assert res.ok and res.worker_pid == pid
    assert (tmp_path / "b.level1.onnx").exists()


def test_an_ort_refusal_keeps_the_worker(tmp_path: Path, reuse: None) -> None:
    (tmp_path / "bad.onnx").write_bytes(b"not a model")
    first = _optimize(tmp_path, "a", tmp_path / "bad.onnx")
    res = first.result()[0]
    assert not res.ok and res.status == "error"  # ORT said no: the process is fine
    assert processes._SPARE is not None and processes._SPARE[0].proc.poll() is None


@pytest.mark.parametrize("fault", ["sigkill", "exit", "oom"])
def test_a_worker_that_failed_is_not_asked_again(tmp_path: Path, reuse: None, fault: str) -> None:
    folder = _folder(tmp_path, 2)
    warm = _optimize(tmp_path, "warm", folder / "m0.onnx")
    assert warm.result()[0].ok
    assert processes._SPARE is not None
    kept = processes._SPARE[0].proc.pid
    broken = _optimize(tmp_path, "broken", folder / "m0.onnx", fault=fault)
    assert broken.worker is not None and broken.worker.proc.pid == kept
    assert not broken.result()[0].ok
    assert processes._SPARE is None  # the failed process is not kept ...
    with pytest.raises(ProcessLookupError):
        os.kill(kept, 0)  # ... and is gone
    after = _optimize(tmp_path, "after", folder / "m1.onnx")
    assert after.worker is not None and after.worker.proc.pid != kept
    assert after.result()[0].ok  # the next model gets a fresh worker


def test_a_kept_worker_that_died_idle_is_replaced(tmp_path: Path, reuse: None) -> None:
    folder = _folder(tmp_path, 2)
    assert _optimize(tmp_path, "a", folder / "m0.onnx").result()[0].ok
    assert processes._SPARE is not None
    spare = processes._SPARE[0]
    spare.kill()  # killed while it waited for the next request
    after = _optimize(tmp_path, "b", folder / "m1.onnx")
    assert after.worker is not None and after.worker.proc.pid != spare.proc.pid
    assert after.result()[0].ok


def test_a_worker_is_retired_after_max_requests(
    tmp_path: Path, reuse: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(processes, "MAX_REQUESTS", 2)
    folder = _folder(tmp_path, 3)
    pids = []
    for k in range(3):
        run = _optimize(tmp_path, f"r{k}", folder / f"m{k}.onnx")
        assert run.worker is not None
        pids.append(run.worker.proc.pid)
        assert run.result()[0].ok
    assert pids[0] == pids[1] != pids[2]


def test_the_worker_that_measured_orts_limits_builds_the_first_level1_graph(
    tmp_path: Path, reuse: None
) -> None:
    from onnxlint.runtime.batch import run_items

    (res,) = run_items(
        [WorkerItem(id="limits", kind="limits")], spec=EpSpec(CPU_EP), runner=sys.executable
    )
    assert res.ok and processes._SPARE is not None
    kept = processes._SPARE[0].proc.pid
    run = _optimize(tmp_path, "a", _folder(tmp_path, 1) / "m0.onnx")
    assert run.worker is not None and run.worker.proc.pid == kept
    assert run.result()[0].ok


def test_a_kept_workers_stderr_starts_afresh_for_its_next_request(
    tmp_path: Path, reuse: None
) -> None:
    first = _optimize(tmp_path, "a", _folder(tmp_path, 1) / "m0.onnx")
    assert first.worker is not None
    first.worker.stderr_file.write(b"what the first request left on stderr\n")
    assert first.result()[0].ok
    assert processes._SPARE is not None
    # a failure of the next request reports its own stderr, not the first one's
    assert processes._SPARE[0].stderr_tail() == []
