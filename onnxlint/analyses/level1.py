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
  model is loaded; when the lint will need the graph (an EP other than the CPU,
  the partition level not set to ``exported`` or ``--confirm``) and the cache has
  no entry, the worker is started in the background, so that it runs while this
  process builds the index and runs the other rules. The assignment analysis
  collects it (:func:`graph_for`); the engine closes it after the lint, which
  kills a worker nobody collected; ``atexit`` covers Ctrl-C.

Nothing is ever written next to the user's model: the worker reads a copy in a
private temporary folder, which is removed when the job is closed.
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

# re-exported: the cache switch and ORT's identity are part of what this module answers by
from onnxlint.runtime.identity import NO_CACHE_ENV as NO_CACHE_ENV
from onnxlint.runtime.identity import cache_enabled as cache_enabled
from onnxlint.runtime.identity import ort_identity as ort_identity

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

    import onnx

    from onnxlint.config import Config
    from onnxlint.modelfile.read import LoadedModel
    from onnxlint.runtime.client import PendingRun

CACHE_SCHEMA = "onnxlint-level1-cache/1"
#: ORT's optimization level for the prediction graph (what a default session partitions)
LEVEL = "basic"
#: initializers at least this large go to the side file the linter never reads
EXTERNAL_MIN_BYTES = 1024
WEIGHTS_FILE = "level1.weights"
#: entries kept in the cache folder; older ones are removed when a new one is written
MAX_ENTRIES = 256
#: and at most this many bytes of them (a 5,000-node graph is a few MB)
MAX_BYTES = 256 * 2**20
NOTE_OK = "ORT level-1 (basic), CPU only"
DEFAULT_TIMEOUT_S = 120.0

#: (ORT's level-1 graph or None, a note on how it was made or why it is missing)
Graph = tuple["onnx.ModelProto | None", str]


@dataclass(frozen=True)
class WorkerFailure:
    """Why the level-1 worker gave no graph, when the worker itself failed (it hung and
    was killed, crashed, ran out of memory), not ORT's refusal."""

    status: str  # a runtime.results STATUS_*: timeout, crash or oom
    detail: str
    timeout_s: float


#: the CLI reads and hashes a model this large at most to decide on prewarming a worker
PREWARM_MAX_BYTES = 64 * 2**20


# ---------------------------------------------------------------------------
# Settings


def default_cache_dir() -> Path:
    """``level1`` beside the ``--confirm`` cache folder (same root, same environment variables)."""
    from onnxlint.cachefs import cache_root

    return cache_root() / "level1"


def needed(config: Config, profiles: Sequence[Any]) -> bool:
    """Whether a lint with this configuration and these EPs asks for the level-1 graph.

    Mirrors its consumers: the partition rules and the report's partition hook
    (any EP but the CPU, unless ``[tool.onnxlint.partition] graph-level`` is
    ``exported``) and ``--confirm`` (whose default-level sessions are compared with
    it). ``tests/test_level1_cache.py`` checks this against what a lint really asks for.
    """
    if not profiles:
        return False
    if str((config.confirm or {}).get("mode", "off")) == "run":
        return True
    if str((config.partition or {}).get("graph-level", "optimized")) == "exported":
        return False
    return any(getattr(p, "ep", None) != "CPUExecutionProvider" for p in profiles)


# ---------------------------------------------------------------------------
# What the graph depends on


def key_material(data: bytes) -> dict[str, Any] | None:
    """What ORT's level-1 output depends on, for ``data`` (None: ORT not found)."""
    from onnxlint.runtime.batch import PROTOCOL

    ort = ort_identity()
    if ort is None:
        return None
    return {
        "schema": CACHE_SCHEMA,
        "model_sha256": hashlib.sha256(data).hexdigest(),
        "model_bytes": len(data),
        "ort": ort,
        "level": LEVEL,
        "external_min_bytes": EXTERNAL_MIN_BYTES,
        "protocol": PROTOCOL,
    }


