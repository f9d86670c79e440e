"""ORT's level-1 graph for partition prediction: built once, cached on disk, started early.

The partition rules predict on the graph ORT partitions in a default session:
the model after ORT's basic (level-1) optimizations. Only ORT itself can produce
that graph, so an isolated CPU worker (:mod:`onnxlint.runtime.client`) creates a
basic-level session that writes it. That worker costs a Python start-up, an
``import onnxruntime`` and a session: about 0.5-0.8 s on ``light_resnet50``, most
of a static lint. Two things keep it off the critical path:

- **The cache.** ORT's output depends only on the bytes it is given and on the
  ORT build, so the graph is stored in the user's cache folder (next to the
  ``--confirm`` cache: ``$ONNXLINT_CACHE_DIR/level1`` or
  ``$XDG_CACHE_HOME/onnxlint/level1``), keyed by the SHA-256 of the exact model
  bytes given to ORT (free-dimension overrides from ``--assume-dim`` are already
  written into them), the ORT package (version, location, size and mtime of its
  native libraries), the optimization level and the worker options. Only the
  graph is kept: initializers of 1 KiB or more go to a side file the linter never
  reads. An entry whose header, key or checksum does not match is deleted and
  rebuilt, never trusted. ``--no-cache`` (``[tool.onnxlint.confirm] cache =
  false``) and ``ONNXLINT_NO_CACHE=1`` bypass it: no read, no write.
- **The early start.** :func:`prefetch` is called by the engine right after the
  model is loaded; when the lint will need the graph (any EP, the partition level
  not set to ``exported``, or ``--confirm``; for the CPU alone only ORT's refusal of
  the graph is read from it) and the cache has
  no entry, the worker is started in the background, so that it runs while this
  process builds the index and runs the other rules. The assignment analysis
  collects it (:func:`graph_for`); the engine closes it after the lint, which
  kills a worker nobody collected; ``atexit`` covers Ctrl-C.

Nothing is ever written next to the user's model: the worker reads a copy in a
private temporary folder, which is removed when the job is closed.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onnxlint import lintdeps
from onnxlint.analyses.level1.cache import (
    WEIGHTS_FILE,
    Graph,
    GraphRefusal,
    Level1Cache,
    cache_key,
    dims_key,
    hint_key,
    key_material,
    key_material_of,
)

# re-exported: the cache switch and ORT's identity are part of what this module answers by
from onnxlint.runtime.identity import NO_CACHE_ENV as NO_CACHE_ENV
from onnxlint.runtime.identity import cache_enabled as cache_enabled
from onnxlint.runtime.identity import ort_identity as ort_identity

if TYPE_CHECKING:
    from collections.abc import Sequence

    import onnx

    from onnxlint.analyses.level1.eligibility import (
        external_data_folder,
        inert_reason,
        skip_reason,
        with_default_attributes,
    )
    from onnxlint.config import Config
    from onnxlint.modelfile.read import LoadedModel
    from onnxlint.runtime.client import PendingRun

#: re-exported from :mod:`~onnxlint.analyses.level1.eligibility`, which imports onnx: loaded
#: on first use, so that the CLI's head start (:mod:`~onnxlint.analyses.level1.prewarm`)
#: starts ORT's worker before anything imports onnx
_ELIGIBILITY = (
    "external_data_folder",
    "inert_reason",
    "skip_reason",
    "with_default_attributes",
)


def __getattr__(name: str) -> Any:
    if name not in _ELIGIBILITY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    _load_eligibility()
    return globals()[name]


def _load_eligibility() -> None:
    """Put eligibility's names into this module (once; a name set here already, e.g. by a
    test's monkeypatch, is kept)."""
    from onnxlint.analyses.level1 import eligibility

    for name in _ELIGIBILITY:
        globals().setdefault(name, getattr(eligibility, name))


