"""The worker processes and private folders this process owns, and their cleanup.

A worker is started sandboxed: its own session and process group, an address-space cap
(``RLIMIT_AS``) and, on Linux, SIGKILL when its parent dies. One worker may be started
ahead of its request (the spare). No worker outlives onnxlint and no temporary folder
stays behind: at exit and on SIGTERM/SIGHUP every worker's group is killed and every
folder removed, and a folder left by a SIGKILLed process is swept by the next one.
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
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from onnxlint.runtime.client import PendingRun


WORKER_PATH = Path(__file__).with_name("_worker.py")
DEFAULT_MEMORY_CAP_MB = 8192


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


#: workers started by PendingRun and not yet collected or cancelled (ended at exit)
_LIVE: set[PendingRun] = set()
_LIVE_LOCK = threading.Lock()


def register_live(run: PendingRun) -> None:
    """A started run that exit must end if nobody collects or cancels it."""
    ensure_cleanup()
    with _LIVE_LOCK:
        _LIVE.add(run)


def forget_live(run: PendingRun) -> None:
    with _LIVE_LOCK:
        _LIVE.discard(run)


#: private temporary folders of this process (a copy of the user's model may be in one)
_TEMP_DIRS: set[Path] = set()
#: worker processes of this process that are not closed yet
_WORKERS: set[Worker] = set()
_CLEANUP_READY = False
#: names of the folders made by :func:`private_temp_dir`: kind, then the owner's pid
_TEMP_NAME = re.compile(r"onnxlint-(?:models|worker-logs|level1|compat)-(\d+)-")


def _forget_the_parents() -> None:
    """In a child forked from this process (``-j N``'s lint processes): the workers, the
    spare and the folders are the parent's, to end and remove; the child forgets them
    rather than send the spare its requests or kill them at its exit."""
    global _SPARE, _LIVE_LOCK, _PREFACED
    _LIVE_LOCK = threading.Lock()  # another thread may have held it at the fork
    _SPARE = None
    _PREFACED = None
    _LIVE.clear()
    _WORKERS.clear()
    _TEMP_DIRS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_the_parents)


def private_temp_dir(kind: str, in_memory: int = 0) -> Path:
    """A private temporary folder ``onnxlint-KIND-PID-*`` (``mkdtemp``: mode 0700).

    ``in_memory``: the bytes the caller will write there for a worker to read once (a
    model copy); the folder is then made in a memory-backed folder when one can hold them
    (:func:`memory_folder`). Removed by :func:`remove_temp_dir`; at exit and on
    SIGTERM/SIGHUP whatever is left is removed; one left by a process that was SIGKILLed
    is removed by the next onnxlint process that makes one.
    """
    ensure_cleanup()
    parent = memory_folder(in_memory) if in_memory > 0 else None
    path = Path(tempfile.mkdtemp(prefix=f"onnxlint-{kind}-{os.getpid()}-", dir=parent))
    _TEMP_DIRS.add(path)
    return path


#: Linux's memory-backed folder (tmpfs). A model copy written there costs a copy in
#: memory; written to a disk's page cache it can cost far more (BERT-base's 416 MB: 0.2-0.3 s
#: to tmpfs against 1.4 s to an ext4 ``/tmp``, measured on the benchmark host)
MEMORY_FOLDER = Path("/dev/shm")
#: the share of the memory folder's free space, and of the free physical memory, one copy
#: may take: a container's 64 MB ``/dev/shm`` or a busy machine keeps its copies on disk
MEMORY_SHARE = 0.25


def _available_memory() -> int | None:
    """Bytes of memory the kernel can give without swapping (``MemAvailable``: free pages
    and the page cache it can drop), else the free pages; None when neither is known."""
    with contextlib.suppress(OSError, ValueError), open("/proc/meminfo", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024  # in kB
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (OSError, ValueError, AttributeError):
        return None


def memory_folder(size: int) -> str | None:
    """The memory-backed folder to hold a ``size``-byte copy, or None (the usual temporary
    folder): only on Linux, only when no temporary folder was chosen (``TMPDIR``,
    ``TEMP``, ``TMP`` unset: a user who names one gets it), and only when the copy takes
    at most :data:`MEMORY_SHARE` of its free space and of the memory available."""
    if not sys.platform.startswith("linux") or any(
        os.environ.get(v) for v in ("TMPDIR", "TEMP", "TMP")
    ):
        return None
    try:
        st = os.statvfs(MEMORY_FOLDER)
    except (OSError, ValueError):
        return None
    free_memory = _available_memory()
    if free_memory is None or size > MEMORY_SHARE * min(st.f_bavail * st.f_frsize, free_memory):
        return None
    if not os.access(MEMORY_FOLDER, os.W_OK | os.X_OK):
        return None
    return str(MEMORY_FOLDER)


def remove_temp_dir(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    _TEMP_DIRS.discard(path)


def ensure_cleanup() -> None:
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
    for folder in {Path(tempfile.gettempdir()), MEMORY_FOLDER}:
        with contextlib.suppress(OSError):
            _sweep_stale_temp_dirs(folder)


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
_SPARE: tuple[Worker, tuple[str, int | None]] | None = None
#: whether workers are started in serve mode and kept for the next request (set_reuse)
_REUSE = False
#: workers started by this process, ever (what the reuse saves, for tests and logs)
STARTED = 0
#: requests one kept worker answers before it is retired and a fresh one started
MAX_REQUESTS = 200
#: the worker started with a preface request (:func:`prewarm`), whose answer it keeps
_PREFACED: Worker | None = None


def set_reuse(enabled: bool) -> None:
    """Keep one warm worker for the next request instead of one process per request.

    For a run over several models (the CLI's files, the language server's edits):
    a worker that answered its level-1 request cleanly becomes the spare that the
    next :class:`PendingRun` sends its request to, so ``import onnxruntime`` is paid
    once per run, not once per model. Off: every worker ends after its request.
    Turning it off ends the kept worker.
    """
    global _REUSE
    _REUSE = enabled
    if not enabled:
        drop_spare()


def reuse_enabled() -> bool:
    return _REUSE


def keep_warm(worker: Worker) -> bool:
    """Make ``worker`` (serving, its last request answered) the spare; False when it
    cannot be: reuse is off, it is not serving, it has exited, it has answered
    ``MAX_REQUESTS``, or a spare exists.

    An ownership transfer: on True the spare list owns ``worker`` and the caller must
    forget it (not close it); on False the caller still owns it and closes it.
    """
    global _SPARE
    if not (_REUSE and worker.serving and worker.proc.poll() is None):
        return False
    if worker.requests >= MAX_REQUESTS:
        return False  # whatever ORT keeps between sessions cannot grow without bound
    with _LIVE_LOCK:
        if _SPARE is not None:
            return False
        with contextlib.suppress(OSError):
            # the stderr tail of a later failure is that request's (one shared file offset)
            worker.stderr_file.seek(0)
            worker.stderr_file.truncate()
        _SPARE = (worker, worker.key)
    return True


def prewarm(
    runner: str | None = None,
    memory_cap_mb: int | None = DEFAULT_MEMORY_CAP_MB,
    *,
    preface: dict[str, Any] | None = None,
) -> bool:
    """Start a worker now that imports onnxruntime while the caller is still busy.

    The next :class:`PendingRun` for the same runner and memory cap sends it its
    request instead of starting a worker (on a 2-core machine the import, about
    0.2 s, then overlaps the linter's own imports and loading). :func:`drop_spare`
    ends a spare nobody took; so does ``atexit``. Returns False if none could start.

    ``preface``: a request (CPU items that leave nothing behind, such as ORT's limits)
    the worker answers right after its import, before any later request; its answer is
    read by :func:`preface_result` (or skipped by whoever reads the worker next), so a
    lint that needs both asks one worker instead of starting a second one.
    """
    global _SPARE, _PREFACED
    exe = runner or sys.executable
    with _LIVE_LOCK:
        if _SPARE is not None:
            _drop_preface_folder(preface)
            return True
        try:
            worker = Worker(exe, None, memory_cap_mb, preface=preface)
        except (OSError, subprocess.SubprocessError):
            _drop_preface_folder(preface)
            return False
        _SPARE = (worker, (exe, memory_cap_mb))
        if preface is not None:
            _PREFACED = worker
    return True


def _drop_preface_folder(preface: dict[str, Any] | None) -> None:
    """Remove the log folder of a preface request no worker was started with."""
    if preface is not None and preface.get("log_dir"):
        remove_temp_dir(Path(str(preface["log_dir"])))


def preface_result(item_id: str, timeout_s: float) -> dict[str, Any] | None:
    """The ``result`` event of item ``item_id`` of the prewarmed worker's preface, read now
    if it has not been yet (waiting at most ``timeout_s``); None when no worker was
    started with one, or it gave no such result (it died, hung, or had no onnxruntime).
    The preface is handed out once."""
    global _PREFACED
    worker = _PREFACED
    if worker is None:
        return None
    events = worker.preface_events(time.monotonic() + timeout_s)
    with _LIVE_LOCK:
        if _PREFACED is worker:
            _PREFACED = None  # answered once: a later question asks a worker of its own
    for ev in events or ():
        if ev.get("event") == "result" and ev.get("id") == item_id:
            return ev
    return None


def take_spare(runner: str, memory_cap_mb: int | None) -> Worker | None:
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


class Worker:
    """One worker process and the protocol lines it has sent."""

    def __init__(
        self,
        exe: str,
        request: dict[str, Any] | None,
        memory_cap_mb: int | None,
        *,
        serve: bool | None = None,
        preface: dict[str, Any] | None = None,
    ) -> None:
        """Start the worker; without ``request`` it imports onnxruntime and waits for ``send``.

        ``serve``: it answers one request per line until stdin ends (``keep_warm``);
        None: while reuse is on (:func:`set_reuse`). ``preface`` (only without
        ``request``): a request sent at once, whose answer :meth:`preface_events` reads
        and every later read skips; the worker then serves.
        """
        global STARTED
        ensure_cleanup()
        self.serving = _REUSE if serve is None else serve
        if preface is not None:
            self.serving = True  # its next request comes on the next line
        #: the preface's protocol lines once read; whether they are still to be read
        self._preface: list[dict[str, Any]] = []
        self._preface_due = False
        self._preface_lock = threading.Lock()
        self._preface_dir: Path | None = None
        #: requests sent to this process (a kept worker is retired after MAX_REQUESTS)
        self.requests = 0
        self.key = (exe, memory_cap_mb)
        # Closed in close(); a file, not a pipe, so a chatty EP cannot block.
        self.stderr_file = tempfile.TemporaryFile()  # noqa: SIM115
        env = dict(os.environ)
        env.setdefault("PYTHONUNBUFFERED", "1")
        env.pop("PYTHONPATH", None)  # the worker needs nothing of ours
        argv = [exe, "-I", str(WORKER_PATH)] if _accepts_isolated(exe) else [exe, str(WORKER_PATH)]
        try:
            mode = ["--serve"] if self.serving else [] if request is not None else ["--preload"]
            self.proc = subprocess.Popen(
                [*argv, *mode],
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
        STARTED += 1
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.buf = b""
        if request is not None:
            self.send(request)
        elif preface is not None:
            self.send(preface)
            self._preface_due = True
            if preface.get("log_dir"):  # a private_temp_dir: removed once answered
                self._preface_dir = Path(str(preface["log_dir"]))

    def send(self, request: dict[str, Any]) -> None:
        """Give the worker its request: its one (it reads stdin to the end), or the next
        line of a serving worker."""
        assert self.proc.stdin is not None
        self.requests += 1
        try:
            if self.serving:
                self.proc.stdin.write(json.dumps(request).encode() + b"\n")
                self.proc.stdin.flush()
            else:
                self.proc.stdin.write(json.dumps(request).encode())
                self.proc.stdin.close()
        except (BrokenPipeError, ValueError):  # it died (or its stdin was closed)
            pass

    def preface_events(self, deadline: float) -> list[dict[str, Any]] | None:
        """The preface's protocol lines, up to its ``done`` (read now if need be); None
        when they cannot be had by ``deadline``, or the worker is already closed."""
        with self._preface_lock:
            if self._preface_due:
                try:
                    self._read_preface(deadline)
                except (TimeoutError, OSError, ValueError):
                    return None  # the next reader of this worker meets the same trouble
            return list(self._preface)

    def _read_preface(self, deadline: float) -> None:
        while self._preface_due:
            ev = self._read_line(deadline)
            if ev is not None:
                self._preface.append(ev)
            if ev is None or ev.get("event") in ("done", "fatal"):
                self._preface_due = False
                self._drop_preface_dir()

    def _drop_preface_dir(self) -> None:
        folder, self._preface_dir = self._preface_dir, None
        if folder is not None:
            remove_temp_dir(folder)

    def read_event(self, deadline: float) -> dict[str, Any] | None:
        """Next protocol line (after the preface's); None at EOF. Raises TimeoutError
        past ``deadline``."""
        if self._preface_due:
            with self._preface_lock:
                self._read_preface(deadline)
        return self._read_line(deadline)

    def _read_line(self, deadline: float) -> dict[str, Any] | None:
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
        self._drop_preface_dir()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
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
