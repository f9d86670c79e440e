"""Shape analysis: the element type and shape of every value, computed once per model.

ONNX shape inference (``strict_mode=True``; on a strict failure the error is
kept and a lenient pass fills in what it can). A cheap pass without data
propagation runs first; data propagation (``data_prop=True``), which evaluates
small shape vectors, replaces it only when the model computes shapes from values
and its rank-1 tensors are small: ONNX's propagation costs memory per element of
every rank-1 tensor, and a fuzzed 10^9-element input took 18 GB. Then, only
where ONNX left some dims or ranks unknown, ONNX Runtime's symbolic shape
inference (``onnxruntime.tools.symbolic_shape_infer``) fills those gaps. That
pass is optional and guarded: it is skipped for large models and its failures
never stop the lint.

Dims are an ``int`` (static), a ``str`` (a symbolic name such as ``"batch"``
or an expression such as ``"2*sequence"``) or ``None`` (unknown). Names the
inferencers invent for dims they know nothing about (ONNX's ``unk__3``, ORT's
``NonZero_11_o0__d1``) are turned back into ``None``: they carry no meaning a
user could fix.

Value names are SSA across the model (main graph and control-flow bodies), so
a single table answers for every graph. Model-local function bodies are not
inferred by ONNX and are not covered.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING

import onnx

from onnxlint.analyses.contrib_types import missing_imports, used_rules
from onnxlint.analyses.declared_merge import infer_merged
from onnxlint.analyses.static_types import (
    Dim,
    ValueType,
    dtype_name,
    filled_from,
    is_generated_dim,
    types_from_json,
    types_to_json,
    value_type_of,
)

# ORT's symbolic inference has its own module; tools and tests import its names from here
from onnxlint.analyses.symbolic import _symbolic_class as _symbolic_class
from onnxlint.analyses.symbolic import infer_and_store, lookup, symbolic_unavailable
from onnxlint.analyses.symbolic import symbolic_infer as symbolic_infer
from onnxlint.heap import TRIM_MIN_NODES, release_freed
from onnxlint.index import iter_graphs  # the one graph walk; analyses import it from here too
from onnxlint.modelfile.measure import serialized_size
from onnxlint.node_order import index_out_of_order, out_of_order

if TYPE_CHECKING:
    from onnxlint.config import Config
    from onnxlint.context import LintContext

__all__ = [
    "Dim",
    "Shapes",
    "ValueType",
    "dtype_name",
    "infer_model",
    "is_generated_dim",
    "value_type_of",
]

#: ORT's symbolic inference is skipped above these sizes: it is pure Python and
#: can take minutes on large graphs, for dims that rarely change a verdict.
SYMBOLIC_MAX_NODES = 5_000
SYMBOLIC_MAX_BYTES = 512 * 1024 * 1024

#: ops whose output sizes nobody can infer statically: ORT would only invent names for them
_UNFILLABLE = frozenset({"NonZero", "Unique", "NonMaxSuppression", "Compress", "StringSplit"})


def symbolic_could_help(
    model: onnx.ModelProto, table: dict[str, ValueType], gaps: set[str]
) -> bool:
    """Whether some gap that matters (a value something reads) starts at a node whose inputs
    are all known: only there can ORT's symbolic inference add anything."""
    graphs = list(iter_graphs(model.graph))
    read = {i for g in graphs for n in g.node for i in n.input if i}
    read |= {o.name for g in graphs for o in g.output}
    for g in graphs:
        for node in g.node:
            if node.op_type in _UNFILLABLE or not any(o in gaps and o in read for o in node.output):
                continue
            if all(
                not i or (i in table and i not in gaps and not table[i].has_unknown)
                for i in node.input
            ):
                return True
    return False


def _produced(model: onnx.ModelProto) -> list[str]:
    return [o for g in iter_graphs(model.graph) for n in g.node for o in n.output if o]


