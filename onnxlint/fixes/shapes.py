"""Fixing dynamic dims: rewrite a model so that named (or positional) dims become static.

:func:`fix_shapes` takes ``dims`` (``{"batch": 1, "sequence": 128}``, applied to
every graph input, output and value_info that uses those names) and ``inputs``
(``{"pixel_values": (1, 3, 224, 224)}``, a whole input shape; the symbolic
names it covers are fixed everywhere too). It then re-runs shape inference,
replaces size inputs of Reshape/Expand/Tile/... that became known constants
(the ``Shape -> Gather -> Concat`` chains exporters emit) by initializers,
resolves ``-1``/``0`` entries of Reshape targets whose output is now static,
and drops the nodes that this leaves unused. The input model is never touched.

:func:`fix_command` and :func:`ort_session_options` build the text that
diagnostics and the CLI print: the exact ``onnxlint fix-shapes`` command for a
model, and the equivalent ONNX Runtime session options.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
import onnx
from onnx import numpy_helper

from onnxlint.analyses.shapes import (
    Dim,
    collect_value_types,
    infer_model,
    is_generated_dim,
    symbolic_could_help,
    value_type_of,
)
from onnxlint.analyses.symbolic import infer_and_store, lookup
from onnxlint.analyses.symbolic_cache import value_info_from_json, value_info_to_json
from onnxlint.index import iter_graphs, subgraphs
from onnxlint.tensors import DEFAULT_MAX_ELEMENTS, dataless_copy, restore_data

__all__ = [
    "DynamicInput",
    "FixShapesError",
    "FixShapesResult",
    "dynamic_dims",
    "fix_command",
    "fix_shapes",
    "ort_session_options",
    "request_from_fix_args",
    "suggested_value",
]

#: placeholder printed for a dim whose deployed size onnxlint cannot guess
PLACEHOLDER = "N"
_BATCH_NAMES = re.compile(r"^(batch|batch_size|batchsize|bs|n|b|num_batches|unk_batch)$", re.I)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: size inputs that :func:`fix_shapes` may replace by constants once they are known
_SIZE_SLOTS: dict[str, tuple[int, ...]] = {
    "Reshape": (1,),
    "Expand": (1,),
    "Tile": (1,),
    "ConstantOfShape": (0,),
    "Range": (0, 1, 2),
    "Slice": (1, 2, 3, 4),
    "Pad": (1, 3),
    "Squeeze": (1,),
    "Unsqueeze": (1,),
    "Resize": (3,),
    "Split": (1,),
    "TopK": (1,),
    "OneHot": (1,),
}


class FixShapesError(ValueError):
    """The requested dims cannot be applied to this model (the message says why)."""


@dataclass(frozen=True)
class DynamicInput:
    """A graph input whose shape is not fully static."""

    name: str
    shape: tuple[Dim, ...] | None  # None: unknown rank

    @property
    def named_dims(self) -> list[tuple[int, str]]:
        return (
            []
            if self.shape is None
            else [(i, d) for i, d in enumerate(self.shape) if isinstance(d, str)]
        )

    @property
    def unknown_dims(self) -> list[int]:
        return [] if self.shape is None else [i for i, d in enumerate(self.shape) if d is None]


@dataclass
class FixShapesResult:
    """What :func:`fix_shapes` produced; ``model`` is a new ModelProto."""

    model: onnx.ModelProto
    changed: bool
    #: every symbolic name that was fixed, with its value (including names implied by ``inputs``)
    dims: dict[str, int] = field(default_factory=dict)
    #: the new static shape of every graph input that was touched
    inputs: dict[str, tuple[int, ...]] = field(default_factory=dict)
    #: "node: input -> constant [..]" for each size input replaced by a constant
    folded: list[str] = field(default_factory=list)
    #: nodes removed because the folding left them unused
    removed_nodes: int = 0
    #: graph inputs that are still dynamic, with the dims that remain
    remaining: dict[str, list[str]] = field(default_factory=dict)
    inference_errors: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------
# what is dynamic, and the text that tells users how to fix it


def dynamic_dims(model: onnx.ModelProto) -> list[DynamicInput]:
    """The graph inputs (initializers excluded) whose shape is not fully static."""
    inits = {i.name for i in model.graph.initializer}
    out = []
    for vi in model.graph.input:
        if vi.name in inits or vi.type.WhichOneof("value") != "tensor_type":
            continue
        vt = value_type_of(vi.type)
        if not vt.is_static:
            out.append(DynamicInput(vi.name, vt.shape))
    return out


def suggested_value(name: str, assume: Mapping[str, int] | None = None) -> int | str:
    """The value a fix command proposes for a dim: the configured one, 1 for a batch, else N."""
    if assume and name in assume:
        return int(assume[name])
    return 1 if _BATCH_NAMES.match(name) else PLACEHOLDER


def fix_command(
    model_path: str | Path | None,
    inputs: Sequence[DynamicInput],
    assume: Mapping[str, int] | None = None,
) -> str:
    """The ``onnxlint fix-shapes`` command that fixes every dynamic dim of these inputs."""
    src = str(model_path) if model_path else "model.onnx"
    p = Path(src)
    out = str(p.with_name(p.stem + ".static" + (p.suffix or ".onnx")))
    parts = ["onnxlint", "fix-shapes", shlex.quote(src), "-o", shlex.quote(out)]
    named: dict[str, int | str] = {}
    for inp in inputs:
        for _, d in inp.named_dims:
            if _IDENT.fullmatch(d):
                named.setdefault(d, suggested_value(d, assume))
    for name, value in named.items():
        parts += ["--dim", shlex.quote(f"{name}={value}")]
    for inp in inputs:
        if inp.shape is None:
            parts += ["--input", shlex.quote(f"{inp.name}={PLACEHOLDER},...")]
        elif inp.unknown_dims or any(not _IDENT.fullmatch(d) for _, d in inp.named_dims):
            dims = [
                str(d)
                if isinstance(d, int)
                else str(named.get(d, PLACEHOLDER))
                if d
                else PLACEHOLDER
                for d in inp.shape
            ]
            parts += ["--input", shlex.quote(f"{inp.name}={','.join(dims)}")]
    return " ".join(parts)


def ort_session_options(dims: Mapping[str, int | str]) -> str:
    """Python that pins the same named dims at session creation, without rewriting the model."""
    lines = ["so = onnxruntime.SessionOptions()"]
    for name, value in dims.items():
        lines.append(f"so.add_free_dimension_override_by_name({name!r}, {value})")
    return "\n".join(lines)


def request_from_fix_args(
    args: Mapping[str, Any], values: Mapping[str, Any] | None = None
) -> tuple[dict[str, int], dict[str, tuple[int, ...]]]:
    """``(dims, inputs)`` for :func:`fix_shapes` from a ``fix-shapes`` Fix's ``args``.

    ``values`` supplies what the finding could only propose (the ``N`` placeholders): a dim
    name (``"sequence"``), ``"input[i]"`` for an unnamed dim of an input, or the input's
    name with a whole shape when its rank is unknown. A front end
    (a code action) asks the user for those; a missing one raises :class:`FixShapesError`.
    """
    chosen_values: dict[str, Any] = dict(values or {})
    dims: dict[str, int] = {}
    missing: list[str] = []
    for name, proposed in dict(args.get("dims", {})).items():
        chosen = chosen_values.get(name, proposed)
        if isinstance(chosen, int) and not isinstance(chosen, bool):
            dims[name] = chosen
        else:
            missing.append(name)
    inputs: dict[str, tuple[int, ...]] = {}
    for name, shape in dict(args.get("inputs", {})).items():
        if shape is None:  # unknown rank: only the user can give the whole shape
            if name in chosen_values:
                inputs[name] = tuple(int(v) for v in chosen_values[name])
            else:
                missing.append(name)
            continue
        if None not in shape:
            continue  # only named dims: ``dims`` covers them
        full: list[int] = []
        for i, d in enumerate(shape):
            key = f"{name}[{i}]"
            if isinstance(d, int):
                full.append(d)
            elif isinstance(d, str) and d in dims:
                full.append(dims[d])
            elif key in chosen_values:
                full.append(int(chosen_values[key]))
            else:
                missing.append(key)
        if len(full) == len(shape):
            inputs[name] = tuple(full)
    if missing:
        raise FixShapesError("no value chosen for: " + ", ".join(missing))
    return dims, inputs


# ---------------------------------------------------------------------------
# the rewrite


def fix_shapes(
    model: onnx.ModelProto,
    dims: Mapping[str, int] | None = None,
    inputs: Mapping[str, Sequence[int]] | None = None,
    *,
    fold: bool = True,
    origin: str = "",
) -> FixShapesResult:
    """A copy of ``model`` with the given dims fixed; raises :class:`FixShapesError` on bad requests.

    ``origin``: the content hash of ``model``, under which ORT's symbolic inference of the
    pinned copy is cached (``analyses.symbolic_cache``); "" (the default) caches nothing.
    """
    dims = dict(dims or {})
    wanted = {k: tuple(int(v) for v in vals) for k, vals in (inputs or {}).items()}
    for name, value in dims.items():
        if not isinstance(value, int) or value < 1:
            raise FixShapesError(f"--dim {name}={value}: the value must be a positive integer")
    mapping = _resolve_request(model, dims, wanted)

    # the rewrite works on a copy without the weights that no step reads (every value
    # onnxlint decodes is at most DEFAULT_MAX_ELEMENTS long; ONNX inference reads none,
    # ORT's symbolic inference is handed the originals), which get their data back
    # once at the end: copying them in, and back after each inference, was most of the
    # time of a what-if on a model with hundreds of MB of weights
    out, weights = dataless_copy(model, DEFAULT_MAX_ELEMENTS)
    if out is model:  # nothing large: an ordinary copy
        out = onnx.ModelProto()
        out.CopyFrom(model)
    changed = _apply(out, mapping, wanted)
    result = FixShapesResult(model=out, changed=changed, dims=dict(mapping))
    out, errors = infer_model(out)
    _fill_from_ort(out, weights, origin)
    result.inference_errors = errors
    if fold:
        result.folded, result.removed_nodes = _fold_size_inputs(out)
        if result.folded:
            out, errors = infer_model(out)
            result.inference_errors = errors
    result.model = restore_data(out, weights)
    result.changed = changed or bool(result.folded)
    before = {vi.name: value_type_of(vi.type) for vi in model.graph.input}
    for vi in out.graph.input:
        shape = value_type_of(vi.type).shape
        old = before.get(vi.name)
        touched = vi.name in wanted or (
            old is not None and any(isinstance(d, str) and d in mapping for d in old.shape or ())
        )
        if touched and shape is not None:
            result.inputs[vi.name] = tuple(d if isinstance(d, int) else -1 for d in shape)
    for dyn in dynamic_dims(out):
        left = [f"{dyn.name}[{i}] = {d!r}" for i, d in dyn.named_dims]
        left += [f"{dyn.name}[{i}] = ?" for i in dyn.unknown_dims]
        result.remaining[dyn.name] = left or [f"{dyn.name}: unknown rank"]
    return result


def _resolve_request(
    model: onnx.ModelProto, dims: Mapping[str, int], inputs: Mapping[str, tuple[int, ...]]
) -> dict[str, int]:
    """Check the request against the model; return every symbolic name -> value to apply."""
    inits = {i.name for i in model.graph.initializer}
    declared = {
        vi.name: vi
        for vi in model.graph.input
        if vi.name not in inits and vi.type.WhichOneof("value") == "tensor_type"
    }
    named_in_inputs: dict[str, list[str]] = {}
    for vi in declared.values():
        for d in vi.type.tensor_type.shape.dim:
            if d.WhichOneof("value") == "dim_param":
                named_in_inputs.setdefault(d.dim_param, []).append(vi.name)
    mapping: dict[str, int] = {}
    origin: dict[str, str] = {}
    for name, value in dims.items():
        if name not in named_in_inputs:
            known = ", ".join(sorted(named_in_inputs)) or "none"
            raise FixShapesError(f"no graph input has a dim named {name!r} (named dims: {known})")
        mapping[name], origin[name] = value, f"--dim {name}={value}"
    for name, values in inputs.items():
        if name not in declared:
            known = ", ".join(declared) or "none"
            raise FixShapesError(f"--input {name}: no such graph input (inputs: {known})")
        if any(v < 0 for v in values):
            raise FixShapesError(f"--input {name}: dims must be non-negative integers")
        vi = declared[name]
        tt = vi.type.tensor_type
        if tt.HasField("shape") and len(tt.shape.dim) != len(values):
            raise FixShapesError(
                f"--input {name}: the model declares rank {len(tt.shape.dim)}, got {len(values)} dims"
            )
        if not tt.HasField("shape"):
            continue
        for i, (d, v) in enumerate(zip(tt.shape.dim, values, strict=True)):
            which = d.WhichOneof("value")
            if which == "dim_value" and d.dim_value != v:
                raise FixShapesError(
                    f"--input {name}: dim {i} is {d.dim_value} in the model, not {v}"
                )
            if which == "dim_param" and d.dim_param:
                prev = mapping.get(d.dim_param)
                if prev is not None and prev != v:
                    raise FixShapesError(
                        f"conflicting values for dim {d.dim_param!r}: {prev} ({origin[d.dim_param]}) "
                        f"and {v} (--input {name})"
                    )
                mapping[d.dim_param], origin[d.dim_param] = v, f"--input {name}"
    return mapping


def _apply(
    model: onnx.ModelProto, mapping: Mapping[str, int], inputs: Mapping[str, tuple[int, ...]]
) -> bool:
    changed = False
    for vi in model.graph.input:
        if vi.name in inputs:
            tt = vi.type.tensor_type
            values = inputs[vi.name]
            if not tt.HasField("shape"):
                tt.shape.SetInParent()
            if len(tt.shape.dim) != len(values):
                del tt.shape.dim[:]
                for _ in values:
                    tt.shape.dim.add()
            for d, v in zip(tt.shape.dim, values, strict=True):
                if d.WhichOneof("value") != "dim_value" or d.dim_value != v:
                    d.dim_value = v  # clears dim_param (a oneof)
                    changed = True
    for g in iter_graphs(model.graph):
        for vi in (*g.input, *g.output, *g.value_info):
            if vi.type.WhichOneof("value") != "tensor_type":
                continue
            for d in vi.type.tensor_type.shape.dim:
                if d.WhichOneof("value") != "dim_param":
                    continue
                p = d.dim_param
                if p in mapping:
                    d.dim_value = mapping[p]
                    changed = True
                elif is_generated_dim(p) or (
                    not _IDENT.fullmatch(p) and set(_IDENT.findall(p)) & set(mapping)
                ):
                    # an inferencer's placeholder or an expression over a fixed name: let
                    # inference recompute it rather than keep a stale symbol
                    d.Clear()
    return changed


def _fill_from_ort(
    model: onnx.ModelProto, weights: dict[str, onnx.TensorProto] | None = None, origin: str = ""
) -> None:
    """Add value_info that only ORT's symbolic inference knows (contrib ops), in place
    (``weights``: the data of initializers ``model`` holds without it; ``origin``: as for
    :func:`fix_shapes`)."""
    known = {
        vi.name: value_type_of(vi.type) for vi in (*model.graph.value_info, *model.graph.output)
    }
    produced = [o for n in model.graph.node for o in n.output if o]
    gaps = {name for name in produced if name not in known or known[name].has_unknown}
    if not gaps or not symbolic_could_help(model, collect_value_types(model), gaps):
        return  # nothing ORT could add: skip its (slow) import
    outputs = {o.name for o in model.graph.output}
    made = set(produced)

    def pick(ort: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
        # one pass, not a scan of the list per value (quadratic: 28 s of a 10k-node lint's
        # what-if): each name's last answer, in the order of those answers, replaces the
        # value_info of that name at the end, as removing and appending one by one did
        chosen: dict[str, onnx.ValueInfoProto] = {}
        for vi in ort.graph.value_info:
            vt = value_type_of(vi.type)
            if vi.name in outputs or vi.name not in made or vt.has_unknown:
                continue
            if vi.name in known and not known[vi.name].has_unknown:
                continue
            chosen.pop(vi.name, None)
            chosen[vi.name] = vi
        return list(chosen.values())

    found = lookup(model, origin, "value_info", value_info_from_json, left=weights or {})
    chosen = infer_and_store(model, weights, found, pick, value_info_to_json)
    if chosen:
        names = {vi.name for vi in chosen}
        kept = [v for v in model.graph.value_info if v.name not in names]
        del model.graph.value_info[:]
        model.graph.value_info.extend([*kept, *chosen])


def _fold_size_inputs(model: onnx.ModelProto) -> tuple[list[str], int]:
    """Replace size inputs that are now known by initializers (main graph only), in place."""
    from onnxlint.analyses.dataflow import Dataflow
    from onnxlint.analyses.shapes import Shapes
    from onnxlint.config import Config
    from onnxlint.context import LintContext
    from onnxlint.index import ModelIndex
    from onnxlint.modelfile.read import LoadedModel

    ctx = LintContext(loaded=LoadedModel(model=model), index=ModelIndex(model), config=Config())
    df = ctx.analysis(Dataflow)
    shapes = ctx.analysis(Shapes)
    g = ctx.index.main
    live_before = _live(model.graph)
    used_before = _used_names(model.graph)
    taken = (
        {i.name for i in model.graph.initializer}
        | {o for n in model.graph.node for o in n.output}
        | {i.name for i in model.graph.input}
    )
    folded: list[str] = []
    new_inits: list[onnx.TensorProto] = []
    made: dict[tuple[str, tuple[int, ...]], str] = {}
    for ref in g.nodes:
        slots = _SIZE_SLOTS.get(ref.op_type) if ref.domain == "ai.onnx" else None
        if not slots:
            continue
        for s in slots:
            if s >= len(ref.node.input) or not ref.node.input[s]:
                continue
            name = ref.node.input[s]
            value = _static_value(ref, s, name, df, shapes, g)
            if value is None:
                continue
            key = (name, value)
            new_name = made.get(key)
            if new_name is None:  # one initializer per distinct value, however many readers
                new_name = made[key] = _unique(f"{name}__static", taken)
                vt = shapes.value_type(name)
                dtype = _np_dtype(vt.dtype if vt else None)
                # ``is_static``: every dim is an int, which the type of ``shape`` cannot say
                shape = cast("tuple[int, ...]", vt.shape) if vt and vt.is_static else -1
                arr: np.ndarray = np.array(value, dtype=dtype).reshape(shape)
                new_inits.append(numpy_helper.from_array(arr, new_name))
            ref.node.input[s] = new_name
            folded.append(f"{ref.path}: input {s} '{name}' -> {list(value)}")
    model.graph.initializer.extend(new_inits)
    removed = 0
    if folded:
        live_after = _live(model.graph)
        # only nodes that the folding made useless go; dead code the user had stays
        keep = [
            n for i, n in enumerate(model.graph.node) if i in live_after or i not in live_before
        ]
        removed = len(model.graph.node) - len(keep)
        if removed:
            del model.graph.node[:]
            model.graph.node.extend(keep)
            produced = {o for n in model.graph.node for o in n.output}
            infos = [vi for vi in model.graph.value_info if vi.name in produced]
            del model.graph.value_info[:]
            model.graph.value_info.extend(infos)
        used_after = _used_names(model.graph)
        dropped = [
            i
            for i, t in enumerate(model.graph.initializer)
            if t.name not in used_after and t.name in used_before
        ]
        # deleted where they are: clearing the field and extending it again with the kept
        # ones copied every weight (a second on a BERT-sized model)
        for i in reversed(dropped):
            del model.graph.initializer[i]
    return folded, removed


def _used_names(graph: onnx.GraphProto) -> set[str]:
    used = {i for n in graph.node for i in n.input if i} | _captured(graph)
    return used | {o.name for o in graph.output}


def _static_value(ref, slot, name, df, shapes, g):
    """The known integer value of a computed size input, resolved for Reshape -1/0 entries."""
    producer = g.producers.get(name)
    if name in g.initializers and not (ref.op_type == "Reshape" and slot == 1):
        return None
    if (
        producer is not None
        and producer.op_type == "Constant"
        and not (ref.op_type == "Reshape" and slot == 1)
    ):
        return None
    if producer is None and name not in g.initializers:
        return None  # a graph input or outer value: not ours to freeze
    if not df.foldable(name):
        return None
    value = df.value(name)
    if value is None or not all(isinstance(v, int) for v in value):
        return None
    if ref.op_type == "Reshape":
        out_vt = shapes.value_type(ref.node.output[0])
        allowzero = ref.attr("allowzero")
        if (
            out_vt is not None
            and out_vt.is_static
            and (allowzero is None or allowzero.i == 0)
            and any(v in (-1, 0) for v in value)
            and len(out_vt.shape) == len(value)
        ):
            return tuple(int(d) for d in out_vt.shape)
        if producer is None or producer.op_type == "Constant":
            return None  # an explicit constant without -1/0: nothing to improve
    return tuple(int(v) for v in value)


def _np_dtype(name: str | None) -> type:
    return {"int32": np.int32, "float": np.float32, "double": np.float64}.get(name or "", np.int64)


def _unique(base: str, taken: set[str]) -> str:
    name, k = base, 1
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


def _captured(graph: onnx.GraphProto) -> set[str]:
    """Names read inside subgraphs of this graph's nodes (they keep their producers alive)."""
    names: set[str] = set()
    for node in graph.node:
        for _, sub in subgraphs(node):
            for g in iter_graphs(sub):
                for n in g.node:
                    names.update(i for i in n.input if i)
                names.update(o.name for o in g.output)
    return names


def _live(graph: onnx.GraphProto) -> set[int]:
    """Indices of nodes that contribute to a graph output (or to a value a subgraph reads)."""
    producer: dict[str, int] = {}
    for i, n in enumerate(graph.node):
        for o in n.output:
            if o:
                producer[o] = i
    needed = [o.name for o in graph.output]
    live: set[int] = set()
    while needed:
        name = needed.pop()
        j = producer.get(name)
        if j is None or j in live:
            continue
        live.add(j)
        node = graph.node[j]
        needed += [x for x in node.input if x]
        for _, sub in subgraphs(node):
            for g in iter_graphs(sub):
                for n in g.node:
                    needed += [x for x in n.input if x]
                needed += [o.name for o in g.output]
    return live
