"""A binary model saved again with only its metadata changed: the last result carries over.

An exporter run again, or a tool that stamps a file, often rewrites a model whose
graph is byte for byte what it was: only ``producer_name``, ``producer_version``,
``domain``, ``model_version`` or ``doc_string`` (ModelProto fields 2-6) differ. No rule
and no analysis reads those five fields; only the graph view's header prints them. So
the findings on the new bytes are the findings on the previous ones, and re-linting a
10k-node model for them costs seconds while publishing them costs milliseconds.

What has to hold, and why each condition makes the result the same as a fresh lint's:

- every other top-level field is the same, in the same order, byte for byte
  (``Layout.rest``): the decoded graph, opsets, functions, metadata_props, IR version
  and unknown fields are then equal, since protobuf decodes each field on its own;
- the previous model loaded and was linted from exactly the bytes its layout describes;
- the new metadata passes the loader's string check (UTF-8, name lengths), the file
  is within the size limit and is not taken for ONNX text, and both files are on the
  same side of the size from which the loader counts a file on the wire before decoding it;
- both models, and both files, are on the same side of every size limit a lint
  compares them with (ORT's symbolic inference in the shape analysis, protobuf's 2 GiB in
  onnx.checker);
- the same settings, configuration file and confirmation state (off), and no EP that
  asks for ORT's level-1 graph: ORT is given the model's bytes, and what it does with
  them is only proven by running it;
- the model has no ``metadata_props`` and no EPContext node: the compiled-model checks
  read those and may hand the file to ORT.

The new result shares the previous one's index and model, which are never changed: the
new metadata travels beside them (``ModelState.metadata``), for the graph view's header,
the only place the language server shows those fields.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import onnx

from onnxlint.lsp.state import ModelState
from onnxlint.modelfile.measure import first_string_problem, serialized_size
from onnxlint.modelfile.prescan import _varint, top_level_fields

if TYPE_CHECKING:
    from onnxlint.config import Config
    from onnxlint.index import ModelIndex

#: ModelProto fields that no rule or analysis reads, by number, with their wire type
#: (2: length-delimited strings; 0: model_version, a varint)
METADATA_FIELDS: dict[int, int] = {2: 2, 3: 2, 4: 2, 5: 0, 6: 2}


#: sizes a lint compares a model's or a file's size with, besides the shape analysis's
#: limit for ORT's symbolic inference: protobuf's 2 GiB (onnx.checker refuses bytes over
#: it, less 33 for the object header it counts; serialising a larger message fails)
PROTOBUF_LIMITS = (2**31 - 33, 2**31)
SIZE_MARGIN = 64


@dataclass(frozen=True)
class Layout:
    """The top-level wire layout of a binary model's bytes, split at its metadata."""

    #: SHA-256 of every top-level field other than the metadata, in order, tags included
    rest: str
    #: the metadata fields as they are on the wire, in order
    meta: bytes
    #: the file's length in bytes
    size: int
    #: the graph's fields (GraphProto, ModelProto field 7) in wire order, as (field number,
    #: digest of the field with its tag); None: no graph, or more than one graph field
    #: (protobuf merges them). What a one-node edit is found by (``node_edit_at``)
    graph: tuple[tuple[int, bytes], ...] | None = None
    #: SHA-256 of the top-level fields but the metadata and the graph, in order, the
    #: graph's place marked: with ``graph``, what ``node_edit_at`` compares
    outer: str = ""
    #: where each of the main graph's node fields lies in the bytes (tag included), in order
    nodes: tuple[tuple[int, int], ...] = ()

    @classmethod
    def of(cls, data: bytes) -> Layout | None:
        """The layout of ``data`` (None: not valid protobuf, or a metadata field whose
        wire type is not the one ONNX declares)."""
        fields = top_level_fields(data)
        if fields is None:
            return None
        rest, outer = hashlib.sha256(), hashlib.sha256()
        meta = bytearray()
        view = memoryview(data)
        graphs = sum(1 for number, *_ in fields if number == GRAPH_FIELD)
        graph: tuple[tuple[int, bytes], ...] | None = None
        nodes: tuple[tuple[int, int], ...] = ()
        for number, wire, start, end in fields:
            expected = METADATA_FIELDS.get(number)
            if number == GRAPH_FIELD and wire == 2 and graphs == 1:
                body = _payload_start(data, start, end)
                found = _graph_fields(view[body:end], body)
                if found is not None:
                    graph, nodes = found
                    # the graph's tag and length, then each of its fields' digests: equal
                    # digests for equal bytes, as hashing the field whole would give
                    rest.update(view[start:body])
                    for sub_number, digest in graph:
                        rest.update(sub_number.to_bytes(4, "little") + digest)
                    outer.update(b"graph")
                    continue
            if expected is None:
                rest.update(view[start:end])
                outer.update(view[start:end])
            elif wire == expected:
                meta += view[start:end]
            else:
                return None
        return cls(rest.hexdigest(), bytes(meta), len(data), graph, outer.hexdigest(), nodes)

    def metadata(self) -> onnx.ModelProto | None:
        """The metadata fields decoded on their own (None: they do not decode)."""
        try:
            return onnx.ModelProto.FromString(self.meta)
        except Exception:
            return None