def collect_value_types(
    model: onnx.ModelProto, only: AbstractSet[str] | None = None
) -> dict[str, ValueType]:
    """Every typed value of the model (all graphs): initializers, inputs, outputs, value_info.

    ``only``: the entries of these names alone (each what the whole table says of it), for
    a reader of a few values of a large graph."""
    table: dict[str, ValueType] = {}
    seen: dict[ValueType, ValueType] = {}
    # the type a serialized TypeProto declares: the bytes are the whole input of
    # value_type_of, and most values of a large graph repeat a handful of types
    by_bytes: dict[bytes, ValueType] = {}
    if only is not None and not only:
        return table
    for g in iter_graphs(model.graph):
        for init in g.initializer:
            if only is not None and init.name not in only:
                continue
            table[init.name] = ValueType(
                dtype_name(init.data_type), tuple(int(d) for d in init.dims)
            )
        for sparse in g.sparse_initializer:
            if only is not None and sparse.values.name not in only:
                continue
            table[sparse.values.name] = ValueType(
                dtype_name(sparse.values.data_type), tuple(int(d) for d in sparse.dims)
            )
        for vi in (*g.value_info, *g.output, *g.input):
            if only is not None and vi.name not in only:
                continue
            if vi.name and vi.type.WhichOneof("value") is not None:
                # a graph input that is also an initializer keeps the initializer's static shape
                if vi.name in table and table[vi.name].is_static:
                    continue
                key = vi.type.SerializeToString()
                vt = by_bytes.get(key)
                if vt is None:
                    vt = value_type_of(vi.type)
                    # most values of a large graph share a handful of types: one object each
                    vt = by_bytes[key] = seen.setdefault(vt, vt)
                table[vi.name] = vt
        for node in g.node:
            if node.op_type == "Constant" and node.domain in ("", "ai.onnx") and node.output:
                if only is not None and node.output[0] not in only:
                    continue
                constant_vt = _constant_type(node)
                if constant_vt is not None:
                    table.setdefault(node.output[0], constant_vt)
    return table


def _constant_type(node: onnx.NodeProto) -> ValueType | None:
    for a in node.attribute:
        if a.name == "value" and a.type == onnx.AttributeProto.TENSOR:
            return ValueType(dtype_name(a.t.data_type), tuple(int(d) for d in a.t.dims))
        if a.name == "value_int":
            return ValueType("int64", ())
        if a.name == "value_ints":
            return ValueType("int64", (len(a.ints),))
        if a.name == "value_float":
            return ValueType("float", ())
        if a.name == "value_floats":
            return ValueType("float", (len(a.floats),))
    return None


def _one_line(text: str, limit: int = 400) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


#: ONNX's data propagation costs about 150 bytes per element of every rank-1 tensor it
#: meets, float activations included (measured with onnx 1.23: a flattened 3M-element
#: activation took 430 MB and 2.3 s; a declared 10^9-element input, 18 GB). It only pays
#: off on small shape vectors, so it is skipped when rank-1 tensors add up to more.
DATA_PROP_MAX_ELEMENTS = 1 << 18
#: ops whose output shapes follow from input *values*: without them data propagation
#: has nothing to add
VALUE_SHAPED_OPS = frozenset(
    {
        "Shape",
        "Size",
        "Reshape",
        "Expand",
        "Tile",
        "ConstantOfShape",
        "Range",
        "Slice",
        "Pad",
        "Resize",
        "Upsample",
        "Squeeze",
        "Unsqueeze",
        "Split",
        "TopK",
        "OneHot",
        "CenterCropPad",
    }
)


def _infer(
    model: onnx.ModelProto,
    data_prop: bool,
    wire: bytes | None = None,
    rules: frozenset[tuple[str, str]] | None = None,
) -> tuple[onnx.ModelProto, list[str]]:
    """Strict inference, or a lenient pass after recording the strict failure; never raises.
    ORT's contrib operators are inferred as ORT infers them (``analyses.contrib_types``;
    ``rules``: the ones the model uses, when known).

    ``wire``: ``model`` serialised, handed to ONNX instead of serialising it again."""
    inferred, errors = _infer_source(model if wire is None else wire, data_prop, rules)
    return (model if inferred is None else inferred), errors


def _infer_source(
    source: onnx.ModelProto | bytes,
    data_prop: bool,
    rules: frozenset[tuple[str, str]] | None = None,
) -> tuple[onnx.ModelProto | None, list[str]]:
    """:func:`_infer` of a model or its bytes; None when inference cannot run at all.
    Strict, then lenient without the Constants' declarations; a declaration inference
    contradicts is merged with it as ORT does (:func:`.declared_merge.infer_merged`)."""
    return infer_merged(source, data_prop, rules, _without_constant_declarations, _one_line)


