"""Run real ONNX Runtime sessions in an isolated worker process.

An EP can segfault, hang or exhaust memory while it compiles a graph; that
must end the worker, not the CLI or the language server. ``run_sessions``
spawns ``_worker.py`` under the runner interpreter for the EP, with a
wall-clock timeout per request and an address-space cap, turns a dead or hung
worker into a structured :class:`SessionResult` for the request it was on, and
starts a fresh worker for the rest of the batch.

This module is the API (requests in, results out, and the background run the level-1
job uses); the protocol and restarts are :mod:`onnxlint.runtime.batch`, the processes
and folders this process owns and their cleanup :mod:`onnxlint.runtime.processes`.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onnxlint.ep_names import CPU_EP
from onnxlint.runtime import session_names
from onnxlint.runtime.batch import (
    DEFAULT_STARTUP_TIMEOUT_S,
    DEFAULT_TIMEOUT_S,
    WorkerItem,
    make_request,
    run_items,
    spare_or_new,
)
from onnxlint.runtime.processes import (
    DEFAULT_MEMORY_CAP_MB,
    Worker,
    forget_live,
    private_temp_dir,
    register_live,
    remove_temp_dir,
)
from onnxlint.runtime.results import SessionResult
from onnxlint.runtime.runners import EpSpec, resolve_runner

if TYPE_CHECKING:
    import onnx

OPT_LEVELS = ("disabled", "basic", "extended", "layout", "default")


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
    #: give the session a copy whose unnamed nodes are named, and turn its result back
    #: (``session_names``): the result then lists unnamed nodes in the model's order
    name_unnamed: bool = False


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
        #: request position -> the names its session copy gave unnamed nodes
        named: dict[int, dict[str, int]] = {}
        #: the named copy of each model asked for (the levels of one model share it)
        copies: dict[object, tuple[str, dict[str, int]] | None] = {}
        for i, r in enumerate(requests):
            if r.optimization not in OPT_LEVELS:
                raise ValueError(
                    f"optimization must be one of {OPT_LEVELS}, not {r.optimization!r}"
                )
            model_path: str | None = None
            if r.name_unnamed:
                key = os.fspath(r.model) if isinstance(r.model, (str, os.PathLike)) else id(r.model)
                if key not in copies:
                    got = session_names.named_copy(r.model)
                    copies[key] = (_materialise(got[0], tmp, i), got[1]) if got else None
                copy = copies[key]
                if copy is not None:
                    model_path, named[i] = copy
            payload: dict[str, Any] = {
                "model_path": model_path or _materialise(r.model, tmp, i),
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
        results = run_items(
            items,
            spec=spec,
            runner=exe,
            timeout_s=timeout_s,
            memory_cap_mb=memory_cap_mb,
            max_items_per_worker=max_items_per_worker,
            startup_timeout_s=startup_timeout_s,
        )
        return [session_names.restore(res, named.get(i, {})) for i, res in enumerate(results)]
    finally:
        remove_temp_dir(tmp)


#: session options of the optimize request. Prepacking lays weights out for the CPU
#: kernels once the graph is written: the same graph bytes without it (onnxruntime
#: 1.32.0), and the session is faster and smaller (BERT-base 0.65 -> 0.29 s,
#: light_resnet50 0.21 -> 0.17 s; a 1 GiB external MatMul weight 5.7 s and 450 MB ->
#: 1.3 s and 190 MB)
OPTIMIZE_CONFIG = {"session.disable_prepacking": "1"}


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
    discard_external: bool = False,
    external_data_folder: str | os.PathLike[str] | None = None,
    probe_disabled: str | None = None,
) -> PendingRun:
    """:func:`optimize_model` started now, in the background; ``.result()`` collects it.

    The worker process is spawned before this returns, so its Python start-up and
    ``import onnxruntime`` overlap whatever the caller does next. The caller must
    call ``result()`` or ``cancel()`` (both end the worker); ``atexit`` ends any
    worker still running when the interpreter exits (e.g. after Ctrl-C).
    ``discard_external``: the ``external_initializers`` file is never read, so the
    weights written there go to the null device (POSIX), not to disk.
    ``external_data_folder``: where ORT reads the model's external data from (the
    model's own folder; the caller has checked every location).
    ``probe_disabled``: a regular expression; when ORT refuses the model with an error it
    finds, the worker also tries a session with every optimization disabled and says
    whether it loads (``facts["disabled_loads"]``). Other errors cost no second session.
    """
    item = WorkerItem(
        id="optimize",
        kind="optimize",
        payload={
            "model_path": str(Path(model).resolve()),
            "output_path": str(Path(output_path).resolve()),
            "optimization": level,
            "config": dict(OPTIMIZE_CONFIG),
            **({"external_initializers": external_initializers} if external_initializers else {}),
            **({"discard_external": True} if discard_external and external_initializers else {}),
            **({"probe_disabled": probe_disabled} if probe_disabled else {}),
            **(
                {"external_data_folder": str(Path(external_data_folder).resolve())}
                if external_data_folder is not None
                else {}
            ),
        },
    )
    return PendingRun(
        [item],
        spec=EpSpec(CPU_EP),
        runner=runner or sys.executable,
        timeout_s=timeout_s,
        memory_cap_mb=memory_cap_mb,
    )


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
        self.worker: Worker | None = None
        self._results: list[SessionResult] | None = None
        register_live(self)  # from here on cancel() (or exit) removes log_dir
        request = make_request(self.items, range(len(self.items)), spec, self.log_dir)
        # if none can start, result() starts a worker the ordinary way and says why
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            self.worker = spare_or_new(runner, request, memory_cap_mb)

    @property
    def running(self) -> bool:
        return self.worker is not None and self.worker.proc.poll() is None

    def result(self) -> list[SessionResult]:
        """Wait for the worker (restarting it like ``run_items`` would) and return the results."""
        if self._results is None:
            # the worker is handed over: run_items closes it or keeps it warm (keep_warm)
            started, self.worker = self.worker, None
            try:
                self._results = run_items(
                    self.items,
                    spec=self.spec,
                    runner=self.runner,
                    timeout_s=self.timeout_s,
                    memory_cap_mb=self.memory_cap_mb,
                    log_dir=self.log_dir,
                    started=started,
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
        forget_live(self)