#: ModelProto's graph field, and GraphProto's node field
GRAPH_FIELD, NODE_FIELD = 7, 1


def _payload_start(data: bytes, start: int, end: int) -> int:
    """Where the payload of the length-delimited field ``data[start:end]`` (its tag
    included; ``top_level_fields`` checked it) starts: past the tag and the length."""
    _, pos = _varint(data, start, end)
    _, pos = _varint(data, pos, end)
    return pos


def _graph_fields(
    payload: memoryview, offset: int
) -> tuple[tuple[tuple[int, bytes], ...], tuple[tuple[int, int], ...]] | None:
    """(field number, digest) of each field of a serialized GraphProto, in wire order, and
    where its node fields lie (``offset``: where the payload starts in the file)."""
    # read from bytes: indexing a memoryview costs twice as much in the varint loop; the
    # graph of a model with weights is mostly the weights, hashed from the view uncopied
    fields = top_level_fields(bytes(payload) if len(payload) < 2**26 else payload)  # type: ignore[arg-type]
    if fields is None:
        return None
    sha = hashlib.sha256
    digests = tuple((number, sha(payload[a:b]).digest()[:16]) for number, _, a, b in fields)
    spans = tuple((offset + a, offset + b) for number, _, a, b in fields if number == NODE_FIELD)
    return digests, spans


def node_edit_at(before: Layout, after: Layout) -> int | None:
    """The position (among the main graph's nodes) of the one node whose bytes differ
    between the models laid out as ``before`` and ``after``, when nothing else differs:
    the same top-level fields, metadata included, and the same graph fields in the same
    order but that node; None otherwise (two nodes, a node added, any other change)."""
    if before.graph is None or after.graph is None or before.meta != after.meta:
        return None
    if len(before.graph) != len(after.graph):
        return None
    changed: int | None = None
    nodes = 0
    for (a_number, a_digest), (b_number, b_digest) in zip(before.graph, after.graph, strict=True):
        if a_number != b_number:
            return None
        if a_digest != b_digest:
            if a_number != NODE_FIELD or changed is not None:
                return None
            changed = nodes
        nodes += a_number == NODE_FIELD
    if changed is None:
        return None
    # the rest of the model: the top-level fields but the graph, which compared above
    return changed if before.outer == after.outer else None


@dataclass(frozen=True)
class MetadataEdit:
    """New bytes that differ from a linted model's in metadata only."""

    #: the new bytes' layout
    layout: Layout
    #: the new values of the five fields, decoded on their own
    metadata: onnx.ModelProto
    #: the new model's serialized size
    model_bytes: int
    #: the previous model's serialized size (measured here when it was not known)
    prior_bytes: int


