"""``-j N`` (issue 19): the lint processes are forked from the CLI with its imports, the
largest files are handed out first, each process starts its ORT level-1 worker at once
only when a file is likely cold, and a warm folder starts no worker at all."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import onnx
import pytest

from onnxlint import cli, engine
from onnxlint.analyses.level1.prewarm import likely_cold
from onnxlint.cli import lint as cli_lint
from onnxlint.config import Config
from onnxlint.runtime import processes
from tests.conftest import parse
from tests.performance.test_worker_reuse import MODEL, OPS, _count_starts

ARGS = ["--ep", "qnn", "--isolated", "--no-progress", "--format", "json"]
forking = pytest.mark.skipif(sys.platform != "linux", reason="fork start method (Linux)")


def _folder(tmp_path: Path, sizes: list[int]) -> list[Path]:
    """Models whose files grow with ``sizes`` (a doc string pads them)."""
    folder = tmp_path / "models"
    folder.mkdir()
    paths = []
    for k, pad in enumerate(sizes):
        model = parse(MODEL.replace("OP", OPS[k]))
        model.doc_string = "x" * pad
        path = folder / f"m{k}.onnx"
        onnx.save(model, str(path))
        paths.append(path)
    return paths


def _log_calls(
    monkeypatch: pytest.MonkeyPatch, log: Path, name: str, what: Callable[[], str]
) -> None:
    """Append ``pid what()`` to ``log`` whenever ``cli_lint.<name>`` runs (in this
    process and in the lint processes forked from it)."""
    original = getattr(cli_lint, name)

    def logged(*args: Any, **kwargs: Any) -> Any:
        with open(log, "a") as fh:
            fh.write(f"{os.getpid()} {what()}\n")
        return original(*args, **kwargs)

    monkeypatch.setattr(cli_lint, name, logged)


def test_the_largest_files_are_handed_out_first_ties_in_order(tmp_path: Path) -> None:
    paths = _folder(tmp_path, [10, 3000, 10, 500])
    jobs: list[tuple[Path, Any]] = [(p, None) for p in paths]
    jobs.append((tmp_path / "gone.onnx", None))  # unreadable: last, not an error
    assert cli_lint.schedule(jobs) == [1, 3, 0, 2, 4]


_MADE_AT_RUN_TIME = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[N] x) => (float[4096, 4096] y) {
    shape = Constant <value = int64[2] {4096, 4096}> ()
    w = ConstantOfShape <value = float16[1] {1}> (shape)
    wf = Cast <to = 1> (w)
    y = Add (wf, x)
}
"""


def test_weights_made_at_run_time_are_handed_out_first_when_orts_folding_will_make_them(
    tmp_path: Path,
) -> None:
    paths = _folder(tmp_path, [10, 300_000])
    made = tmp_path / "models" / "made.onnx"
    onnx.save(parse(_MADE_AT_RUN_TIME), str(made))
    assert made.stat().st_size < paths[1].stat().st_size  # the smallest file of the three
    jobs: list[tuple[Path, Any]] = [(p, None) for p in (*paths, made)]
    # 16 Mi float16 elements folded, 32 MiB: with a level-1 worker, the longest lint
    assert cli_lint.schedule(jobs, worker=True) == [2, 1, 0]
    # its graph cached: by size alone (no file is parsed for the guess)
    assert cli_lint.schedule(jobs, worker=False) == [1, 2, 0]


def test_folded_bytes_counts_constant_shapes_only() -> None:
    from onnxlint.analyses.level1.prewarm import folded_bytes

    assert folded_bytes(parse(_MADE_AT_RUN_TIME).graph) == 4096 * 4096 * 2
    as_initializer = parse(
        """\
<ir_version: 8, opset_import: ["" : 17]>
g (int64[2] dynamic) => (float[2, 3] a, int8[5] b, float[M, K] c) {
    a = ConstantOfShape (two_by_three)
    b = ConstantOfShape <value = int8[1] {1}> (five)
    c = ConstantOfShape (dynamic)
    d = ConstantOfShape (negative)
}
"""
    )
    for name, dims in (("two_by_three", [2, 3]), ("five", [5]), ("negative", [-1, 2])):
        as_initializer.graph.initializer.append(
            onnx.helper.make_tensor(name, onnx.TensorProto.INT64, [len(dims)], dims)
        )
    # float32 zeros by default; int8 from the value; a graph input's or a negative dim: none
    assert folded_bytes(as_initializer.graph) == 2 * 3 * 4 + 5


class _InlinePool:
    """A stand-in for ProcessPoolExecutor that runs each call at submission, in order."""

    submitted: list[str] = []
    kwargs: dict[str, Any] = {}

    def __init__(self, **kwargs: Any) -> None:
        type(self).kwargs = kwargs

    def __enter__(self) -> _InlinePool:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        type(self).submitted.append(args[0].name)
        fut: Future[Any] = Future()
        fut.set_result(f"report of {args[0].name}")
        return fut


def test_jobs_submits_largest_first_and_returns_the_reports_in_file_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import concurrent.futures

    paths = _folder(tmp_path, [10, 3000, 200])
    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", _InlinePool)
    _InlinePool.submitted = []
    args = argparse.Namespace(jobs=2, eps=["qnn"], no_cache=True, assume_dims=None)
    jobs = [(p, Config()) for p in paths]
    # no report cache slots (caches off): every file is linted, by the pool
    reports = cli_lint._lint_all(args, jobs, [(None, None)] * len(jobs), show=False)
    assert _InlinePool.submitted == ["m1.onnx", "m2.onnx", "m0.onnx"]
    assert reports == ["report of m0.onnx", "report of m1.onnx", "report of m2.onnx"]
    assert _InlinePool.kwargs["max_workers"] == 2
    if sys.platform == "linux":
        assert _InlinePool.kwargs["mp_context"].get_start_method() == "fork"


