"""The level-1 graph cache: ORT's output on disk, keyed by what it depends on.

The key is the SHA-256 of the exact bytes ORT is given, ORT's identity (version,
location, native libraries), the level and the worker protocol. Only the graph is
stored (large initializers go to a side file never read); an entry whose header, key or
checksum does not match is deleted, and a cached graph goes through the reader's guards
like any model. A hint per model file (and assumed dims) tells the CLI whether a cold
lint is likely.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onnxlint.runtime.identity import PROTOCOL, ort_identity

if TYPE_CHECKING:
    import onnx


#: (ORT's level-1 graph or None, a note on how it was made or why it is missing)
Graph = tuple["onnx.ModelProto | None", str]
CACHE_SCHEMA = "onnxlint-level1-cache/4"
#: ORT's optimization level for the prediction graph (what a default session partitions)
LEVEL = "basic"
#: initializers at least this large go to the side file the linter never reads
EXTERNAL_MIN_BYTES = 1024
WEIGHTS_FILE = "level1.weights"
#: entries kept in the cache folder; older ones are removed when a new one is written
MAX_ENTRIES = 256
#: and at most this many bytes of them (a 5,000-node graph is a few MB)
MAX_BYTES = 256 * 2**20


def default_cache_dir() -> Path:
    """``level1`` beside the ``--confirm`` cache folder (same root, same environment variables)."""
    from onnxlint.cachefs import cache_root

    return cache_root() / "level1"


def key_material(data: bytes) -> dict[str, Any] | None:
    """What ORT's level-1 output depends on, for ``data`` (None: ORT not found)."""
    return key_material_of(hashlib.sha256(data).hexdigest(), len(data))


def key_material_of(model_sha256: str, model_bytes: int) -> dict[str, Any] | None:
    """:func:`key_material` for bytes known by their SHA-256 and length (a model file
    hashed when it was read: the bytes need not be produced again)."""
    ort = ort_identity()
    if ort is None:
        return None
    return {
        "schema": CACHE_SCHEMA,
        "model_sha256": model_sha256,
        "model_bytes": model_bytes,
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
        {"hint": CACHE_SCHEMA, "file": file_sha256, "dims": dims_key(dims), "ort": ort}
    )


@dataclass(frozen=True)
class GraphRefusal:
    """ORT's own type or shape inference error on a graph it refused (OL606), and whether
    a CPU session with every optimization disabled fails on the model too (``every_level``):
    a misfit that constant folding reveals fails the default level only, a declaration
    that contradicts inference fails every level."""

    error: str
    every_level: bool


@dataclass
class CacheHit:
    graph: Graph | None
    discarded: str | None = None  # why an entry was deleted instead of used
    #: ORT's refusal of the graph (``Level1Job.refusal``)
    refusal: GraphRefusal | None = None


def _refusal_of(entry: dict[str, Any]) -> GraphRefusal | None:
    """The refusal an entry records; ValueError for fields of the wrong type."""
    error, every_level = entry.get("refusal"), entry.get("refusal_every_level")
    if error is None:
        return None
    if not isinstance(error, str) or not isinstance(every_level, bool):
        raise ValueError("refusal is not a string and a flag")
    return GraphRefusal(error, every_level)


class Level1Cache:
    """One file per key: a JSON header line, then ORT's serialized graph (or nothing)."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder or default_cache_dir()

    def path(self, key: str) -> Path:
        return self.folder / f"{key}.level1"

    def get(self, key: str, material: dict[str, Any]) -> CacheHit:
        from onnxlint import cachefs

        path = self.path(key)
        # never follows a link or blocks on a FIFO; another user's entry is not read
        raw, unusable = cachefs.read_or_discard(path, MAX_BYTES)
        if raw is None:
            return CacheHit(None, unusable) if unusable else CacheHit(None)
        try:
            entry, payload = cachefs.split_entry(raw, CACHE_SCHEMA, material)
            note = entry.get("note")
            if not isinstance(note, str):
                raise ValueError("no note")
            cachefs.touch(path)  # pruning keeps the most recently used entries
            if entry.get("status") == "ok":
                return CacheHit((_guarded_graph(payload), note))
            if entry.get("status") == "error" and not payload:
                return CacheHit((None, note), refusal=_refusal_of(entry))
            raise ValueError("unknown status")
        except Exception as exc:  # any malformed entry is discarded, never trusted
            why = "not valid JSON" if isinstance(exc, json.JSONDecodeError) else str(exc)
            cachefs.discard(path)
            return CacheHit(None, why or type(exc).__name__)

    def put(
        self,
        key: str,
        material: dict[str, Any],
        payload: bytes | None,
        note: str,
        refusal: GraphRefusal | None = None,
    ) -> None:
        from onnxlint.cachefs import make_private_dir
        from onnxlint.fsutil import atomic_write_bytes

        body = payload or b""
        header = {
            "schema": CACHE_SCHEMA,
            "key": material,
            "status": "ok" if payload is not None else "error",
            "note": note,
            "refusal": refusal.error if refusal is not None else None,
            "refusal_every_level": refusal.every_level if refusal is not None else None,
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


def dims_key(dims: dict[str, int] | None) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((dims or {}).items()))