def metadata_edit(
    before: Layout,
    index: ModelIndex,
    model_bytes: int | None,
    data: bytes,
    layout: Layout,
    config: Config,
) -> MetadataEdit | None:
    """The edit from the bytes laid out as ``before`` (decoded and indexed as ``index``;
    ``model_bytes``: that model's serialized size, None: not measured yet) to ``data``
    (laid out as ``layout``), when a lint of ``data`` with ``config`` gives the findings
    it gave (the module's docstring says when); None otherwise: the caller lints.

    The caller checks the rest: the same settings, configuration file and confirmation
    state, and that the previous bytes loaded and were linted as they are.
    """
    from onnxlint.analyses.shapes import SYMBOLIC_MAX_BYTES
    from onnxlint.modelfile.read import WIRE_COUNT_FROM_BYTES, looks_like_text

    limits = config.limits
    if not 0 < len(data) <= limits.max_file_bytes or looks_like_text(data) or _asks_ort(config):
        return None
    if layout.rest != before.rest or layout.size != len(data):
        return None
    counted_from = min(2 * limits.max_nodes, WIRE_COUNT_FROM_BYTES)
    if (layout.size > counted_from) != (before.size > counted_from):
        return None
    new, old = layout.metadata(), before.metadata()
    if new is None or old is None or first_string_problem(new, limits.max_name_length):
        return None
    model = index.model
    if model.metadata_props or any(n.op_type == "EPContext" for n in index.nodes):
        return None
    old_size = model_bytes if model_bytes is not None else serialized_size(model)
    # a message's size is the sum of its fields' sizes: only the metadata's changed
    new_size = old_size - old.ByteSize() + new.ByteSize()
    sizes = ((before.size, layout.size), (old_size, new_size))
    size_limits = (SYMBOLIC_MAX_BYTES, *PROTOBUF_LIMITS)
    if any(_straddles(a, b, limit) for a, b in sizes for limit in size_limits):
        return None
    return MetadataEdit(layout, new, new_size, old_size)


def _straddles(a: int, b: int, limit: int) -> bool:
    """Whether sizes ``a`` and ``b`` may lie on two sides of ``limit`` (either within
    ``SIZE_MARGIN`` of it counts: whether a check says ``>`` or ``>=`` does not matter)."""
    return min(a, b) <= limit + SIZE_MARGIN and max(a, b) >= limit - SIZE_MARGIN


def _asks_ort(config: Config) -> bool:
    """Whether a lint with ``config`` hands the model to ORT (its level-1 graph, or real
    sessions); True as well when the EPs cannot be resolved (the lint reports that)."""
    from onnxlint import engine
    from onnxlint.analyses import level1

    try:
        profiles = engine.resolve_eps(list(config.eps), config)
    except Exception:
        return True
    return level1.needed(config, profiles)


def carry_over(
    prior: ModelState,
    data: bytes,
    layout: Layout,
    digest: str,
    config: Config,
    settings_key: tuple[object, ...],
    stamp: tuple[object, ...],
    confirm_mode: str,
    notes: list[str],
) -> ModelState | None:
    """``prior``'s result for ``data`` (laid out as ``layout``, SHA-256 ``digest``) when the
    two differ in metadata only and the lint would be the same (``carryover``); None: lint
    ``data``.

    The new result shares ``prior``'s index and model; neither is changed.
    """
    index, before = prior.index, prior.layout
    if (
        index is None
        or before is None
        or prior.report.fatal
        or confirm_mode != "off"
        or prior.confirm_mode != "off"
        or prior.settings_key != settings_key
        or prior.config_stamp != stamp
        or prior.notes != notes  # the configuration's notes and no note of its own
    ):
        return None
    edit = metadata_edit(before, index, prior.model_bytes, data, layout, config)
    if edit is None:
        return None
    prior.model_bytes = edit.prior_bytes  # measured once per result
    report = replace(
        prior.report,
        content_hash=digest,
        diagnostics=list(prior.report.diagnostics),
        stats=dict(prior.report.stats),
    )
    return ModelState(
        prior.uri,
        prior.path,
        digest,
        settings_key,
        report,
        False,
        index=index,
        value_types=prior.value_types,
        confirmed=dict(prior.confirmed),
        config_stamp=stamp,
        confirm_mode=confirm_mode,
        layout=edit.layout,
        model_bytes=edit.model_bytes,
        real_path=prior.real_path,
        carried_over=True,
        metadata=edit.metadata,
        # what the next rewrite with one node edited reads from this result (``edits``):
        # the new bytes load as cleanly under the same limits (the string check above),
        # and no analysis or rule reads the metadata
        clean_limits=prior.clean_limits,
        external=prior.external,
        analyses=dict(prior.analyses),
    )


def same_file(prior: ModelState, uri: str, path: Path | None) -> bool:
    """Whether ``path`` is still the file ``prior`` was linted from, as the loader resolves
    it: the same real file (external data resolves against its folder), inside the folder
    the path names (the loader refuses a link leading out of it)."""
    if prior.uri != uri or prior.path != path:
        return False
    if path is None:
        return prior.real_path is None
    try:
        real = Path(os.path.realpath(path))
        folder = Path(os.path.realpath(path.parent))
    except (OSError, ValueError):
        return False
    return real == prior.real_path and folder in real.parents