@forking
def test_lint_processes_start_with_the_clis_imports(
    tmp_path: Path, restore: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _folder(tmp_path, [10, 20, 30, 40])
    log = tmp_path / "init.log"
    # what a pool process has imported before it runs anything of its own
    _log_calls(
        monkeypatch,
        log,
        "lint_process_init",
        lambda: " ".join(str(m in sys.modules) for m in ("onnx", "onnxlint.engine")),
    )
    assert cli.main([str(tmp_path / "models"), *ARGS, "--no-cache", "-j", "2"]) in (0, 1)
    lines = log.read_text().splitlines()
    assert len(lines) == 2  # one initializer call per lint process ...
    assert {line.split(maxsplit=1)[1] for line in lines} == {"True True"}  # ... inherited
    assert str(os.getpid()) not in {line.split()[0] for line in lines}


@forking
def test_a_warm_folder_with_jobs_starts_no_worker(
    tmp_path: Path,
    restore: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("ONNXLINT_CACHE_DIR", str(tmp_path / "cache"))
    _folder(tmp_path, [10, 20, 30, 40])
    folder = str(tmp_path / "models")
    assert cli.main([folder, *ARGS]) in (0, 1)  # fills the cache (graphs, hints, limits)
    serial = capsys.readouterr().out
    log = tmp_path / "starts.log"
    _count_starts(monkeypatch, log)
    assert cli.main([folder, *ARGS, "-j", "2"]) in (0, 1)
    assert capsys.readouterr().out == serial
    assert not log.exists()  # no spare started "just in case" in the lint processes


@forking
def test_a_cold_folder_with_jobs_starts_one_worker_per_process_before_its_first_lint(
    tmp_path: Path, restore: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from onnxlint import ort_versions

    _folder(tmp_path, [10, 20, 30, 40])
    # every lint process asks ORT's limits too, as a fresh CLI does: the same worker answers
    monkeypatch.setenv("ONNXLINT_NO_CACHE", "1")
    monkeypatch.setattr(ort_versions, "_memo", {})
    log = tmp_path / "events.log"
    lint = engine.lint  # what each file's job calls, in its lint process

    def logged(*args: Any, **kwargs: Any) -> Any:
        with open(log, "a") as fh:
            fh.write(f"{os.getpid()} lint\n")
        return lint(*args, **kwargs)

    monkeypatch.setattr(engine, "lint", logged)
    _count_starts(monkeypatch, log)  # "pid worker-pid" lines
    assert cli.main([str(tmp_path / "models"), *ARGS, "--no-cache", "-j", "2"]) in (0, 1)
    events: dict[str, list[str]] = {}
    for line in log.read_text().splitlines():
        pid, what = line.split()
        events.setdefault(pid, []).append("lint" if what == "lint" else "worker")
    assert len(events) == 2
    for seen in events.values():  # the worker imports onnxruntime while the first lint loads
        assert seen[0] == "worker" and seen.count("worker") == 1, seen


def test_likely_cold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from onnxlint.analyses.level1.cache import Level1Cache, hint_key
    from onnxlint.runtime.identity import ort_identity

    if ort_identity() is None:
        pytest.skip("onnxruntime is not installed")
    monkeypatch.setenv("ONNXLINT_CACHE_DIR", str(tmp_path / "cache"))
    paths = _folder(tmp_path, [10, 20])
    text = tmp_path / "m.onnxtxt"
    text.write_text(MODEL.replace("OP", "Relu"))
    assert not likely_cold(paths, ["cpu"])  # no accelerator: no level-1 graph
    assert not likely_cold([text], ["qnn"], no_cache=True)  # no .onnx file to judge by
    assert likely_cold(paths, ["qnn"], no_cache=True)
    assert likely_cold(paths, ["qnn"])  # nothing hinted yet
    import hashlib

    cache = Level1Cache()
    for p in paths:
        hint = hint_key(hashlib.sha256(p.read_bytes()).hexdigest(), {})
        assert hint is not None
        cache.put_hint(hint)
    assert not likely_cold(paths, ["qnn"])  # every graph cached
    paths[1].write_bytes(paths[1].read_bytes() + b"\0")  # a changed file: no hint
    assert likely_cold(paths, ["qnn"])
    # the files are read smallest first, within a budget: past it, no guess
    assert not likely_cold(paths, ["qnn"], budget_bytes=paths[0].stat().st_size)


@forking
def test_a_forked_process_forgets_the_parents_workers(restore: None) -> None:
    assert processes.prewarm()
    assert processes._SPARE is not None
    spare = processes._SPARE[0]
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: nothing of the parent's to send requests to or to end
        forgot = processes._SPARE is None and not processes._WORKERS
        processes.drop_spare()
        processes._kill_everything()
        os.write(write_end, b"1" if forgot else b"0")
        os._exit(0)
    os.close(write_end)
    answer = os.read(read_end, 1)
    os.close(read_end)
    os.waitpid(pid, 0)
    assert answer == b"1"
    assert spare.proc.poll() is None  # the parent's spare is alive and still its own
    assert processes._SPARE is not None and processes._SPARE[0] is spare
