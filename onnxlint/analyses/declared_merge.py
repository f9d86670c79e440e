"""ORT's lenient merge of a declared shape with the one its inference computes.

When a value's ``value_info`` (or a graph output's type) contradicts what inference
computes for it, ONNX's strict inference fails and its lenient pass keeps the declaration
as written. ORT's graph resolution does neither: ``MergeShapeInfo`` in
``onnxruntime/core/graph/graph.cc`` logs "Error merging shape info ... Falling back to
lenient merge" and keeps the union of the two (ONNX's ``UnionShapeInfo``): a rank that
differs leaves the value with no shape, a dimension that differs becomes unknown, the
rest of the declaration stays, and the value's consumers are inferred from that union.
QNN, which needs every shape, then refuses the nodes that read or write a value that lost
a dimension ("Cannot get shape"); measured with onnxruntime 1.32.0 + onnxruntime-qnn
2.7.0 (tests/partition/test_declared_shape_conflicts.py), as jax2onnx 0.17.1 declares a
value in its NHWC layout after a transpose to NCHW (the twentieth held-out batch).

ONNX's inference would fill the union's unknown dimensions again from what it infers, so
:func:`merge_first_conflict` cuts the value out for the inference copy: the producer
writes a stand-in name, and the value becomes a graph input of the union's type, from
which its consumers are inferred. :func:`restore_merged` puts the names back in the
answer. Values of the main graph only (a body's inputs are positional).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import onnx

#: conflicts resolved one by one before the lenient pass takes over (each costs two passes)
MAX_ROUNDS = 16
_STAND_IN = "__ort_merged"

_CONFLICT = re.compile(
    r"\(op_type:(?P<op>[^,)]+)(?:, node name: (?P<name>[^)]*))?\): \[ShapeInferenceError\] "
    r"Inferred shape and existing shape differ in "
    r"(?:rank: \((?P<inferred_rank>\d+)\) vs \((?P<declared_rank>\d+)\)"
    r"|dimension (?P<dim>\d+): \((?P<inferred>-?\d+)\) vs \((?P<declared>-?\d+)\))"
)


def has_conflict(messages: list[str]) -> bool:
    """Whether a strict inference error names a declaration that contradicts inference."""
    return any(_CONFLICT.search(m) for m in messages)


def _conflicting(
    g: onnx.GraphProto, m: re.Match[str]
) -> tuple[int, int, onnx.ValueInfoProto] | None:
    """(node index, output slot, declaration) of the conflict ``m`` names in ``g``."""
    declared = {vi.name: vi for vi in (*g.value_info, *g.output)}
    for ni, n in enumerate(g.node):
        if n.op_type != m["op"] or (m["name"] is not None and n.name != m["name"]):
            continue
        for slot, out in enumerate(n.output):
            vi = declared.get(out)
            if vi is None or not vi.type.tensor_type.HasField("shape"):
                continue
            dims = vi.type.tensor_type.shape.dim
            if m["declared_rank"] is not None:
                if len(dims) == int(m["declared_rank"]):
                    return ni, slot, vi
                continue
            d, value = int(m["dim"]), int(m["declared"])
            if d < len(dims) and dims[d].HasField("dim_value") and dims[d].dim_value == value:
                return ni, slot, vi
    return None


def _union(declared: onnx.TypeProto, inferred: onnx.TypeProto | None) -> onnx.TypeProto:
    """ONNX's ``UnionShapeInfo`` of the inferred type into the declared one."""
    out = onnx.TypeProto()
    out.CopyFrom(declared)
    tt = out.tensor_type
    if inferred is None or not inferred.tensor_type.HasField("shape"):
        return out
    mine, theirs = tt.shape.dim, inferred.tensor_type.shape.dim
    if len(mine) != len(theirs):
        tt.ClearField("shape")
        return out
    for a, b in zip(mine, theirs, strict=True):
        same_value = (
            a.HasField("dim_value") and b.HasField("dim_value") and a.dim_value == b.dim_value
        )
        same_param = (
            a.HasField("dim_param") and b.HasField("dim_param") and a.dim_param == b.dim_param
        )
        if not (same_value or same_param):
            a.Clear()
    return out


def merge_first_conflict(
    model: onnx.ModelProto, message: str, rules: frozenset[tuple[str, str]] | None = None
) -> bool:
    """Cut out, in place, the value of the first conflict ``message`` (a strict inference
    error) names: its producer writes a stand-in, and it becomes a graph input of ORT's
    union of the declared and the inferred type. Whether a conflict was found."""
    from onnxlint.analyses.contrib_types import infer_shapes

    g = model.graph
    found = m = None
    for m in _CONFLICT.finditer(message):
        # a Constant's declaration ORT never reads: its output is an initializer (and the
        # lenient pass drops such declarations, shapes.strip_constant_declarations)
        if m["op"] != "Constant" and (found := _conflicting(g, m)) is not None:
            break
    if found is None:
        return False
    ni, slot, vi = found
    declared = onnx.TypeProto()
    declared.CopyFrom(vi.type)
    cut_value(g, vi.name, ni, slot)
    stand_in = vi.name + _STAND_IN
    try:  # what the producer infers once nothing is declared for its output
        inferred = infer_shapes(model, strict_mode=False, data_prop=False, rules=rules)
        types = {v.name: v.type for v in inferred.graph.value_info}
    except Exception:
        types = {}
    g.input[-1].type.CopyFrom(_union(declared, types.get(stand_in)))
    if m is not None and m["declared_rank"] is not None:  # ranks differ: no shape at all
        g.input[-1].type.tensor_type.ClearField("shape")
    return True


