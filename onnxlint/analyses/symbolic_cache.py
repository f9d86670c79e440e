"""ORT's symbolic shape inference answers, kept on disk per input (``symbolic/``).

ORT's ``symbolic_shape_infer`` is pure Python and needs sympy: importing the two costs
about 0.3 s, and inferring a transformer export 0.1-10 s. Its answer depends only on the
model it is handed and on the installed onnx, onnxruntime and sympy, so a lint of a model
it has seen before (the editor saving the same file, CI linting an unchanged export, a
what-if pinning the same dims) reads the answer back instead, without importing either.

The key is the SHA-256 of the exact model handed to ORT (serialised deterministically:
ONNX's inferred copy, the large weights without their data) together with the content
hash of the model it was derived from (which stands for those weights' data), the
versions of onnx and sympy, and the identity of the onnxruntime build
(``runtime.identity.ort_identity``). A derived model without an origin hash (one
onnxlint made and did not hash) is never cached.

An entry is a JSON header line (schema, key, status, payload checksum) and ORT's answer,
serialised; a failed run is kept too (status ``error``, no payload), since a failure can
cost as long as an answer. An entry is read through ``cachefs`` (a regular file of this
user, bounded) and its model through the loader's guards; anything malformed, of another
schema or another key is discarded and recomputed. ``ONNXLINT_NO_CACHE`` (or
``--no-cache``) turns the cache off: no read, no write.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import onnx

    from onnxlint.config import Config

SCHEMA = "onnxlint-symbolic-shapes/1"
#: the folder under the cache root
FOLDER = "symbolic"
#: entries kept (newest first) and their byte total
MAX_ENTRIES = 128
MAX_BYTES = 256 * 2**20
#: an answer larger than this is not stored (it is the size of the graph it describes)
MAX_ENTRY_BYTES = 64 * 2**20


class Answer:
    """A cached answer: ``model`` is ORT's (None: ORT failed on this input)."""

    __slots__ = ("model",)

    def __init__(self, model: onnx.ModelProto | None) -> None:
        self.model = model


def key_material(
    model: onnx.ModelProto, origin: str, config: Config | None = None
) -> dict[str, Any] | None:
    """What ORT's answer for ``model`` depends on; None when it must not be cached (no
    ``origin`` hash, caching off, onnxruntime or sympy not found)."""
    from onnxlint.runtime.identity import cache_enabled, ort_identity

    if not origin or not cache_enabled(config):
        return None
    ort = ort_identity()
    sympy = _sympy_version()
    if ort is None or sympy is None:
        return None
    import onnx

    digest = hashlib.sha256(model.SerializeToString(deterministic=True)).hexdigest()
    return {
        "schema": SCHEMA,
        "input_sha256": digest,
        "origin": origin,
        "onnx": onnx.__version__,
        "sympy": sympy,
        "ort": ort,
    }


def _sympy_version() -> str | None:
    """The installed sympy's version, without importing it (None: not installed)."""
    from importlib import metadata

    try:
        return metadata.version("sympy")
    except Exception:  # PackageNotFoundError, or broken metadata
        return None


def entry_path(material: dict[str, Any]) -> Path:
    from onnxlint.cachefs import cache_root

    blob = json.dumps(material, sort_keys=True, separators=(",", ":")).encode("utf-8")
    return cache_root() / FOLDER / (hashlib.sha256(blob).hexdigest()[:40] + ".symbolic")


def get(material: dict[str, Any]) -> Answer | None:
    """The stored answer for ``material``; None when there is none to trust."""
    from onnxlint import cachefs

    path = entry_path(material)
    raw, _ = cachefs.read_or_discard(path, MAX_ENTRY_BYTES + (1 << 20))
    if raw is None:
        return None
    try:
        entry, payload = cachefs.split_entry(raw, SCHEMA, material)
        status = entry.get("status")
        if status == "error" and not payload:
            answer = Answer(None)
        elif status == "ok":
            answer = Answer(_guarded_model(payload))
        else:
            raise ValueError("unknown status")
    except Exception:  # any malformed entry is discarded, never trusted
        cachefs.discard(path)
        return None
    cachefs.touch(path)  # pruning keeps the most recently used entries
    return answer


def put(material: dict[str, Any], model: onnx.ModelProto | None) -> None:
    """Store ORT's answer (None: it failed); a cache that cannot be written costs time only."""
    from onnxlint.cachefs import make_private_dir, prune
    from onnxlint.fsutil import atomic_write_bytes

    body = b"" if model is None else model.SerializeToString()
    if len(body) > MAX_ENTRY_BYTES:
        return
    header = {
        "schema": SCHEMA,
        "key": material,
        "status": "error" if model is None else "ok",
        "payload_sha256": hashlib.sha256(body).hexdigest(),
    }
    path = entry_path(material)
    try:
        make_private_dir(path.parent)
        atomic_write_bytes(path, json.dumps(header).encode("utf-8") + b"\n" + body)
        prune(path.parent, ("*.symbolic",), MAX_ENTRIES, MAX_BYTES)
    except OSError:
        pass


def _guarded_model(payload: bytes) -> onnx.ModelProto:
    """A stored answer, decoded through the loader's guards like any model onnxlint reads;
    raises ValueError when the loader refuses it."""
    from onnxlint.modelfile.read import read

    loaded = read(payload)
    if loaded.model is None:
        raise ValueError("the stored answer is refused by the loader")
    return loaded.model