def cache_key(material: dict[str, Any]) -> str:
    blob = json.dumps(material, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def hint_key(file_sha256: str, dims: dict[str, int] | None) -> str | None:
    """The hint for a model file (the SHA-256 of its bytes) linted with ``dims`` assumed."""
    ort = ort_identity()
    if ort is None or not file_sha256:
        return None
    return cache_key(
        {"hint": CACHE_SCHEMA, "file": file_sha256, "dims": _dims_key(dims), "ort": ort}
    )


# ---------------------------------------------------------------------------
# The on-disk cache


@dataclass
class CacheHit:
    graph: Graph | None
    discarded: str | None = None  # why an entry was deleted instead of used


class Level1Cache:
    """One file per key: a JSON header line, then ORT's serialized graph (or nothing)."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder or default_cache_dir()

    def path(self, key: str) -> Path:
        return self.folder / f"{key}.level1"

    def get(self, key: str, material: dict[str, Any]) -> CacheHit:
        from onnxlint import cachefs

        path = self.path(key)
        try:
            # never follows a link or blocks on a FIFO; another user's entry is not read
            raw = cachefs.read_entry(path, MAX_BYTES)
        except cachefs.UnusableEntry as exc:
            cachefs.discard(path)
            return CacheHit(None, str(exc))
        if raw is None:
            return CacheHit(None)
        try:
            head, sep, payload = raw.partition(b"\n")
            if not sep:
                raise ValueError("no header")
            entry = json.loads(head)
            if not isinstance(entry, dict) or entry.get("schema") != CACHE_SCHEMA:
                raise ValueError("wrong schema")
            if entry.get("key") != json.loads(json.dumps(material)):
                raise ValueError("key material does not match")
            if entry.get("payload_sha256") != hashlib.sha256(payload).hexdigest():
                raise ValueError("checksum mismatch")
            note = entry.get("note")
            if not isinstance(note, str):
                raise ValueError("no note")
            cachefs.touch(path)  # pruning keeps the most recently used entries
            if entry.get("status") == "ok":
                return CacheHit((_guarded_graph(payload), note))
            if entry.get("status") == "error" and not payload:
                return CacheHit((None, note))
            raise ValueError("unknown status")
        except Exception as exc:  # any malformed entry is discarded, never trusted
            why = "not valid JSON" if isinstance(exc, json.JSONDecodeError) else str(exc)
            cachefs.discard(path)
            return CacheHit(None, why or type(exc).__name__)

    def put(self, key: str, material: dict[str, Any], payload: bytes | None, note: str) -> None:
        from onnxlint.cachefs import make_private_dir
        from onnxlint.fsutil import atomic_write_bytes

        body = payload or b""
        header = {
            "schema": CACHE_SCHEMA,
            "key": material,
            "status": "ok" if payload is not None else "error",
            "note": note,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "payload_sha256": hashlib.sha256(body).hexdigest(),
        }
        try:
            make_private_dir(self.folder)
            atomic_write_bytes(self.path(key), json.dumps(header).encode("utf-8") + b"\n" + body)
            self._prune()
        except OSError:
            pass  # a cache that cannot be written only costs time

    def _prune(self) -> None:
        """Keep the newest MAX_ENTRIES entries (and hints) within MAX_BYTES; delete the rest."""
        from onnxlint.cachefs import prune

        prune(self.folder, ("*.level1", "*.hint"), MAX_ENTRIES, MAX_BYTES)

    # A hint says "the file with these bytes has an entry": the CLI checks it before it
    # has parsed the model, to decide whether to prewarm a worker. Only a hint: a stale
    # or missing one costs a wasted or a missed prewarm, never a wrong graph.
    def hint_path(self, hint: str) -> Path:
        return self.folder / f"{hint}.hint"

    def has_hint(self, hint: str) -> bool:
        return self.hint_path(hint).is_file()

    def put_hint(self, hint: str) -> None:
        from onnxlint.fsutil import atomic_write_bytes

        if self.has_hint(hint):
            return
        try:
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            atomic_write_bytes(self.hint_path(hint), b"")
        except OSError:
            pass


def _guarded_graph(payload: bytes) -> onnx.ModelProto:
    """A cached graph, decoded through the loader's guards like any model onnxlint reads
    (size, nesting, node count, UTF-8); raises ValueError when the loader refuses it."""
    from onnxlint.modelfile.read import read

    loaded = read(payload)
    if loaded.model is None:
        why = "; ".join(f"{p.code} ({p.message_id})" for p in loaded.problems) or "unreadable"
        raise ValueError(f"the cached graph is refused by the loader: {why}")
    return loaded.model


# ---------------------------------------------------------------------------
# One level-1 graph, from the cache or a background worker


#: past this many nodes (bodies included) the level-1 graph is not built during a static
#: lint: ORT's session creation grows faster than the lint itself
OPTIMIZED_MAX_NODES = 5_000


def count_nodes(g: onnx.GraphProto) -> int:
    """Nodes of ``g`` and of every body inside it."""
    import onnx

    total = len(g.node)
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                total += count_nodes(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                total += sum(count_nodes(s) for s in a.graphs)
    return total


def skip_reason(model: onnx.ModelProto) -> str | None:
    """Why the level-1 graph is not built for ``model`` during a static lint (None: it is)."""
    from onnxlint.tensors import data_mismatch, is_external, iter_tensors

    # every tensor, not just initializers: ORT would read a Constant's, a function
    # body's or a training graph's external data as well; one walk for both questions
    mismatch: tuple[str, int, int] | None = None
    for tensor, where in iter_tensors(model):
        if is_external(tensor):
            return "the model keeps tensors in external data, which onnxlint never reads"
        if mismatch is None:
            counts = data_mismatch(tensor)
            if counts is not None:
                mismatch = (where, *counts)
    if mismatch is not None:
        # ORT refuses it, and older versions first allocate the declared size (OL109)
        where, declared, stored = mismatch
        return f"a tensor in {where} declares {declared} elements but holds {stored} (OL109)"
    nodes = count_nodes(model.graph)
    if nodes > OPTIMIZED_MAX_NODES:
        # ORT's session creation grows faster than the lint itself (17 s for a 10k-node
        # graph on a 2-core machine, benchmarks/): past the limit it would dominate
        return (
            f"{nodes} nodes (limit {OPTIMIZED_MAX_NODES} for running ORT's level-1 "
            "optimizations during a static lint)"
        )
    return None


@functools.cache
def _level1_table() -> dict[str, Any]:
    """ORT's level-1 transformers and the ops none of them touches (``rules/ort_level1.json``)."""
    from onnxlint.data import load_json

    data: dict[str, Any] = load_json("ort_level1.json")
    return data


def _ort_limits() -> tuple[int, int] | None:
    """(highest ai.onnx opset, highest IR version) of the ORT the worker would run."""
    from onnxlint.ort_versions import table_release

    ort = ort_identity()
    if ort is None or not ort.get("version"):
        return None
    row = table_release(str(ort["version"]))
    if not row.exact:
        return None  # a release the table does not know: ask ORT itself
    return row.max_opset, row.max_ir


def inert_reason(model: onnx.ModelProto) -> str | None:
    """Why ORT's level-1 graph of ``model`` might differ from the model (None: it cannot).

    When nothing can differ, ORT's level-1 graph is the model itself and no worker is
    needed. Every test errs towards "might": only float32 tensors, only ops on the
    table's list (none of ORT's level-1 transformers names them, ONNX defines none by a
    function, ORT's CPU EP runs them in float32: the list is checked against the real
    worker op by op), no node whose inputs are all constant (constant folding), no two
    equal nodes (common-subexpression elimination) or initializers (constant sharing),
    no node nothing reads, no function (nor, by the list, a subgraph), an opset and IR version the
    installed ORT loads, and a model ``onnx.checker`` passes (else ORT may refuse it).
    """
    import onnx

    if model.functions:
        return "model-local functions"
    limits = _ort_limits()
    if limits is None:
        return "the installed ORT's limits are not known"
    opsets = {o.domain or "ai.onnx": o.version for o in model.opset_import}
    if set(opsets) != {"ai.onnx"} or opsets["ai.onnx"] > limits[0] or model.ir_version > limits[1]:
        return "opsets or IR version beyond the plain ONNX domain the installed ORT loads"
    graph = model.graph
    float32 = onnx.TensorProto.FLOAT
    for vi in (*graph.input, *graph.output, *graph.value_info):
        if vi.type.WhichOneof("value") != "tensor_type" or vi.type.tensor_type.elem_type != float32:
            return f"{vi.name!r} is not a float32 tensor"
    constant = {t.name for t in graph.initializer}
    if any(t.data_type != float32 for t in graph.initializer):
        return "an initializer is not float32"
    used = {o.name for o in graph.output}
    for node in graph.node:
        used.update(node.input)
    ops = frozenset(_level1_table()["inert_ops"])
    seen_nodes: set[bytes] = set()
    for node in graph.node:
        op = node.op_type
        if node.domain not in ("", "ai.onnx") or op not in ops:
            return f"{op} is not on the list of ops ORT's level-1 optimizations leave alone"
        inputs = [i for i in node.input if i]
        if all(i in constant for i in inputs):
            return f"{op} reads only constants (constant folding)"
        if not any(o in used for o in node.output if o):
            return f"{op} has no consumer"
        key = onnx.NodeProto(
            op_type=op, domain=node.domain, input=node.input, attribute=node.attribute
        ).SerializeToString(deterministic=True)
        if key in seen_nodes:
            return f"two equal {op} nodes (common-subexpression elimination)"
        seen_nodes.add(key)
    for prev, node in zip(graph.node, graph.node[1:], strict=False):
        if not set(prev.output) & set(node.input):
            # ORT writes its graph in its own topological order; only a chain has one order
            return f"{node.op_type} does not read the node before it (the order is not unique)"
    seen_tensors: set[bytes] = set()
    for t in graph.initializer:
        copy = onnx.TensorProto()
        copy.CopyFrom(t)
        copy.ClearField("name")
        key = copy.SerializeToString(deterministic=True)
        if key in seen_tensors:
            return "two equal initializers (constant sharing)"
        seen_tensors.add(key)
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception as exc:  # ORT may refuse what the checker refuses
        return f"onnx.checker refuses it: {str(exc).splitlines()[0][:200] if str(exc) else exc}"
    return None


def with_default_attributes(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of ``model`` with every attribute a node leaves out written with its schema's
    default, as ORT writes the graphs it has loaded."""
    import onnx

    out = onnx.ModelProto()
    out.CopyFrom(model)
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    for node in out.graph.node:
        schema = onnx.defs.get_schema(node.op_type, opset, node.domain)
        present = {a.name for a in node.attribute}
        for name, attr in sorted(schema.attributes.items()):
            default = attr.default_value
            if name in present or default.type == onnx.AttributeProto.UNDEFINED:
                continue
            added = node.attribute.add()
            added.CopyFrom(default)
            added.name = name
    return out


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
    ) -> None:
        self.model = model
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
        self._graph: Graph | None = None
        self._pending: PendingRun | None = None
        self._tmp: Path | None = None
        self._key: str | None = None
        self._material: dict[str, Any] | None = None
        self._lock = threading.Lock()

    def start(self) -> Level1Job:
        reason = skip_reason(self.model)
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
        data = self.model.SerializeToString()
        if self.use_cache:
            self._material = key_material(data)
            if self._material is not None:
                self._key = cache_key(self._material)
                hit = self.cache.get(self._key, self._material)
                self.discarded = hit.discarded
                if hit.graph is not None:
                    self._graph, self.source = hit.graph, "cache"
                    if self.hint:
                        self.cache.put_hint(self.hint)
                    return self
        from onnxlint.runtime.client import start_optimize
        from onnxlint.runtime.processes import private_temp_dir

        self._tmp = private_temp_dir("level1")
        src = self._tmp / "exported.onnx"
        src.write_bytes(data)  # private mkdtemp folder, removed by close()
        # in an isolated worker: an ORT crash on a hostile model must not end the linter;
        # folded weights go to a side file that is never read: only the graph is needed
        self._pending = start_optimize(
            src,
            self._tmp / "level1.onnx",
            timeout_s=self.timeout_s,
            external_initializers=WEIGHTS_FILE,
        )
        self.source = "worker"
        if _KEEP_SPARE:
            from onnxlint.runtime.processes import prewarm

            prewarm()  # the next file's worker; a spare never taken is ended by the caller
        return self

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
            note = f"ONNX Runtime could not load the model on CPU ({res.status}): {reason}"
            if res.status == "error":  # ORT's own refusal: as deterministic as its output
                self._store(None, note)
            elif res.status in (STATUS_TIMEOUT, STATUS_CRASH, STATUS_OOM):
                # the worker's failure, not the model's: reported on its own (OL605); a
                # runner without onnxruntime is the confirm rules' business, not a finding
                self.failure = WorkerFailure(res.status, reason, self.timeout_s)
            return None, note
        if not out.exists():
            return None, "ONNX Runtime wrote no optimized model"
        import onnx

        try:
            payload = out.read_bytes()
            graph = onnx.load_model_from_string(payload)
        except Exception as exc:  # whatever ORT wrote, the lint goes on
            return None, f"could not read ORT's optimized model: {exc}"
        self._store(payload, NOTE_OK)
        return graph, NOTE_OK

    def _store(self, payload: bytes | None, note: str) -> None:
        if self.use_cache and self._key is not None and self._material is not None:
            self.cache.put(self._key, self._material, payload, note)
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


def _dims_key(dims: dict[str, int] | None) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((dims or {}).items()))


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
    job = Level1Job(source, use_cache=use_cache, hint=hint)
    with _ACTIVE_LOCK:
        _ACTIVE[id(loaded.model)] = (loaded.model, _dims_key(config.assume_dims), job)
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
    failures: list[WorkerFailure] | None = None,
) -> Graph:
    """The level-1 graph of ``source`` (``base`` with ``config.assume_dims`` applied).

    Collects the job :func:`prefetch` started for ``base`` when there is one;
    otherwise builds it now (through the cache). A worker failure is appended to
    ``failures`` when given.
    """
    with _ACTIVE_LOCK:
        found = _ACTIVE.get(id(base))
    if found is not None and found[0] is base and found[1] == _dims_key(config.assume_dims):
        job = found[2]
        got = job.result()
    else:
        job = Level1Job(source, use_cache=cache_enabled(config))
        try:
            got = job.result()
        finally:
            job.close()
    if failures is not None and job.failure is not None:
        failures.append(job.failure)
    return got


# ---------------------------------------------------------------------------
# The CLI's head start


def prewarm_from_args(args: argparse.Namespace) -> bool:
    """Start an ORT worker before the linter imports onnx, when a cold lint is likely.

    For ``onnxlint MODEL.onnx --ep <accelerator>`` (one file, one job) whose graph the
    cache does not hint at, a worker is started at once: it imports onnxruntime (about
    0.2 s) while this process imports onnx and the rules and loads the model, and the
    level-1 job sends it its request (:func:`onnxlint.runtime.processes.prewarm`). Anything
    unusual (folders, several files, EPs from a config file only, large files) gets no
    head start. Never raises; returns whether a worker was started.
    """
    try:
        return _prewarm(args)
    except Exception:  # a head start is an optimization: the lint goes on without it
        return False


def _prewarm(args: argparse.Namespace) -> bool:
    paths = list(getattr(args, "paths", None) or [])
    eps = [str(e).lower() for e in getattr(args, "eps", None) or []]
    if len(paths) != 1 or int(getattr(args, "jobs", 1) or 1) > 1:
        return False
    if not eps or all(e in ("cpu", "cpuexecutionprovider") for e in eps):
        return False
    path = Path(paths[0])
    if path.suffix.lower() != ".onnx" or not path.is_file():
        return False
    if path.stat().st_size > PREWARM_MAX_BYTES:
        return False
    no_cache = bool(getattr(args, "no_cache", False)) or not cache_enabled()
    if not no_cache:
        dims: dict[str, int] = {}
        for item in getattr(args, "assume_dims", None) or []:
            name, _, value = str(item).partition("=")
            if value.strip().isdigit():
                dims[name.strip()] = int(value)
        hint = hint_key(hashlib.sha256(path.read_bytes()).hexdigest(), dims)
        if hint is None or Level1Cache().has_hint(hint):
            return False  # no onnxruntime, or the graph is (very likely) cached
    from onnxlint.runtime.processes import prewarm

    return prewarm()
