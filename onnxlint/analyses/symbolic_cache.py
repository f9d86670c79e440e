"""ORT's symbolic shape inference answers, kept on disk per input (``symbolic/``).

ORT's ``symbolic_shape_infer`` is pure Python and needs sympy: importing the two costs
about 0.3 s, and inferring a transformer export 0.1-10 s. Its answer depends only on the
model it is handed and on the installed onnx, onnxruntime and sympy, so a lint of a model
it has seen before (the editor saving the same file, CI linting an unchanged export, a
what-if pinning the same dims) reads the answer back instead, without importing either.

The key is the SHA-256 of the model handed to ORT (serialised deterministically:
ONNX's inferred copy, the large weights without their data) with its nodes' names and
doc strings left out; what stands for the data of the weights left out of it: the
SHA-256 of those weights when they hold at most :data:`WEIGHTS_HASH_MAX_BYTES` (counted
at 8 bytes per declared element, and as serialised), else the
content hash of the model the input was derived from; the versions of onnx and sympy,
and the identity of the onnxruntime build (``runtime.identity.ort_identity``). A derived
model without an origin hash (one onnxlint made and did not hash) is never cached.
ORT's tool reads a node's name only to write it into log lines and error messages
(checked in the tool of onnxruntime 1.24.1 and 1.32.0), and an error is kept as a
failure without its message: the answer for a model whose nodes were renamed is the
answer for the model, so an editor renaming a node does not pay for the inference again
(0.25 s of a 1k-node re-lint). A model with more weights than that still does: hashing
them would cost more than most lints.

What is kept is what the reader takes from ORT's answer, as JSON: the Shapes analysis's
table of value types (``answer="types"``), the shape fix's fully known main-graph
``value_info`` (``answer="value_info"``, each entry the serialised ``ValueInfoProto`` of a
tensor). Decoding a whole model through the loader's guards cost more than most lints
(0.1 s for ``synth_1k``); a table is read in milliseconds. The key therefore also names
onnxlint's version and :data:`TABLE_VERSION`, which changes with the table's meaning.

An entry is a JSON header line (schema, key, status, payload checksum) and the payload; a
failed run is kept too (status ``error``, no payload), since a failure can cost as long as
an answer. An entry is read through ``cachefs`` (a regular file of this user, bounded);
anything malformed, of another schema or another key, or a payload of the wrong shape is
discarded and recomputed. ``ONNXLINT_NO_CACHE`` (or ``--no-cache``) turns the cache off:
no read, no write.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

    import onnx

    from onnxlint.config import Config

SCHEMA = "onnxlint-symbolic-shapes/4"
#: the meaning of a stored answer: ``collect_value_types``' table, ``_fill_from_ort``'s pick
TABLE_VERSION = 1
#: the folder under the cache root
FOLDER = "symbolic"
#: entries kept (newest first) and their byte total
MAX_ENTRIES = 128
MAX_BYTES = 256 * 2**20
#: an answer larger than this is not stored (it is the size of the graph it describes)
MAX_ENTRY_BYTES = 64 * 2**20
#: up to this many bytes of weights left out of ORT's input, their own hash stands for
#: them in the key (about 20 ms to hash); past it, the origin model's content hash
WEIGHTS_HASH_MAX_BYTES = 32 * 2**20


class Answer:
    """A cached answer: ``value`` as :func:`put` was given it (None: ORT failed)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def key_material(
    model: onnx.ModelProto,
    origin: str,
    answer: str,
    config: Config | None = None,
    *,
    left: Mapping[str, onnx.TensorProto] | None = None,
) -> dict[str, Any] | None:
    """What the ``answer`` taken from ORT's answer for ``model`` depends on; None when it
    must not be cached (no ``origin`` hash, caching off, onnxruntime or sympy not found).

    ``left``: the weights whose data ``model`` lacks, by name; None: unknown, so the
    ``origin`` hash stands for them; empty: ``model`` is complete."""
    from onnxlint.runtime.identity import cache_enabled, ort_identity

    if not origin or not cache_enabled(config):
        return None
    ort = ort_identity()
    sympy = _sympy_version()
    if ort is None or sympy is None:
        return None
    from onnxlint.version import __version__

    digest = hashlib.sha256(_without_node_names(model)).hexdigest()
    return {
        "schema": SCHEMA,
        "answer": answer,
        "table": TABLE_VERSION,
        "onnxlint": __version__,
        "input_sha256": digest,
        "weights": _weights_key(origin, left),
        "onnx": _onnx_version(),
        "sympy": sympy,
        "ort": ort,
    }