def cut_value(g: onnx.GraphProto, name: str, ni: int | None = None, slot: int = 0) -> bool:
    """Cut ``name`` out of ``g`` in place: its producer (node ``ni``, output ``slot``, or
    found by name) writes a stand-in, and ``name`` becomes a graph input typed as it is
    declared. Whether it was (a value without producer or declaration is not)."""
    vi = next((v for v in (*g.value_info, *g.output) if v.name == name), None)
    if ni is None:
        ni, slot = next(
            ((i, k) for i, n in enumerate(g.node) for k, o in enumerate(n.output) if o == name),
            (None, 0),
        )
    if vi is None or ni is None:
        return False
    g.node[ni].output[slot] = name + _STAND_IN
    g.input.append(onnx.helper.make_value_info(name, vi.type))
    for i in reversed(range(len(g.value_info))):  # a graph output keeps its entry
        if g.value_info[i].name == name:
            del g.value_info[i]
    return True


def merged_names(
    model: onnx.ModelProto, rules: frozenset[tuple[str, str]] | None
) -> frozenset[str]:
    """The main-graph values whose declarations inference contradicts, as ORT meets them
    (:func:`merge_conflicts` on a copy): a later graph ORT wrote keeps their unions as
    declared types, which ONNX's inference would fill again unless they are cut."""
    work = onnx.ModelProto()
    work.CopyFrom(model)
    n_inputs = len(work.graph.input)
    merge_conflicts(work, rules)
    return frozenset(i.name for i in work.graph.input[n_inputs:])


def restore_merged(model: onnx.ModelProto) -> None:
    """Undo, in place, the cuts of :func:`merge_first_conflict` in an inference answer:
    the producers write their values again, typed as the graph inputs were (ORT's union)."""
    g = model.graph
    stand_ins = {o for n in g.node for o in n.output if o.endswith(_STAND_IN)}
    cut = {i.name: i for i in g.input if i.name + _STAND_IN in stand_ins}
    if not cut:
        return
    for n in g.node:
        for slot, out in enumerate(n.output):
            if out in stand_ins and out[: -len(_STAND_IN)] in cut:
                n.output[slot] = out[: -len(_STAND_IN)]
    kept_vi = [v for v in g.value_info if v.name not in stand_ins]
    del g.value_info[:]
    g.value_info.extend(kept_vi)
    outputs = {o.name: o for o in g.output}
    for name, vi in cut.items():
        if name in outputs:
            outputs[name].type.CopyFrom(vi.type)
        else:
            g.value_info.append(vi)
    kept_in = [i for i in g.input if i.name not in cut]
    del g.input[:]
    g.input.extend(kept_in)


def merged_copy(
    source: onnx.ModelProto | bytes, message: str, rules: frozenset[tuple[str, str]] | None
) -> onnx.ModelProto | None:
    """A copy of ``source`` (a model or its bytes) with the first conflict ``message``
    names cut out (:func:`merge_first_conflict`); None when it names none."""
    if not has_conflict([message]):
        return None
    try:
        model = onnx.ModelProto.FromString(source) if isinstance(source, bytes) else source
    except Exception:  # not a model: the lenient pass reports it
        return None
    mended = onnx.ModelProto()
    mended.CopyFrom(model)
    return mended if merge_first_conflict(mended, message, rules) else None


def merge_conflicts(model: onnx.ModelProto, rules: frozenset[tuple[str, str]] | None) -> bool:
    """Cut out, in place, every value whose declaration inference contradicts, one strict
    pass per conflict (at most :data:`MAX_ROUNDS`), as ORT's resolution meets them;
    whether any was."""
    from onnxlint.analyses.contrib_types import infer_shapes

    any_cut = False
    for _ in range(MAX_ROUNDS):
        try:
            infer_shapes(model, strict_mode=True, data_prop=False, rules=rules)
            break
        except Exception as exc:  # the conflict, or an error left to the lenient pass
            if not merge_first_conflict(model, str(exc), rules):
                break
            any_cut = True
    return any_cut


def infer_merged(
    source: onnx.ModelProto | bytes,
    data_prop: bool,
    rules: frozenset[tuple[str, str]] | None,
    lenient_source: Callable[[onnx.ModelProto | bytes], onnx.ModelProto | bytes],
    one_line: Callable[[str], str],
) -> tuple[onnx.ModelProto | None, list[str]]:
    """ONNX's inference, strict then lenient (on ``lenient_source(source)``); the errors
    (``one_line`` of each failed pass's message); never raises, None when no pass ran.
    A strict failure that names a contradicted declaration is merged as ORT merges it and
    the strict pass runs again (at most :data:`MAX_ROUNDS` times); the answer has the
    cut values back (:func:`restore_merged`)."""
    from onnxlint.analyses.contrib_types import infer_shapes

    errors: list[str] = []
    cut = False
    for strict in (True, False):
        for round_ in range(MAX_ROUNDS + 1):
            try:
                inferred = infer_shapes(
                    source, strict_mode=strict, data_prop=data_prop, rules=rules
                )
            except MemoryError:
                errors.append("out of memory during shape inference")
                break
            except Exception as exc:  # InferenceError, ValidationError, protobuf errors
                if round_ == 0:
                    errors.append(one_line(str(exc)))
                more = strict and round_ < MAX_ROUNDS
                mended = merged_copy(source, str(exc), rules) if more else None
                if mended is None:
                    break
                source, cut = mended, True
                continue
            if cut:
                restore_merged(inferred)
            return inferred, errors
        if strict:
            source = lenient_source(source)
    return None, errors
