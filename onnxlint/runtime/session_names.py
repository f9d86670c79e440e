"""Unnamed nodes in a real session: named in the session's copy, unnamed again in its result.

ORT reports the nodes it assigned partition by partition, and an unnamed node with the
name ``""``: the only way to pair such a node with the model's is by op type in the order
reported, which is the model's order only when the partitions do not interleave. On a
graph of unnamed nodes split between QNN and the CPU that pairing was wrong for 54 of the
358 nodes of the held-out SwiftF0 model (every one of them right once named).

So a session request may ask for its model with each unnamed main-graph node named after
its position (:func:`named_copy`), and the result is turned back (:func:`restore`): a
reported node whose name is one of those (or one ORT derived from it, ``_token_N``) is
unnamed again, and the unnamed ones come in the model's order, so that pairing by op type
in order is exact. A model whose tensors live in external files keeps its path (a copy
elsewhere would lose them) and is paired as before.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from onnxlint.runtime.normalise import strip_token
from onnxlint.runtime.results import AssignedNode, SessionResult

if TYPE_CHECKING:
    import onnx

PREFIX = "onnxlint_unnamed_"


def _graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    """``graph`` and every body in it, read as stored (the model is not checked yet)."""
    from onnxlint.index import stored_graphs

    yield graph
    for node in graph.node:
        for _, _, sub in stored_graphs(node.attribute):
            yield from _graphs(sub)


def _has_sidecars(model: onnx.ModelProto) -> bool:
    """An EPContext node may name a file beside the model, which a copy elsewhere loses."""
    return any(n.op_type == "EPContext" for g in _graphs(model.graph) for n in g.node)


def unnamed_names(model: onnx.ModelProto) -> dict[str, int]:
    """The name :func:`named_copy` gives each unnamed main-graph node (Constants aside:
    ORT never reports them), by the node's position; a prefix no name of the model starts
    with, so no name is taken twice."""
    graph = model.graph
    unnamed = [i for i, n in enumerate(graph.node) if not n.name and n.op_type != "Constant"]
    if not unnamed:
        return {}
    names = {n.name for g in _graphs(graph) for n in g.node if n.name}
    prefix = PREFIX
    while any(name.startswith(prefix) for name in names):
        prefix = "_" + prefix
    return {f"{prefix}{i}": i for i in unnamed}


def named_copy(
    model: str | os.PathLike[str] | bytes | onnx.ModelProto,
) -> tuple[bytes, dict[str, int]] | None:
    """The model's bytes with its unnamed main-graph nodes named (name -> position), or
    None when there is nothing to name, the model keeps tensors in external files, or it
    cannot be read (the session then reads it as it is and reports its own error)."""
    import onnx

    from onnxlint.tensors import has_external_data

    try:
        if isinstance(model, (str, os.PathLike)):
            proto = onnx.load(os.fspath(model), load_external_data=False)
        elif isinstance(model, bytes):
            proto = onnx.load_model_from_string(model)
        else:
            proto = model
    except Exception:  # the session reads the model itself and says what is wrong
        return None
    names = unnamed_names(proto)
    if not names or has_external_data(proto) or _has_sidecars(proto):
        return None
    if proto is model:  # the caller's model is never changed
        proto = onnx.ModelProto()
        proto.CopyFrom(model)
    for name, i in names.items():
        proto.graph.node[i].name = name
    return proto.SerializeToString(), names


def restore(result: SessionResult, names: Mapping[str, int]) -> SessionResult:
    """``result`` of a session of :func:`named_copy`'s model as the original's session
    reports it, except in order: the nodes it had named are unnamed again and come, after
    the others, in the model's order (ORT's own order is partition by partition)."""
    if not names:
        return result
    kept: list[AssignedNode] = []
    unnamed: list[tuple[int, int, AssignedNode]] = []
    for k, n in enumerate(result.assignment):
        at = names.get(strip_token(n.name))
        if at is None:
            kept.append(n)
        else:
            unnamed.append((at, k, replace(n, name="")))
    assignment = kept + [n for _, _, n in sorted(unnamed, key=lambda t: t[:2])]
    verdicts = [replace(v, name="") if strip_token(v.name) in names else v for v in result.verdicts]
    return replace(result, assignment=assignment, verdicts=verdicts)