def _without_constant_declarations(source: onnx.ModelProto | bytes) -> onnx.ModelProto | bytes:
    """``source`` without the ``value_info`` of its ``Constant`` nodes' outputs (all graphs),
    or ``source`` itself when it declares none (:func:`strip_constant_declarations`)."""
    try:
        model = onnx.ModelProto.FromString(source) if isinstance(source, bytes) else source
    except Exception:  # not a model: the lenient pass reports it
        return source
    if not any(_declared_constants(g) for g in iter_graphs(model.graph)):
        return source
    mended = onnx.ModelProto()
    mended.CopyFrom(model)
    strip_constant_declarations(mended)
    return mended.SerializeToString() if isinstance(source, bytes) else mended


def _declared_constants(g: onnx.GraphProto) -> set[str]:
    """The outputs of ``g``'s ``Constant`` nodes that its ``value_info`` declares."""
    declared = {vi.name for vi in g.value_info}
    if not declared:
        return set()
    return {
        o
        for n in g.node
        if n.op_type == "Constant" and n.domain in ("", "ai.onnx")
        for o in n.output
        if o in declared
    }


def strip_constant_declarations(model: onnx.ModelProto) -> bool:
    """Remove, in place, the ``value_info`` of the ``Constant`` nodes' outputs (all graphs);
    whether there was any.

    ORT turns every Constant node into an initializer when it loads a graph (``Graph::Graph``
    in ``onnxruntime/core/graph/graph.cc``), whose type is its tensor's: a declaration that
    contradicts the tensor (onnxruntime-genai's builder declares its ``[1]`` constants as
    scalars) does not stop ORT, where it fails ONNX's strict inference and, in the lenient
    pass, hides the constant's value from the nodes that read it (a ReduceSum's axes)."""
    found = False
    for g in iter_graphs(model.graph):
        names = _declared_constants(g)
        if names:
            found = True
            kept = [vi for vi in g.value_info if vi.name not in names]
            del g.value_info[:]
            g.value_info.extend(kept)
    return found


def _serialized(model: onnx.ModelProto) -> bytes | None:
    """``model``'s bytes for ONNX's inference; None when it cannot be serialised (then
    each pass is handed the model, and records the failure as its error)."""
    try:
        return model.SerializeToString()
    except Exception:  # a hostile model: the passes report it
        return None


def _rank1_elements(model: onnx.ModelProto) -> int:
    """Total static length of the rank-1 tensors an inferred model declares (all graphs)."""
    total = 0
    for g in iter_graphs(model.graph):
        for vi in (*g.input, *g.output, *g.value_info):
            tt = vi.type.tensor_type
            if vi.type.WhichOneof("value") == "tensor_type" and len(tt.shape.dim) == 1:
                total += max(0, tt.shape.dim[0].dim_value)
        for init in g.initializer:
            if len(init.dims) == 1:
                total += max(0, init.dims[0])
    return total


def infer_model(model: onnx.ModelProto) -> tuple[onnx.ModelProto, list[str]]:
    """ONNX shape inference, with data propagation where it is useful and affordable.

    A first pass without data propagation is cheap and bounded. When the model computes
    shapes from values (``Shape``, ``Reshape``...) and its rank-1 tensors are small, a
    second pass with data propagation replaces it. Never raises: returns the inferred copy
    (the input when inference cannot run at all) and the errors of the pass kept.

    The sizes that bound data propagation's memory are only known after inference: a
    tensor the model never declares (``ConstantOfShape`` of a constant 10^9, a reshape
    that flattens a large activation) can cost gigabytes. A single pass decided from the
    declared sizes was tried and dropped: the fuzz corpus found such a model (24 GB).
    """
    from onnxlint.tensors import restore_data

    inferred, errors, left = infer_model_without_weights(model)
    return restore_data(inferred, left), errors


