"""Run real ONNX Runtime sessions in an isolated worker process.

An EP can segfault, hang or exhaust memory while it compiles a graph; that
must end the worker, not the CLI or the language server. ``run_sessions``
spawns ``_worker.py`` under the runner interpreter for the EP, with a
wall-clock timeout per request and an address-space cap, turns a dead or hung
worker into a structured :class:`SessionResult` for the request it was on, and
starts a fresh worker for the rest of the batch.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onnxlint.runtime.results import (
    STATUS_CRASH,
    STATUS_ERROR,
    STATUS_OK,
    STATUS_OOM,
    STATUS_RUNNER,
    STATUS_TIMEOUT,
    AssignedNode,
    Fallback,
    NodeVerdict,
    SessionResult,
)
from onnxlint.runtime.runners import EpSpec, resolve_runner

if TYPE_CHECKING:
    import onnx

WORKER_PATH = Path(__file__).with_name("_worker.py")
PROTOCOL = 1
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_STARTUP_TIMEOUT_S = 120.0
START_ATTEMPTS = 3  # a worker that does not reach its first request is restarted this often
DEFAULT_MEMORY_CAP_MB = 8192
OPT_LEVELS = ("disabled", "basic", "extended", "layout", "default")

_MEMORY_MARKERS = (
    "MemoryError",
    "bad_alloc",
    "Failed to allocate",
    "out of memory",
    "Cannot allocate memory",
)


@dataclass
class SessionRequest:
    """One session to create: a model (path, bytes or ModelProto) and how."""

    model: str | os.PathLike[str] | bytes | onnx.ModelProto
    id: str = ""
    optimization: str = "disabled"
    free_dims: dict[str, int] = field(default_factory=dict)
    config: dict[str, str] = field(default_factory=dict)
    record_assignment: bool = True
    run_inputs: bool = False  # also run one inference on zero inputs
    log_lines: int | None = None  # lines of EP log to return (default: 40 on failure)
    # 0 (verbose) is needed for per-node refusal reasons; on large graphs the
    # verbose log itself costs time, so callers that only want the assignment
    # can raise it.
    log_severity: int = 0
    fault: str | None = None  # testing hook, see _worker.py


@dataclass
class WorkerItem:
    """A request as the worker sees it (``kind`` session, optimize or discover)."""

    id: str
    kind: str = "session"
    payload: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, **self.payload}


def worker_address_limit(memory_cap_mb: int | None) -> tuple[int, int] | None:
    """The ``RLIMIT_AS`` (soft, hard) a worker gets, or None to inherit the parent's.

    Never above the parent's hard limit: an unprivileged process cannot raise it, and
    a user who set ``ulimit -v`` (as docs/SECURITY.md advises for untrusted models)
    meant it for the workers too. Computed in the parent, so nothing can fail after
    ``fork``.
    """
    if not memory_cap_mb or sys.platform == "win32":
        return None
    import resource

    cap = int(memory_cap_mb) * 1024 * 1024
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY and hard <= cap:
        return (hard, hard)
    return (cap, cap)


def _parent_death_signal() -> Any:
    """libc's ``prctl`` on Linux (to set ``PR_SET_PDEATHSIG``), else None; looked up in
    the parent so the child only calls it."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PR_SET_PDEATHSIG = 1


def _set_limits(memory_cap_mb: int | None) -> Any:
    """The worker's ``preexec_fn``: its address-space limit, and SIGKILL when the
    process that started it dies (even by SIGKILL, when no cleanup of ours runs)."""
    limit = worker_address_limit(memory_cap_mb)
    # the death signal follows the *thread* that forked: only the main thread lives as
    # long as the process (a worker started from a pool thread is ended by cleanup)
    main = threading.current_thread() is threading.main_thread()
    prctl = _parent_death_signal() if main else None
    parent = os.getpid()

    def preexec() -> None:
        # nothing here may raise: an exception in preexec_fn fails the start
        if limit is not None:
            import resource

            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(resource.RLIMIT_AS, limit)
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
            if os.getppid() != parent:  # the parent died before prctl took effect
                os._exit(1)

    return preexec