NOTE_OK = "ORT level-1 (basic), CPU only"
#: the note of a level-1 graph ORT itself refused (``status`` is the worker's result status)
REFUSAL_NOTE = "ONNX Runtime could not load the model on CPU ({status}): {reason}"
#: errors of ORT's graph resolution (its type and shape inference), which runs on the
#: level-1 graph before any EP chooses a node: measured to fail the default-level session of
#: the CPU, QNN and OpenVINO EPs alike (tests/partition/test_level1_refused.py). A node output
#: whose declared type is not the one ORT infers fails with an untagged "Type Error: Type
#: (...) of output arg (...) of node (...)" (held-out batch 16), at every level
_RESOLVE_ERROR = re.compile(r"\[(ShapeInferenceError|TypeInferenceError)\]|Type Error: Type \(")


def inference_error(error: str) -> str | None:
    """ORT's error, from ``Node (`` on, when the level-1 worker's session failed ORT's
    graph resolution (its type and shape inference); None for any other error (an op the
    CPU EP lacks, a file it cannot read). Read once, from the worker's own error text:
    what it finds travels as ``Level1Job.refusal`` and in the cache entry, never parsed
    back out of a note."""
    for line in error.strip().splitlines():
        found = _RESOLVE_ERROR.search(line)
        if found:
            at = line.find("Node (")
            if at < 0 and found.group(1) is None:  # the untagged form: from "Type Error" on
                at = found.start()
            return (line[at:] if at >= 0 else line.strip())[:_REFUSAL_CHARS]
    return None


#: how much of ORT's error a refusal keeps (one line of ORT's message is far shorter)
_REFUSAL_CHARS = 1000


@dataclass(frozen=True)
class Level1Outcome:
    """What :func:`graph_for` found: the graph (None and why when there is none), the
    worker's own failure if it hung or crashed (OL605), and ORT's type/shape inference
    error if ORT refused the graph (OL606)."""

    graph: onnx.ModelProto | None
    note: str
    failure: WorkerFailure | None = None
    refusal: GraphRefusal | None = None


DEFAULT_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class ModelFile:
    """The binary file a model was read from, as the loader saw it: its real path, the
    SHA-256 and length of the bytes it parsed. A job given one keys the cache by those
    and hands ORT a verified copy of the file, so a model of hundreds of MB is never
    serialised again (about a second for BERT-base, warm or cold)."""

    path: Path
    sha256: str
    size: int
    #: the bytes themselves while the lint still holds them (``LoadedModel.wire``): the
    #: job writes those for ORT instead of copying the file and hashing the copy again
    data: bytes | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class WorkerFailure:
    """Why the level-1 worker gave no graph, when the worker itself failed (it hung and
    was killed, crashed, ran out of memory), not ORT's refusal."""

    status: str  # a runtime.results STATUS_*: timeout, crash or oom
    detail: str
    timeout_s: float


def needed(config: Config, profiles: Sequence[Any]) -> bool:
    """Whether a lint with this configuration and these EPs asks for the level-1 graph.

    Mirrors its consumers: the partition rules and the report's partition hook
    (any EP, unless ``[tool.onnxlint.partition] graph-level`` is ``exported``; for the
    CPU alone only ORT's own refusal of the graph is read from it: OL606, a default
    session that fails on every EP) and ``--confirm`` (whose default-level sessions are
    compared with it). ``tests/test_level1_cache.py`` checks this against what a lint
    really asks for.
    """
    if not profiles:
        return False
    if str((config.confirm or {}).get("mode", "off")) == "run":
        return True
    return str((config.partition or {}).get("graph-level", "optimized")) != "exported"


# ---------------------------------------------------------------------------
# One level-1 graph, from the cache or a background worker