def infer_model_without_weights(
    model: onnx.ModelProto,
) -> tuple[onnx.ModelProto, list[str], dict[str, onnx.TensorProto]]:
    """:func:`infer_model`, with the large weights' data left out of the answer (their
    name, type and dims stay) and returned beside it, by name, for
    :func:`onnxlint.tensors.restore_data`: a reader of the types alone does not pay for
    copying the weights back (most of the time on a model with hundreds of MB of them)."""
    inferred, errors, left, _ = _infer_passes(model, keep_unpropagated=False)
    return inferred, errors, left


def _infer_passes(
    model: onnx.ModelProto, keep_unpropagated: bool
) -> tuple[onnx.ModelProto, list[str], dict[str, onnx.TensorProto], onnx.ModelProto | None]:
    """:func:`infer_model_without_weights`, and the first pass's answer when asked
    (``keep_unpropagated``) and a graph (not only a function) computes shapes from values:
    ONNX's inference without data propagation of the model without its large weights'
    data (:func:`onnxlint.tensors.dataless_copy`), which is then the first pass of
    :func:`onnxlint.analyses.session_types.infer_session_types_without_weights` too
    (``session_types_differ`` holds). The two answers are one object when no second
    pass ran."""
    inferred, errors, left, kept, _ = _infer_passes_serialized(model, keep_unpropagated)
    first = onnx.ModelProto.FromString(kept) if isinstance(kept, bytes) else kept
    return inferred, errors, left, first


def _infer_passes_serialized(
    model: onnx.ModelProto, keep_unpropagated: bool, in_order: bool | None = None
) -> tuple[
    onnx.ModelProto, list[str], dict[str, onnx.TensorProto], onnx.ModelProto | bytes | None, bool
]:
    """:func:`_infer_passes`, with a first pass kept beside a second one held serialised:
    while the second pass runs (ONNX holds the model and its answer in C++) and its
    answer is read, the first would be a third parsed copy of the model (about 130 MB on
    a 100k-node graph); its bytes are a seventh of that, parsed again when asked for.

    The last value: the errors are data propagation's alone (the strict pass without it
    passed; ONNX's propagation fails on optimum's merged decoders' If branches).
    ``in_order``: every graph's nodes are in order (None: walk the model to find out)."""
    from onnxlint.tensors import dataless_copy

    # no weight values (copying them in and out was most of the time): one copy for both passes
    light, left = dataless_copy(model)
    graph_ops = {n.op_type for g in iter_graphs(model.graph) for n in g.node}
    ops = graph_ops | {n.op_type for f in model.functions for n in f.node}
    rules = used_rules(model, ops)
    # ONNX's inference reads the model serialised: the bytes are made once for both passes
    # (peak memory); not when a contrib domain needs importing or nodes are out of order
    in_order = not out_of_order(light) if in_order is None else in_order
    wire = None if missing_imports(light, rules) or not in_order else _serialized(light)
    base, errors = _infer(light, data_prop=False, wire=wire, rules=rules)
    kept = base if keep_unpropagated and graph_ops & VALUE_SHAPED_OPS else None
    if not ops & VALUE_SHAPED_OPS or _rank1_elements(base) > DATA_PROP_MAX_ELEMENTS:
        return base, errors, left, kept, False
    strict_passed = not errors
    if base is not light and kept is not None:
        # a copy inference made (never the model itself: readers compare identities)
        kept = base.SerializeToString()
    del base  # not kept while the second pass builds its own copy (peak memory)
    if wire is None or light is model:
        inferred, errors = _infer(light, data_prop=True, wire=wire, rules=rules)
        return inferred, errors, left, kept, strict_passed and bool(errors)
    del light  # the bytes stand for it; parsed again only if inference cannot run at all
    got, errors = _infer_source(wire, data_prop=True, rules=rules)
    inferred = got if got is not None else onnx.ModelProto.FromString(wire)
    return inferred, errors, left, kept, strict_passed and bool(errors)


def _session_types_wanted(ctx: LintContext) -> bool:
    """Whether this lint's EP assignment may infer the session types of the model itself
    (``analyses.assignment``, when the model computes shapes from values): then the Shapes
    analysis keeps its first pass for them, instead of the propagated answer that the
    assignment would not read (:func:`_infer_passes`)."""
    return bool(ctx.eps) and ctx.model.ir_version >= 4