def _materialise(
    model: str | os.PathLike[str] | bytes | onnx.ModelProto, tmp: Path, idx: int
) -> str:
    if isinstance(model, (str, os.PathLike)):
        return str(Path(model).resolve())
    path = tmp / f"model-{idx}.onnx"
    if isinstance(model, bytes):
        path.write_bytes(model)
    else:
        path.write_bytes(model.SerializeToString())
    return str(path)


def run_sessions(
    requests: Sequence[SessionRequest],
    ep: str | EpSpec = "cpu",
    *,
    runner: str | None = None,
    runners: dict[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    memory_cap_mb: int | None = DEFAULT_MEMORY_CAP_MB,
    max_items_per_worker: int | None = None,
    root: str | os.PathLike[str] | None = None,
    startup_timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S,
) -> list[SessionResult]:
    """Create one real session per request on ``ep``; never raises for EP faults.

    ``runner`` is the interpreter to use; if omitted it is resolved from the
    ``runners`` table (``[tool.onnxlint.runners]``) for the EP. ``timeout_s`` is
    a wall-clock limit per request; ``memory_cap_mb`` caps the worker's address
    space (``RLIMIT_AS``; ``None`` for no cap). A worker that does not reach its
    first request within ``startup_timeout_s`` is restarted (up to
    ``START_ATTEMPTS`` times) before the requests fail as ``runner-error``.
    Results come back in request order.
    """
    spec = ep if isinstance(ep, EpSpec) else EpSpec.for_ep(ep)
    exe = runner or resolve_runner(spec.provider, runners, root=root)
    tmp = private_temp_dir("models")
    try:
        items = []
        for i, r in enumerate(requests):
            if r.optimization not in OPT_LEVELS:
                raise ValueError(
                    f"optimization must be one of {OPT_LEVELS}, not {r.optimization!r}"
                )
            payload: dict[str, Any] = {
                "model_path": _materialise(r.model, tmp, i),
                "optimization": r.optimization,
                "free_dims": dict(r.free_dims),
                "config": dict(r.config),
                "record_assignment": r.record_assignment,
                "run_inputs": r.run_inputs,
                "log_severity": r.log_severity,
            }
            if r.log_lines is not None:
                payload["log_lines"] = r.log_lines
            if r.fault:
                payload["fault"] = r.fault
            items.append(WorkerItem(id=r.id or str(i), kind="session", payload=payload))
        return run_items(
            items,
            spec=spec,
            runner=exe,
            timeout_s=timeout_s,
            memory_cap_mb=memory_cap_mb,
            max_items_per_worker=max_items_per_worker,
            startup_timeout_s=startup_timeout_s,
        )
    finally:
        remove_temp_dir(tmp)


def optimize_model(
    model: str | os.PathLike[str],
    output_path: str | os.PathLike[str],
    *,
    runner: str | None = None,
    level: str = "basic",
    timeout_s: float = DEFAULT_TIMEOUT_S,
    memory_cap_mb: int | None = DEFAULT_MEMORY_CAP_MB,
    external_initializers: str | None = None,
) -> SessionResult:
    """Write ORT's optimized graph (level 1 by default) using the CPU EP only.

    With ``external_initializers`` (a file name next to ``output_path``), initializers
    of 1 KiB or more are written there instead of into the model.

    This is what partition prediction starts from: the assignment ORT reports
    is taken after level-1 optimizations. A compiling EP is never used here:
    ORT cannot serialize a model with compiled nodes.
    """
    return start_optimize(
        model,
        output_path,
        runner=runner,
        level=level,
        timeout_s=timeout_s,
        memory_cap_mb=memory_cap_mb,
        external_initializers=external_initializers,
    ).result()[0]


def start_optimize(
    model: str | os.PathLike[str],
    output_path: str | os.PathLike[str],
    *,
    runner: str | None = None,
    level: str = "basic",
    timeout_s: float = DEFAULT_TIMEOUT_S,
    memory_cap_mb: int | None = DEFAULT_MEMORY_CAP_MB,
    external_initializers: str | None = None,
) -> PendingRun:
    """:func:`optimize_model` started now, in the background; ``.result()`` collects it.

    The worker process is spawned before this returns, so its Python start-up and
    ``import onnxruntime`` overlap whatever the caller does next. The caller must
    call ``result()`` or ``cancel()`` (both end the worker); ``atexit`` ends any
    worker still running when the interpreter exits (e.g. after Ctrl-C).
    """
    item = WorkerItem(
        id="optimize",
        kind="optimize",
        payload={
            "model_path": str(Path(model).resolve()),
            "output_path": str(Path(output_path).resolve()),
            "optimization": level,
            **({"external_initializers": external_initializers} if external_initializers else {}),
        },
    )
    return PendingRun(
        [item],
        spec=EpSpec("CPUExecutionProvider"),
        runner=runner or sys.executable,
        timeout_s=timeout_s,
        memory_cap_mb=memory_cap_mb,
    )


#: workers started by PendingRun and not yet collected or cancelled (ended at exit)
_LIVE: set[PendingRun] = set()
_LIVE_LOCK = threading.Lock()


class PendingRun:
    """``run_items`` whose first worker is started at construction and read later."""

    def __init__(
        self,
        items: Sequence[WorkerItem],
        *,
        spec: EpSpec,
        runner: str,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        memory_cap_mb: int | None = DEFAULT_MEMORY_CAP_MB,
    ) -> None:
        self.items = list(items)
        self.spec = spec
        self.runner = runner
        self.timeout_s = timeout_s
        self.memory_cap_mb = memory_cap_mb
        self.log_dir = private_temp_dir("worker-logs")
        self.worker: _Worker | None = None
        self._results: list[SessionResult] | None = None
        _register_live(self)  # from here on cancel() (or exit) removes log_dir
        request = _request(self.items, range(len(self.items)), spec, self.log_dir)
        spare = _take_spare(runner, memory_cap_mb)
        if spare is not None:
            spare.send(request)
            self.worker = spare
        else:
            # if it cannot start, result() starts a worker the ordinary way and says why
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                self.worker = _Worker(runner, request, memory_cap_mb)

    @property
    def running(self) -> bool:
        return self.worker is not None and self.worker.proc.poll() is None

    def result(self) -> list[SessionResult]:
        """Wait for the worker (restarting it like ``run_items`` would) and return the results."""
        if self._results is None:
            try:
                self._results = run_items(
                    self.items,
                    spec=self.spec,
                    runner=self.runner,
                    timeout_s=self.timeout_s,
                    memory_cap_mb=self.memory_cap_mb,
                    log_dir=self.log_dir,
                    started=self.worker,
                )
            finally:
                self.cancel()
        return self._results

    def cancel(self) -> None:
        """End the worker if it still runs and remove its temporary files (idempotent)."""
        worker, self.worker = self.worker, None
        if worker is not None:
            worker.close()
        remove_temp_dir(self.log_dir)
        with _LIVE_LOCK:
            _LIVE.discard(self)


def _register_live(run: PendingRun) -> None:
    _ensure_cleanup()
    with _LIVE_LOCK:
        _LIVE.add(run)


# ---------------------------------------------------------------------------
# Cleanup: no worker outlives onnxlint, no temporary folder stays behind

#: private temporary folders of this process (a copy of the user's model may be in one)
_TEMP_DIRS: set[Path] = set()
#: worker processes of this process that are not closed yet
_WORKERS: set[_Worker] = set()
_CLEANUP_READY = False
#: names of the folders made by :func:`private_temp_dir`: kind, then the owner's pid
_TEMP_NAME = re.compile(r"onnxlint-(?:models|worker-logs|level1|compat)-(\d+)-")


def private_temp_dir(kind: str) -> Path:
    """A private temporary folder ``onnxlint-KIND-PID-*`` (``mkdtemp``: mode 0700).

    Removed by :func:`remove_temp_dir`; at exit and on SIGTERM/SIGHUP whatever is left
    is removed; one left by a process that was SIGKILLed is removed by the next
    onnxlint process that makes one.
    """
    _ensure_cleanup()
    path = Path(tempfile.mkdtemp(prefix=f"onnxlint-{kind}-{os.getpid()}-"))
    _TEMP_DIRS.add(path)
    return path


def remove_temp_dir(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    _TEMP_DIRS.discard(path)


def _ensure_cleanup() -> None:
    """Once per process: cleanup at exit and on SIGTERM/SIGHUP, and stale folders swept."""
    global _CLEANUP_READY
    if _CLEANUP_READY:
        return
    _CLEANUP_READY = True
    atexit.register(_cancel_live)
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
            # only where nobody else handles it (the language server, an embedding
            # program): the handler cleans up, then dies of the same signal
            if signum is not None and signal.getsignal(signum) is signal.SIG_DFL:
                with contextlib.suppress(ValueError, OSError):
                    signal.signal(signum, _die_cleanly)
    with contextlib.suppress(OSError):
        _sweep_stale_temp_dirs(Path(tempfile.gettempdir()))


def _sweep_stale_temp_dirs(folder: Path) -> None:
    """Remove folders of :func:`private_temp_dir` whose process is gone (SIGKILL)."""
    uid = os.getuid() if hasattr(os, "getuid") else None
    for entry in os.scandir(folder):
        found = _TEMP_NAME.match(entry.name)
        if found is None or int(found.group(1)) == os.getpid():
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if not stat.S_ISDIR(st.st_mode) or (uid is not None and st.st_uid != uid):
                continue
            os.kill(int(found.group(1)), 0)
        except ProcessLookupError:
            shutil.rmtree(entry.path, ignore_errors=True)
        except (OSError, OverflowError):
            continue  # alive under another user, or not ours to judge


def _kill_everything(wait: bool = True) -> None:
    """End every worker's process group and remove every private folder. Takes no lock
    of ours; with ``wait=False`` (a signal handler) not subprocess's either: the
    interrupted code may hold it, and the dying workers are reaped by init."""
    for worker in list(_WORKERS):
        with contextlib.suppress(Exception):
            if wait:
                worker.kill()
            else:
                os.killpg(worker.proc.pid, signal.SIGKILL)
    for path in list(_TEMP_DIRS):
        remove_temp_dir(path)


def _cancel_live() -> None:
    drop_spare()
    with _LIVE_LOCK:
        live = list(_LIVE)
    for run in live:
        run.cancel()
    _kill_everything()


def _die_cleanly(signum: int, frame: Any) -> None:
    _kill_everything(wait=False)
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


#: a worker started ahead of its request (prewarm), with the (runner, memory cap) it has
_SPARE: tuple[_Worker, tuple[str, int | None]] | None = None


def prewarm(runner: str | None = None, memory_cap_mb: int | None = DEFAULT_MEMORY_CAP_MB) -> bool:
    """Start a worker now that imports onnxruntime while the caller is still busy.

    The next :class:`PendingRun` for the same runner and memory cap sends it its
    request instead of starting a worker (on a 2-core machine the import, about
    0.2 s, then overlaps the linter's own imports and loading). :func:`drop_spare`
    ends a spare nobody took; so does ``atexit``. Returns False if none could start.
    """
    global _SPARE
    exe = runner or sys.executable
    with _LIVE_LOCK:
        if _SPARE is not None:
            return True
        try:
            worker = _Worker(exe, None, memory_cap_mb)
        except (OSError, subprocess.SubprocessError):
            return False
        _SPARE = (worker, (exe, memory_cap_mb))
    return True


def _take_spare(runner: str, memory_cap_mb: int | None) -> _Worker | None:
    global _SPARE
    with _LIVE_LOCK:
        if _SPARE is None or _SPARE[1] != (runner, memory_cap_mb):
            return None
        worker, _ = _SPARE
        _SPARE = None
    if worker.proc.poll() is not None:  # died waiting (killed, no onnxruntime): start afresh
        worker.close()
        return None
    return worker


def drop_spare() -> None:
    """End the prewarmed worker if no request took it (idempotent)."""
    global _SPARE
    with _LIVE_LOCK:
        spare, _SPARE = _SPARE, None
    if spare is not None:
        spare[0].close()


class _Worker:
    """One worker process and the protocol lines it has sent."""

    def __init__(self, exe: str, request: dict[str, Any] | None, memory_cap_mb: int | None) -> None:
        """Start the worker; without ``request`` it imports onnxruntime and waits for ``send``."""
        _ensure_cleanup()
        # Closed in close(); a file, not a pipe, so a chatty EP cannot block.
        self.stderr_file = tempfile.TemporaryFile()  # noqa: SIM115
        env = dict(os.environ)
        env.setdefault("PYTHONUNBUFFERED", "1")
        env.pop("PYTHONPATH", None)  # the worker needs nothing of ours
        argv = [exe, "-I", str(WORKER_PATH)] if _accepts_isolated(exe) else [exe, str(WORKER_PATH)]
        try:
            self.proc = subprocess.Popen(
                argv if request is not None else [*argv, "--preload"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.stderr_file,
                preexec_fn=_set_limits(memory_cap_mb),
                start_new_session=True,
                env=env,
            )
        except BaseException:
            self.stderr_file.close()
            raise
        _WORKERS.add(self)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.buf = b""
        if request is not None:
            self.send(request)

    def send(self, request: dict[str, Any]) -> None:
        """Give the worker its one request (it reads stdin to the end)."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(request).encode())
            self.proc.stdin.close()
        except BrokenPipeError:
            pass

    def read_event(self, deadline: float) -> dict[str, Any] | None:
        """Next protocol line; None at EOF. Raises TimeoutError past ``deadline``."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                if self.buf.strip():
                    line, self.buf = self.buf, b""
                    return _decode(line)
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return _decode(line)

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
        self.proc.wait()

    def stderr_tail(self, lines: int = 20) -> list[str]:
        self.stderr_file.seek(0)
        text = self.stderr_file.read()[-65536:].decode("utf-8", "replace")
        return text.splitlines()[-lines:]

    def close(self) -> None:
        self.kill()
        _WORKERS.discard(self)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.stderr_file.close()


def _accepts_isolated(exe: str) -> bool:
    # ``-I`` keeps the runner's cwd and user site out of sys.path, so a stray
    # ``onnxruntime`` folder in the project cannot shadow the runner's wheel.
    return "python" in Path(exe).name


def _decode(line: bytes) -> dict[str, Any]:
    try:
        obj = json.loads(line)
        return obj if isinstance(obj, dict) else {"event": "noise", "text": str(obj)}
    except ValueError:
        return {"event": "noise", "text": line.decode("utf-8", "replace")}


def _read_tail(path: str | None, lines: int = 40) -> list[str]:
    if not path:
        return []
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 65536))
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return []
    return text.splitlines()[-lines:]


def _signame(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return str(sig)


def _mentions_memory(texts: Iterable[str]) -> bool:
    return any(m in t for t in texts for m in _MEMORY_MARKERS)


def run_items(
    items: Sequence[WorkerItem],
    *,
    spec: EpSpec,
    runner: str,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    memory_cap_mb: int | None = DEFAULT_MEMORY_CAP_MB,
    max_items_per_worker: int | None = None,
    startup_timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S,
    log_dir: Path | None = None,
    started: _Worker | None = None,
) -> list[SessionResult]:
    """Run worker items, restarting the worker after every crash or hang.

    ``started`` (with the ``log_dir`` its request names) is a worker already given
    the first chunk of ``items`` (:class:`PendingRun`); it is used for that chunk.
    """
    results: list[SessionResult | None] = [None] * len(items)
    pending = list(range(len(items)))
    log_dir = log_dir or private_temp_dir("worker-logs")
    failed_starts = 0
    try:
        while pending:
            chunk = pending[: max_items_per_worker or len(pending)]
            done, start_error = _run_chunk(
                items, chunk, results, spec, runner, timeout_s, memory_cap_mb,
                startup_timeout_s, log_dir, started,
            )  # fmt: skip
            started = None
            pending = [i for i in pending if results[i] is None]
            if done:
                failed_starts = 0
                continue
            failed_starts += 1
            # A worker that is merely slow to start (a loaded machine, a cold
            # venv) gets another chance; a runner that keeps failing does not.
            if pending and (start_error is None or failed_starts >= START_ATTEMPTS):
                msg = start_error or "worker made no progress"
                for i in pending:
                    results[i] = _failure(items[i], spec, STATUS_RUNNER, msg)
                pending = []
    finally:
        remove_temp_dir(log_dir)
    return [r for r in results if r is not None]


def _request(
    items: Sequence[WorkerItem], chunk: Iterable[int], spec: EpSpec, log_dir: Path
) -> dict[str, Any]:
    return {
        "protocol": PROTOCOL,
        "ep": spec.to_json(),
        "log_dir": str(log_dir),
        "items": [items[i].to_json() for i in chunk],
    }


def _failure(
    item: WorkerItem, spec: EpSpec, status: str, error: str, **extra: Any
) -> SessionResult:
    return SessionResult(
        request_id=item.id, status=status, provider=spec.provider, error=error, **extra
    )


def _run_chunk(
    items: Sequence[WorkerItem],
    chunk: list[int],
    results: list[SessionResult | None],
    spec: EpSpec,
    runner: str,
    timeout_s: float,
    memory_cap_mb: int | None,
    startup_timeout_s: float,
    log_dir: Path,
    started: _Worker | None = None,
) -> tuple[int, str | None]:
    """Run ``chunk`` in one worker (``started``, when given, already has the request).

    Returns how many items got a result and, when the worker did not get as
    far as its first item in time, why (no item is blamed for that).
    """
    try:
        worker = started or _Worker(runner, _request(items, chunk, spec, log_dir), memory_cap_mb)
    except (OSError, subprocess.SubprocessError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        msg = f"runner interpreter {runner!r} cannot be started: {why}"
        for i in chunk:
            results[i] = _failure(items[i], spec, STATUS_RUNNER, msg, error_kind="runner-missing")
        return len(chunk), None

    got = 0
    versions: dict[str, Any] = {}
    current: int | None = None  # position in chunk of the item being worked on
    log_path: str | None = None
    deadline = time.monotonic() + startup_timeout_s
    hello = False
    try:
        while True:
            try:
                ev = worker.read_event(deadline)
            except TimeoutError:
                worker.kill()
                if current is None:
                    when = "its next request" if hello else "its first request"
                    limit = timeout_s if hello else startup_timeout_s
                    return got, f"worker did not reach {when} within {limit:g} s"
                i = chunk[current]
                results[i] = _failure(
                    items[i], spec, STATUS_TIMEOUT,
                    f"no result within {timeout_s:g} s; worker killed",
                    log_tail=_read_tail(log_path), versions=versions,
                    worker_pid=worker.proc.pid,
                )  # fmt: skip
                return got + 1, None
            if ev is None:
                break
            kind = ev.get("event")
            if kind == "hello":
                hello = True
                versions = dict(ev.get("versions") or {})
                if "onnxruntime_error" in versions:
                    msg = f"onnxruntime cannot be imported by {runner}: {versions['onnxruntime_error']}"
                    worker.kill()
                    for i in chunk:
                        results[i] = _failure(
                            items[i], spec, STATUS_RUNNER, msg, error_kind="ort-missing",
                            versions=versions,
                        )  # fmt: skip
                    return len(chunk), None
            elif kind == "start":
                current = int(ev["index"])
                log_path = ev.get("log_path")
                deadline = time.monotonic() + timeout_s
            elif kind == "result":
                pos = int(ev["index"])
                i = chunk[pos]
                result = _from_event(items[i], spec, ev, versions, memory_cap_mb)
                result.worker_pid = worker.proc.pid
                results[i] = result
                got += 1
                current = None
                deadline = time.monotonic() + timeout_s
            elif kind == "done":
                break
            elif kind == "fatal":
                msg = str(ev.get("error"))
                for i in chunk:
                    if results[i] is None:
                        results[i] = _failure(items[i], spec, STATUS_RUNNER, msg)
                        got += 1
                worker.kill()
                return got, None
        # EOF or done: did the worker die on an item?
        rc = worker.proc.wait()
        if current is not None:
            i = chunk[current]
            tail = _read_tail(log_path) + worker.stderr_tail()
            sig = -rc if rc < 0 else None
            status = STATUS_OOM if (memory_cap_mb and _mentions_memory(tail)) else STATUS_CRASH
            how = f"killed by signal {_signame(sig)}" if sig else f"exited with {rc}"
            results[i] = _failure(
                items[i], spec, status, f"worker {how} while on this request",
                error_kind="worker-died", log_tail=tail, signal=sig, versions=versions,
                worker_pid=worker.proc.pid,
            )  # fmt: skip
            got += 1
        elif not hello:
            tail = worker.stderr_tail()
            msg = f"worker under {runner} exited with {rc} before starting: " + " | ".join(
                tail[-5:]
            )
            for i in chunk:
                if results[i] is None:
                    results[i] = _failure(items[i], spec, STATUS_RUNNER, msg, log_tail=tail)
                    got += 1
        return got, None
    finally:
        worker.close()


def _from_event(
    item: WorkerItem,
    spec: EpSpec,
    ev: dict[str, Any],
    versions: dict[str, Any],
    memory_cap_mb: int | None,
) -> SessionResult:
    assignment = [AssignedNode.from_json(n) for n in ev.get("assignment") or []]
    verdicts = [NodeVerdict.from_json(v) for v in ev.get("verdicts") or []]
    ok = bool(ev.get("ok"))
    error = ev.get("error")
    status = STATUS_OK if ok else STATUS_ERROR
    if not ok and memory_cap_mb and _mentions_memory([str(error)]):
        status = STATUS_OOM
    provider = str(ev.get("provider") or spec.provider)
    session_providers = list(ev.get("session_providers") or [])
    facts: dict[str, Any] = {
        k: ev[k]
        for k in (
            "qnn_sdk_version",
            "openvino_subgraphs",
            "fallback_to",
            "mode",
            "plugin_package",
            "devices",
            "warnings",
            "available_providers",
            "plugins",
            "assignment_error",
            "assignment_all_on",
            "model_rejected",
            "ep_create_failed",
            "plugin_errors",
            "ep_subgraphs",
            "compile_s",
            "info",
            "status",
            "check_error",
            "limits",
            "missing_package",
        )
        if k in ev
    }
    v = dict(versions)
    if "qnn_sdk_version" in ev:
        v["qnn_sdk"] = ev["qnn_sdk_version"]
    fallback = Fallback()
    if ok and item.kind == "session" and provider != "CPUExecutionProvider":
        fb_to = ev.get("fallback_to")
        missing = bool(session_providers) and provider not in session_providers
        counted = [n for n in assignment if n.op_type != "Constant"]
        zero = bool(counted) and not any(n.ep == provider for n in counted)
        if ev.get("assignment_source") is None:
            zero = False
        msg = ""
        if fb_to:
            msg = f"ORT fell back to {fb_to} after {provider} failed"
        elif missing:
            msg = f"{provider} is not among the session's providers {session_providers}"
            failed = ev.get("ep_create_failed")
            if failed:
                msg += f": {failed.get('error') or failed.get('message')}"
        elif zero:
            msg = f"session created, but {provider} was assigned none of {len(counted)} nodes"
        fallback = Fallback(
            provider_fallback=bool(fb_to),
            ep_missing_from_session=missing,
            zero_accelerator_nodes=zero,
            message=msg,
        )
    return SessionResult(
        request_id=item.id,
        status=status,
        provider=provider,
        error=error,
        error_kind=ev.get("error_kind"),
        create_s=ev.get("create_s"),
        assignment=assignment,
        assignment_source=ev.get("assignment_source"),
        verdicts=verdicts,
        fallback=fallback,
        session_providers=session_providers,
        versions=v,
        facts=facts,
        log_tail=list(ev.get("log_tail") or []),
        output_path=ev.get("output_path"),
        run=ev.get("run"),
    )