def _weights_key(origin: str, left: Mapping[str, onnx.TensorProto] | None) -> str | None:
    """What stands in the key for the weights ORT's input lacks (None: it lacks none).

    Their sizes come from their dims (``ByteSize`` serialises a tensor to count it: half a
    second for BERT-base's weights), and hashing stops once the serialised bytes pass the
    limit (a tensor may hold more data than its dims declare)."""
    from onnxlint.tensors import element_count

    fallback = f"origin:{origin}"
    if left is None:
        return fallback
    if not left:
        return None
    declared = 0
    for t in left.values():
        count = element_count(t)
        if count is None:
            return fallback
        declared += count * 8  # no numeric ONNX type is wider than 8 bytes
        if declared > WEIGHTS_HASH_MAX_BYTES:
            return fallback
    digest = hashlib.sha256()
    hashed = 0
    for name in sorted(left):
        blob = left[name].SerializeToString(deterministic=True)
        hashed += len(blob)
        if hashed > WEIGHTS_HASH_MAX_BYTES:
            return fallback
        digest.update(len(blob).to_bytes(8, "little"))
        digest.update(blob)
    return f"sha256:{digest.hexdigest()}"


def _without_node_names(model: onnx.ModelProto) -> bytes:
    """``model`` serialised deterministically with every node's name and doc string empty
    (bodies and functions included), from a copy: ``model`` is not changed."""
    import onnx

    from onnxlint.index import iter_graphs, subgraphs

    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    nodes = [n for g in iter_graphs(copy.graph) for n in g.node]
    for fn in copy.functions:
        for node in fn.node:
            nodes.append(node)
            nodes += [n for _, sub in subgraphs(node) for g in iter_graphs(sub) for n in g.node]
    for node in nodes:
        node.name = ""
        node.doc_string = ""
    return copy.SerializeToString(deterministic=True)


def _onnx_version() -> str:
    import onnx

    return str(onnx.__version__)


def _sympy_version() -> str | None:
    """The installed sympy's version, without importing it (None: not installed)."""
    from onnxlint.distinfo import version

    try:
        return version("sympy")
    except Exception:  # broken metadata
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
            answer = Answer(json.loads(payload))
        else:
            raise ValueError("unknown status")
    except Exception:  # any malformed entry is discarded, never trusted
        cachefs.discard(path)
        return None
    cachefs.touch(path)  # pruning keeps the most recently used entries
    return answer


def put(material: dict[str, Any], value: Any) -> None:
    """Store an answer (JSON data; None: ORT failed); a cache that cannot be written costs
    time only."""
    from onnxlint.cachefs import make_private_dir, prune
    from onnxlint.fsutil import atomic_write_bytes

    body = b"" if value is None else json.dumps(value, separators=(",", ":")).encode("utf-8")
    if len(body) > MAX_ENTRY_BYTES:
        return
    header = {
        "schema": SCHEMA,
        "key": material,
        "status": "error" if value is None else "ok",
        "payload_sha256": hashlib.sha256(body).hexdigest(),
    }
    path = entry_path(material)
    try:
        make_private_dir(path.parent)
        atomic_write_bytes(path, json.dumps(header).encode("utf-8") + b"\n" + body)
        prune(path.parent, ("*.symbolic",), MAX_ENTRIES, MAX_BYTES)
    except OSError:
        pass


def value_info_to_json(chosen: list[onnx.ValueInfoProto]) -> list[str] | None:
    """The shape fix's picked value_info as this cache keeps it; None (not kept) unless every
    one is a tensor's."""
    if not all(vi.type.WhichOneof("value") == "tensor_type" for vi in chosen):
        return None
    return [base64.b64encode(vi.SerializeToString()).decode("ascii") for vi in chosen]


def value_info_from_json(data: Any) -> list[onnx.ValueInfoProto] | None:
    """The entries :func:`value_info_to_json` wrote; None when ``data`` is not those."""
    import onnx

    if not isinstance(data, list) or not all(isinstance(x, str) for x in data):
        return None
    out = []
    try:
        for text in data:
            vi = onnx.ValueInfoProto.FromString(base64.b64decode(text, validate=True))
            if vi.type.WhichOneof("value") != "tensor_type":
                return None
            out.append(vi)
    except Exception:  # binascii.Error, DecodeError
        return None
    return out