class Shapes:
    """Types and shapes of every value; ``ctx.analysis(Shapes)``.

    ``errors`` holds shape-inference failures (rule OL300 reports them).
    ``used_symbolic`` says whether ORT's symbolic inference contributed.
    """

    model_only = True  # the model and configuration alone: see context.SharedModel
    propagation_only = False  # the errors are ONNX's data propagation's alone
    #: ``declared_types``'s table, with the copy it was read from
    _declared: tuple[onnx.ModelProto, dict[str, onnx.TypeProto]] | None = None
    #: the model's serialised size when it decided whether ORT's symbolic inference runs
    #: (``SYMBOLIC_MAX_BYTES``); None when the size was not asked
    sized: int | None = None

    def __init__(self, ctx: LintContext) -> None:
        self.errors: list[str] = []
        self.used_symbolic = False
        self.symbolic_skipped: str | None = None
        #: why ORT's symbolic inference, which would have been asked, cannot run at all
        self.symbolic_unavailable: str | None = None
        self._table: dict[str, ValueType] = {}
        #: a result taken over from an edit's previous one: the inferred copy it reads
        self._types_from: onnx.ModelProto | None = None
        self._compute(
            ctx.model,
            len(ctx.index.nodes),
            _session_types_wanted(ctx),
            origin=ctx.loaded.content_hash,
            config=ctx.config,
            in_order=not index_out_of_order(ctx.index),
        )
        if len(ctx.index.nodes) >= TRIM_MIN_NODES:
            release_freed()  # what the inference passes held in C++ and their copies let go
        if ctx.config.assume_dims:
            self._assume(ctx.config.assume_dims)

    def _assume(self, dims: dict[str, int]) -> None:
        """Dims the user pins at deployment (``assume-dims``) count as those values everywhere."""
        for name, vt in self._table.items():
            if vt.shape is not None and any(isinstance(d, str) and d in dims for d in vt.shape):
                shape = tuple(dims.get(d, d) if isinstance(d, str) else d for d in vt.shape)
                self._table[name] = ValueType(vt.dtype, shape, vt.kind)

    @classmethod
    def of_model(cls, model: onnx.ModelProto) -> Shapes:
        """The analysis for a bare model (tools that have no lint context)."""
        self = cls.__new__(cls)
        self.errors, self.used_symbolic, self.symbolic_skipped, self._table = [], False, None, {}
        self.symbolic_unavailable = None
        self._types_from = None
        self._compute(model, sum(len(g.node) for g in iter_graphs(model.graph)))
        return self

    def _compute(
        self,
        model: onnx.ModelProto,
        node_count: int,
        keep_unpropagated: bool = False,
        origin: str = "",
        config: Config | None = None,
        in_order: bool | None = None,
    ) -> None:
        inferred, self.errors, self._left, unpropagated, self.propagation_only = (
            _infer_passes_serialized(model, keep_unpropagated, in_order)
        )
        #: what the assignment reads: this answer, or the first pass for the session types
        self._inferred: onnx.ModelProto | None = inferred if unpropagated is None else None
        self._unpropagated = unpropagated
        table = collect_value_types(inferred)
        # graph inputs are what the model declares, never what inference guessed
        for vi in model.graph.input:
            if vi.HasField("type") and not (vi.name in table and table[vi.name].is_static):
                table[vi.name] = value_type_of(vi.type)
        gaps = [n for n, vt in table.items() if vt.kind == "tensor" and vt.has_unknown]
        gaps += [n for n in _produced(model) if n not in table]  # ops ONNX has no schema for
        # importing ORT's tool costs seconds (it pulls in sympy): only pay when it can help
        if gaps and symbolic_could_help(inferred, table, set(gaps)):
            if node_count > SYMBOLIC_MAX_NODES:
                self.symbolic_skipped = f"{node_count} nodes (limit {SYMBOLIC_MAX_NODES})"
            elif self._measured(model) > SYMBOLIC_MAX_BYTES:
                self.symbolic_skipped = "model too large"
            elif (
                found := lookup(inferred, origin, "types", types_from_json, config, left=self._left)
            ).answer is None and (missing := symbolic_unavailable()) is not None:
                self.symbolic_unavailable = missing
            else:
                # ORT's tool reads initializer values (the ones it folds) from the weights
                ort_table = infer_and_store(
                    inferred, self._left, found, collect_value_types, types_to_json
                )
                if ort_table is not None:
                    self.used_symbolic = True
                    for name in gaps:
                        if name in ort_table:
                            mine = table.get(name)
                            theirs = ort_table[name]
                            table[name] = theirs if mine is None else filled_from(mine, theirs)
        self._table = table

    def _measured(self, model: onnx.ModelProto) -> int:
        """The model's serialised size, kept (``sized``) for an edit's take-over."""
        self.sized = serialized_size(model)
        return self.sized

    @classmethod
    def taken_over(cls, prior: Shapes, types: onnx.ModelProto) -> Shapes:
        """``prior``'s answer for a model that an edit provably left with the same types
        (``analyses.edits.shapes_after_node_edit`` decides): the same table, no inferred copy
        to hand out (``take_inferred``), ``types`` (the inferred copy the table was read
        from) kept for the next edit's comparison."""
        self = cls.__new__(cls)
        self.errors = []
        self.used_symbolic = prior.used_symbolic
        self.symbolic_skipped = prior.symbolic_skipped
        self.sized = prior.sized  # the caller sets the edited model's
        self.symbolic_unavailable = None
        self._table = prior._table  # never changed once built
        self._left = {}
        self._inferred = None
        self._unpropagated = None
        self._types_from = types
        self._declared = prior._declared  # of the same copy, if read
        return self

    def types_read(self) -> onnx.ModelProto | None:
        """The inferred copy this answer's table was read from, while it is held (None once
        handed out with ``take_inferred``)."""
        return getattr(self, "_inferred", None) or self._types_from

    def declared_types(self) -> dict[str, onnx.TypeProto] | None:
        """Each value's type in the copy ``types_read`` gives (its graph's inputs, value
        infos and outputs; the last of a repeated name), read once per copy: the answers
        taken over from this one keep it with the copy."""
        types = self.types_read()
        if types is None:
            return None
        found = self._declared
        if found is None or found[0] is not types:
            g = types.graph
            found = (types, {v.name: v.type for v in (*g.input, *g.value_info, *g.output)})
            self._declared = found
        return found[1]

    def take_inferred(self, weights: bool = True) -> onnx.ModelProto | None:
        """The inferred copy of the model (the model itself when inference could not run),
        handed over once: the assignment analysis reads its per-graph types instead of
        inferring the same model again, and nobody keeps a large model twice. None after
        the first call, and when the first pass was kept instead (:meth:`take_unpropagated`).

        ``weights=False``: the large initializers may have no data (name, type and dims
        only); :meth:`weights_left_out` gives it, for a reader that needs it after all.
        """
        from onnxlint.tensors import restore_data

        got, self._inferred = getattr(self, "_inferred", None), None
        if got is not None and weights:
            got = restore_data(got, self.weights_left_out())
        return got

    def take_unpropagated(self) -> onnx.ModelProto | None:
        """The first inference pass (no data propagation, the large weights without data),
        handed over once; None when it was not kept: it is kept only for a lint whose EP
        assignment infers the session types (:func:`_session_types_wanted`, a graph that
        computes shapes from values), and then :meth:`take_inferred` has nothing to give
        (the assignment reads one of the two)."""
        got, self._unpropagated = getattr(self, "_unpropagated", None), None
        return onnx.ModelProto.FromString(got) if isinstance(got, bytes) else got

    def weights_left_out(self) -> dict[str, onnx.TensorProto]:
        """The large initializers (the model's own) whose data the inferred copy lacks."""
        return getattr(self, "_left", {})

    def value_type(self, name: str) -> ValueType | None:
        """The type of any value in any graph or subgraph; None when nothing is known."""
        return self._table.get(name)

    def shape(self, name: str) -> tuple[Dim, ...] | None:
        vt = self._table.get(name)
        return None if vt is None else vt.shape

    def dtype(self, name: str) -> str | None:
        vt = self._table.get(name)
        return None if vt is None else vt.dtype

    def __len__(self) -> int:
        return len(self._table)