class Level1Job:
    """The level-1 graph of one model: ``start()`` (cache lookup or worker), ``result()``, ``close()``."""

    def __init__(
        self,
        model: onnx.ModelProto,
        *,
        use_cache: bool = True,
        cache_dir: Path | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        hint: str | None = None,
        file: ModelFile | None = None,
        external_dir: Path | None = None,
    ) -> None:
        self.model = model
        #: the folder ORT reads the model's external data from (checked:
        #: :func:`external_data_folder`); None: ORT is given no external data. Such a
        #: graph is not cached: its key would have to cover the data files too
        self.external_dir = external_dir
        if external_dir is not None:
            use_cache, hint = False, None
        #: the file ``model`` was parsed from, unchanged (None: serialise ``model``)
        self.file = file
        self.use_cache = use_cache
        self.hint = hint  # written once the cache has this model's entry
        self.cache = Level1Cache(cache_dir)
        self.timeout_s = timeout_s
        #: how the graph was obtained: "skipped", "inert" (nothing for ORT to change: the
        #: model itself), "cache", "worker" (None: not started)
        self.source: str | None = None
        self.discarded: str | None = None
        #: set when the worker failed (None: a graph, a cache hit, or ORT's own refusal)
        self.failure: WorkerFailure | None = None
        #: ORT's type/shape inference error when it refused the graph (:func:`inference_error`)
        self.refusal: GraphRefusal | None = None
        self._graph: Graph | None = None
        self._pending: PendingRun | None = None
        self._tmp: Path | None = None
        self._key: str | None = None
        self._material: dict[str, Any] | None = None
        self._lock = threading.Lock()

    def start(self) -> Level1Job:
        try:
            return self._start()
        finally:
            # the model's bytes are not kept past the start, whichever way it went
            if self.file is not None and self.file.data is not None:
                self.file = replace(self.file, data=None)

    def _start(self) -> Level1Job:
        _load_eligibility()
        reason = skip_reason(self.model, external_ok=self.external_dir is not None)
        if reason is not None:
            self._graph, self.source = (None, reason), "skipped"
            return self
        if inert_reason(self.model) is None:
            # nothing ORT's level-1 optimizers match: their graph is this one (a copy,
            # as a worker's would be: the lint's own model is never handed out twice)
            graph = with_default_attributes(self.model)
            self._graph, self.source = (graph, NOTE_OK), "inert"
            if self.use_cache and self.hint:
                self.cache.put_hint(self.hint)  # no prewarmed worker next time either
            return self
        # the bytes ORT is given: the model's file (copied below) or the model serialised
        data: bytes | None = None
        if self.file is None:
            data = serialize(self.model)
            if self.use_cache:
                self._material = key_material(data)
        elif self.use_cache:
            self._material = key_material_of(self.file.sha256, self.file.size)
        if self._material is not None:  # set only with the cache on
            self._key = cache_key(self._material)
            hit = self.cache.get(self._key, self._material)
            self.discarded = hit.discarded
            if hit.graph is not None:
                self._graph, self.source, self.refusal = hit.graph, "cache", hit.refusal
                if self.hint:
                    self.cache.put_hint(self.hint)
                return self
        from onnxlint.runtime.client import start_optimize
        from onnxlint.runtime.processes import private_temp_dir

        # the copy ORT reads goes to memory when it fits (a disk write of hundreds of MB
        # is seconds of this lint: processes.MEMORY_FOLDER)
        size = len(data) if data is not None else self.file.size if self.file else 0
        self._tmp = private_temp_dir("level1", in_memory=size)
        src = self._tmp / "exported.onnx"
        if data is None and not self._copy_file(src):
            data = serialize(self.model)  # the file changed since it was read
            if self.use_cache:
                self._material = key_material(data)
                self._key = cache_key(self._material) if self._material is not None else None
        if data is not None:
            src.write_bytes(data)  # private mkdtemp folder, removed by close()
        # in an isolated worker: an ORT crash on a hostile model must not end the linter;
        # folded weights go to a side file that is never read (the null device): only
        # the graph is needed
        self._pending = start_optimize(
            src,
            self._tmp / "level1.onnx",
            timeout_s=self.timeout_s,
            external_initializers=WEIGHTS_FILE,
            discard_external=True,
            external_data_folder=self.external_dir,
            probe_disabled=_RESOLVE_ERROR.pattern,
        )
        self.source = "worker"
        if _KEEP_SPARE:
            from onnxlint.runtime.processes import prewarm

            prewarm()  # the next file's worker; a spare never taken is ended by the caller
        return self

    def _copy_file(self, dest: Path) -> bool:
        """Put the model's bytes at ``dest``: the ones the lint parsed when it still holds
        them, else a copy of the file; False (nothing usable there) unless the copy holds
        exactly the bytes the lint parsed."""
        import hashlib
        import shutil

        assert self.file is not None
        if self.file.data is not None:  # the bytes the lint parsed: nothing to verify
            try:
                dest.write_bytes(self.file.data)
            except OSError:
                return False
            return True
        try:
            shutil.copyfile(self.file.path, dest)
            digest = hashlib.sha256()
            with dest.open("rb") as fh:
                size = 0
                while chunk := fh.read(1 << 22):
                    digest.update(chunk)
                    size += len(chunk)
        except OSError:
            return False
        return digest.hexdigest() == self.file.sha256 and size == self.file.size

    def result(self) -> Graph:
        """The graph (None and why when ORT cannot produce it); waits for the worker."""
        with self._lock:
            if self._graph is None:
                if self._pending is None:
                    self.start()  # not started, or closed before anyone collected it
                if self._graph is None:
                    try:
                        self._graph = self._collect()
                    finally:
                        self.close()
            return self._graph

    def _collect(self) -> Graph:
        from onnxlint.runtime.results import STATUS_CRASH, STATUS_OOM, STATUS_TIMEOUT

        assert self._pending is not None and self._tmp is not None
        res = self._pending.result()[0]
        out = self._tmp / "level1.onnx"
        if not res.ok:
            first = (res.error or res.status).strip().splitlines()
            reason = first[0][:300] if first else res.status
            note = REFUSAL_NOTE.format(status=res.status, reason=reason)
            if res.status == "error":  # ORT's own refusal: as deterministic as its output
                error = inference_error(res.error or "")
                if error is not None:
                    loads = res.facts.get("disabled_loads")
                    self.refusal = GraphRefusal(error, every_level=loads is False)
                self._store(None, note, self.refusal)
            else:
                lintdeps.volatile(f"ORT's level-1 worker: {res.status}")
            if res.status in (STATUS_TIMEOUT, STATUS_CRASH, STATUS_OOM):
                # the worker's failure, not the model's: reported on its own (OL605); a
                # runner without onnxruntime is the confirm rules' business, not a finding
                self.failure = WorkerFailure(res.status, reason, self.timeout_s)
            return None, note
        if not out.exists():
            lintdeps.volatile("ORT's level-1 worker wrote no graph")
            return None, "ONNX Runtime wrote no optimized model"
        import onnx

        try:
            payload = out.read_bytes()
            graph = onnx.load_model_from_string(payload)
        except Exception as exc:  # whatever ORT wrote, the lint goes on
            lintdeps.volatile("ORT's level-1 graph was unreadable")
            return None, f"could not read ORT's optimized model: {exc}"
        self._store(payload, NOTE_OK)
        return graph, NOTE_OK

    def _store(self, payload: bytes | None, note: str, refusal: GraphRefusal | None = None) -> None:
        if self.use_cache and self._key is not None and self._material is not None:
            self.cache.put(self._key, self._material, payload, note, refusal)
            if self.hint:
                self.cache.put_hint(self.hint)

    def close(self) -> None:
        """End a worker nobody collected and remove the temporary folder (idempotent)."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.cancel()
        tmp, self._tmp = self._tmp, None
        if tmp is not None:
            from onnxlint.runtime.processes import remove_temp_dir

            remove_temp_dir(tmp)


# ---------------------------------------------------------------------------
# Jobs started by the engine, found by the assignment analysis

_ACTIVE: dict[int, tuple[onnx.ModelProto, tuple[tuple[str, int], ...], Level1Job]] = {}
_ACTIVE_LOCK = threading.Lock()
#: whether :func:`prefetch` starts a worker beside the lint (off in ``-j N``'s lint
#: processes: there the worker runs while its lint waits, so N processes use N cores)
_EARLY_START = True
#: whether a job that starts a worker also readies the next one (a serial run over
#: several files: the next worker imports onnxruntime while this lint runs)
_KEEP_SPARE = False


def set_keep_spare(enabled: bool) -> None:
    """Ready a spare worker after each one a job takes (the CLI, for several files in
    one process); the caller ends the last spare (``runtime.processes.drop_spare``)."""
    global _KEEP_SPARE
    _KEEP_SPARE = enabled


def set_early_start(enabled: bool) -> None:
    """Let :func:`prefetch` start workers beside the lint (default) or not (``-j N``)."""
    global _EARLY_START
    _EARLY_START = enabled


def prefetch(loaded: LoadedModel, config: Config, profiles: Sequence[Any]) -> Level1Job | None:
    """Start the level-1 graph of ``loaded`` now if the lint will need it (None: it will not,
    or early starts are off: the assignment analysis then builds it when it asks).

    The caller must ``release()`` the job when the lint ends, whatever happens.
    """
    if loaded.fatal or loaded.model is None or not needed(config, profiles):
        return None
    if not _EARLY_START:
        return None
    from onnxlint.rewrites import override_dims

    source = override_dims(loaded.model, config.assume_dims)
    use_cache = cache_enabled(config)
    hint = hint_key(loaded.content_hash, config.assume_dims) if use_cache and loaded.path else None
    _load_eligibility()
    job = Level1Job(
        source,
        use_cache=use_cache,
        hint=hint,
        file=model_file(loaded, source),
        external_dir=external_data_folder(loaded.model, loaded.base_dir),
    )
    with _ACTIVE_LOCK:
        _ACTIVE[id(loaded.model)] = (loaded.model, dims_key(config.assume_dims), job)
    try:
        job.start()
    except Exception:
        # no early start, then: the assignment analysis builds it when asked, and
        # reports there (as a rule crash, not a traceback) whatever went wrong
        release(job)
        return None
    except BaseException:
        release(job)
        raise
    return job


def serialize(model: onnx.ModelProto) -> bytes:
    """The bytes ORT is given for a model that is not (or no longer) its file."""
    return model.SerializeToString()


def model_file(loaded: LoadedModel, source: onnx.ModelProto) -> ModelFile | None:
    """The file behind ``source`` when ORT can be given that file: ``source`` is the model
    parsed from a binary file, unchanged (no assumed dims written into it); None otherwise
    (ONNX text, bytes or a ModelProto given to the API, a copy with dims fixed)."""
    if (
        source is not loaded.model
        or loaded.is_text
        or loaded.real_path is None
        or not loaded.content_hash
    ):
        return None
    return ModelFile(loaded.real_path, loaded.content_hash, loaded.size, loaded.wire)


def release(job: Level1Job | None) -> None:
    """Forget a job started by :func:`prefetch` and end its worker if nobody collected it."""
    if job is None:
        return
    with _ACTIVE_LOCK:
        for k, (_, _, j) in list(_ACTIVE.items()):
            if j is job:
                del _ACTIVE[k]
    job.close()


def graph_for(
    base: onnx.ModelProto,
    config: Config,
    source: onnx.ModelProto,
    base_dir: Path | None = None,
) -> Level1Outcome:
    """The level-1 graph of ``source`` (``base`` with ``config.assume_dims`` applied).

    Collects the job :func:`prefetch` started for ``base`` when there is one;
    otherwise builds it now (through the cache; ``base_dir``: the model's folder, where
    ORT may read its checked external data).
    """
    with _ACTIVE_LOCK:
        found = _ACTIVE.get(id(base))
    if found is not None and found[0] is base and found[1] == dims_key(config.assume_dims):
        job = found[2]
        got = job.result()
    else:
        _load_eligibility()
        job = Level1Job(
            source,
            use_cache=cache_enabled(config),
            external_dir=external_data_folder(base, base_dir),
        )
        try:
            got = job.result()
        finally:
            job.close()
    return Level1Outcome(got[0], got[1], job.failure, job.refusal if got[0] is None else None)
