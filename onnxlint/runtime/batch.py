"""Running worker items: the protocol with one worker, and restarts after a crash or hang.

A batch of items goes to a worker in chunks; each protocol line becomes a result, and a
worker that dies, hangs past its deadline or exhausts its memory ends with a structured
:class:`~onnxlint.runtime.results.SessionResult` for the item it was on (its signal, its
log tail), and a fresh worker takes the rest.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onnxlint.ep_names import CPU_EP
from onnxlint.runtime.identity import PROTOCOL as PROTOCOL
from onnxlint.runtime.processes import (
    DEFAULT_MEMORY_CAP_MB,
    Worker,
    keep_warm,
    private_temp_dir,
    remove_temp_dir,
    take_spare,
)
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
from onnxlint.runtime.runners import EpSpec

DEFAULT_TIMEOUT_S = 120.0
DEFAULT_STARTUP_TIMEOUT_S = 120.0
START_ATTEMPTS = 3  # a worker that does not reach its first request is restarted this often
_MEMORY_MARKERS = (
    "MemoryError",
    "bad_alloc",
    "Failed to allocate",
    "out of memory",
    "Cannot allocate memory",
)


@dataclass
class WorkerItem:
    """A request as the worker sees it (``kind`` session, optimize or discover)."""

    id: str
    kind: str = "session"
    payload: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, **self.payload}


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
    started: Worker | None = None,
) -> list[SessionResult]:
    """Run worker items, restarting the worker after every crash or hang.

    ``started`` (with the ``log_dir`` its request names) is a worker already given
    the first chunk of ``items`` (:class:`PendingRun`); it is used for that chunk and
    is this call's from then on: closed, or kept warm (:func:`keep_warm`).
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
        if started is not None:  # never given its chunk (no items)
            started.close()
        remove_temp_dir(log_dir)
    return [r for r in results if r is not None]


def make_request(
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


def spare_or_new(runner: str, request: dict[str, Any], memory_cap_mb: int | None) -> Worker:
    """The spare worker (prewarmed, or kept warm by the last request) given ``request``,
    or a new worker started with it."""
    spare = take_spare(runner, memory_cap_mb)
    if spare is None:
        return Worker(runner, request, memory_cap_mb)
    spare.send(request)
    return spare


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
    started: Worker | None = None,
) -> tuple[int, str | None]:
    """Run ``chunk`` in one worker (``started``, when given, already has the request).

    Returns how many items got a result and, when the worker did not get as
    far as its first item in time, why (no item is blamed for that).
    """
    try:
        worker = started or spare_or_new(
            runner, make_request(items, chunk, spec, log_dir), memory_cap_mb
        )
    except (OSError, subprocess.SubprocessError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        msg = f"runner interpreter {runner!r} cannot be started: {why}"
        for i in chunk:
            results[i] = _failure(items[i], spec, STATUS_RUNNER, msg, error_kind="runner-missing")
        return len(chunk), None

    got = 0
    reusable = False
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
                if worker.serving:
                    # answered in full: the process may take the next model's request
                    reusable = _reusable(items, chunk, spec, results)
                    return got, None
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
        if not (reusable and keep_warm(worker)):
            worker.close()


#: item kinds whose worker may answer the next request: CPU sessions that write ORT's
#: level-1 graph or measure its limits leave nothing behind (no EP library is loaded)
_REUSABLE_KINDS = {"optimize", "limits"}


def _reusable(
    items: Sequence[WorkerItem],
    chunk: list[int],
    spec: EpSpec,
    results: list[SessionResult | None],
) -> bool:
    """Whether the worker that answered ``chunk`` is fit for another request: only CPU
    level-1 graphs, none with an injected fault, none that ended in a worker failure."""
    if spec.provider != CPU_EP:
        return False
    for i in chunk:
        item, res = items[i], results[i]
        if item.kind not in _REUSABLE_KINDS or item.payload.get("fault") or res is None:
            return False
        if res.status in (STATUS_OOM, STATUS_CRASH, STATUS_TIMEOUT, STATUS_RUNNER):
            return False
        if res.error_kind == "worker":
            return False
    return True


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
            "disabled_loads",
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
    if ok and item.kind == "session" and provider != CPU_EP:
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
