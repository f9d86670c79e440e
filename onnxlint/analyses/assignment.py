"""Per-node EP verdicts and the first-claimer assignment, computed once per model.

For the EP list of a lint (``ctx.eps``, priority order, CPU implied last) this
analysis builds the :class:`~onnxlint.analyses.capability.NodeFacts` of every
node the partitioner sees, asks each EP profile for its verdict, applies ORT's
CPU preference for shape computations (``GetCpuPreferredNodes``) to the EPs
whose profile asks for it, and records which EP claims each node first.

It does so for up to two versions of the graph:

- ``exported``: the model as the user wrote it (what ORT partitions with
  ``graph_optimization_level`` disabled);
- ``optimized``: the graph after ORT's level-1 (basic) optimizations, which is
  what ORT partitions in a default deployment. It is obtained by running a
  CPU-only session at the basic level with ``optimized_model_filepath`` in a
  temporary folder (never with a compiling EP, which cannot be serialized).

The final placement (which claimed nodes a compiling EP actually keeps) is the
partition simulation's job (:mod:`onnxlint.analyses.partition`).

ORT facts this relies on (EP-BEHAVIOUR.md): Constant nodes become initializers
before any EP is asked, so they are not partitioned; nodes inside If/Loop/Scan
bodies are partitioned on their own, before the node that owns the body.
"""

from __future__ import annotations

import contextlib
import functools
import heapq
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import onnx

from onnxlint.analyses.capability import (
    NodeFacts,
    Shape,
    Verdict,
    evaluate,
    node_count_cap,
    symbols_of,
)
from onnxlint.analyses.shapes import dtype_name
from onnxlint.diagnostics import Location
from onnxlint.index import GraphRef, ModelIndex, NodeRef
from onnxlint.rewrites import override_dims

if TYPE_CHECKING:
    from onnxlint.analyses.level1 import WorkerFailure
    from onnxlint.context import LintContext
    from onnxlint.profiles import Profile

__all__ = [
    "CPU_EP",
    "Assignment",
    "LevelAssignment",
    "LevelGraph",
    "NodeAssignment",
    "ValueType",
    "build_level_graph",
    "optimized_model",
]

CPU_EP = "CPUExecutionProvider"
EXPORTED = "exported"
OPTIMIZED = "optimized"

#: ORT's GetCpuPreferredNodes treats initializers up to this many elements as small CPU values.
SMALL_INITIALIZER_ELEMENTS = 100
#: element types that GetCpuPreferredNodes never moves to CPU
_NO_CPU_PREFERENCE_DTYPES = frozenset({"float16", "bfloat16", "float8e4m3fn", "float8e5m2"})

#: Kernel outputs that live in CPU memory on device EPs (CUDA/ROCm/DML kernel
#: registrations mark them with OutputMemoryType(OrtMemTypeCPUOutput)): the
#: seeds of the CPU-preference walk.
CPU_OUTPUT_OPS: dict[str, tuple[int, ...]] = {"Shape": (0,), "Size": (0,)}
#: Kernel inputs that device EPs read from CPU memory (InputMemoryType(OrtMemTypeCPUInput)):
#: a CPU tensor arriving there is expected, so it does not pull the node to CPU.
CPU_INPUT_SLOTS: dict[str, tuple[int, ...]] = {
    "Reshape": (1,),
    "Expand": (1,),
    "ConstantOfShape": (0,),
    "Tile": (1,),
    "Slice": (1, 2, 3, 4),
    "Squeeze": (1,),
    "Unsqueeze": (1,),
    "TopK": (1,),
    "Pad": (1, 2, 3),
    "Resize": (1, 2, 3),
    "Upsample": (1,),
    "OneHot": (1,),
    "Range": (0, 1, 2),
    "ReduceSum": (1,),
    "ReduceMean": (1,),
    "ReduceMax": (1,),
    "ReduceMin": (1,),
    "ReduceProd": (1,),
    "ReduceL2": (1,),
    "Split": (1,),
    "Trilu": (1,),
    "NonMaxSuppression": (2, 3, 4),
}

_DTYPE_BYTES: dict[str, float] = {
    "float": 4,
    "float32": 4,
    "double": 8,
    "float16": 2,
    "bfloat16": 2,
    "int8": 1,
    "uint8": 1,
    "int16": 2,
    "uint16": 2,
    "int32": 4,
    "uint32": 4,
    "int64": 8,
    "uint64": 8,
    "bool": 1,
    "complex64": 8,
    "complex128": 16,
    "float8e4m3fn": 1,
    "float8e4m3fnuz": 1,
    "float8e5m2": 1,
    "float8e5m2fnuz": 1,
    "int4": 0.5,
    "uint4": 0.5,
    "float4e2m1": 0.5,
}


def dtype_bytes(dtype: str | None) -> float | None:
    """Bytes per element, None when unknown (strings, sequences, unknown types)."""
    return _DTYPE_BYTES.get(dtype) if dtype else None


@dataclass(frozen=True, slots=True)
class ValueType:
    """Element type and shape of one value; either may be unknown (None)."""

    dtype: str | None = None
    shape: Shape = None


# ---------------------------------------------------------------------------
# The graph one level of the prediction works on


@dataclass(eq=False)
class LevelGraph:
    """One version of the model (as exported, or after level-1) with types and constants."""

    level: str
    model: onnx.ModelProto
    index: ModelIndex
    types: dict[tuple[str, str], ValueType] = field(default_factory=dict)
    #: this level's node path -> the node path in the user's model (same for ``exported``)
    source_path: dict[str, str] = field(default_factory=dict)
    note: str | None = None

    def __getstate__(self) -> dict[str, Any]:
        # the index holds onnx OpSchema objects, which do not pickle (``--jobs`` sends
        # reports between processes); it is rebuilt from the model on the other side
        state = dict(self.__dict__)
        state.pop("index", None)
        state.pop("_nodes", None)
        state.pop("_orders", None)
        state.pop("_positions", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.index = ModelIndex(self.model)

    def graphs(self) -> list[GraphRef]:
        """Graphs the partitioner sees: the main graph and control-flow bodies, not functions."""
        return [g for g in self.index.graphs if not g.is_function]

    def nodes(self, graph: GraphRef) -> list[NodeRef]:
        """Nodes ORT partitions: Constant nodes are initializers by then (a shared list: don't
        modify it)."""
        cache: dict[str, list[NodeRef]] = self.__dict__.setdefault("_nodes", {})
        got = cache.get(graph.path)
        if got is None:
            got = cache[graph.path] = [n for n in graph.nodes if not _is_constant_node(n)]
        return got

    def positions(self, graph: GraphRef) -> dict[str, int]:
        """Node path -> index in :meth:`order`."""
        cache: dict[str, dict[str, int]] = self.__dict__.setdefault("_positions", {})
        got = cache.get(graph.path)
        if got is None:
            got = cache[graph.path] = {n.path: i for i, n in enumerate(self.order(graph))}
        return got

    def order(self, graph: GraphRef) -> list[NodeRef]:
        """ORT's topological order of :meth:`nodes`, computed once per graph (CPU preference
        per EP and the partitioner all walk it).

        The level-1 graph is the file ORT saved, whose nodes ORT wrote in that very order
        (its node indices, which nodes created by its fusions change, are not in the file);
        the exported graph's order is computed from the file's node indices.
        """
        cache: dict[str, list[NodeRef]] = self.__dict__.setdefault("_orders", {})
        got = cache.get(graph.path)
        if got is None:
            nodes = self.nodes(graph)
            got = list(nodes) if self.level == OPTIMIZED else topological_order(graph, nodes)
            cache[graph.path] = got
        return got

    def value_type(self, graph: GraphRef, name: str) -> ValueType:
        g: GraphRef | None = graph
        while g is not None:
            vt = self.types.get((g.path, name))
            if vt is not None:
                return vt
            if name in g.initializers:
                t = g.initializers[name]
                return ValueType(dtype_name(t.data_type), tuple(int(d) for d in t.dims))
            g = g.outer
        return ValueType()

    @property
    def inputs_override_initializers(self) -> bool:
        """From IR 4 an initializer also listed as a graph input is a default the caller
        may override (not a constant); below IR 4 every initializer is listed there."""
        return self.model.ir_version >= 4

    def is_initializer(self, graph: GraphRef, name: str) -> bool:
        g: GraphRef | None = graph
        while g is not None:
            if name in g.initializers and (
                name not in g.inputs or not self.inputs_override_initializers
            ):
                return True
            producer = g.producers.get(name)
            if producer is not None:
                return _is_constant_node(producer)
            g = g.outer
        return False

    def initializer_elements(self, graph: GraphRef, name: str) -> int | None:
        """Element count of an initializer or Constant output; None when not constant."""
        g: GraphRef | None = graph
        while g is not None:
            if name in g.initializers:
                n = 1
                for d in g.initializers[name].dims:
                    n *= int(d)
                return n
            producer = g.producers.get(name)
            if producer is not None:
                if not _is_constant_node(producer):
                    return None
                shape = self.value_type(graph, name).shape
                if shape is None or not all(isinstance(d, int) for d in shape):
                    return None
                n = 1
                for d in shape:
                    n *= int(d)  # type: ignore[arg-type]
                return n
            g = g.outer
        return None

    def is_graph_input(self, graph: GraphRef, name: str) -> bool:
        if name not in graph.inputs:
            return False
        return name not in graph.initializers or self.inputs_override_initializers


def _is_constant_node(node: NodeRef) -> bool:
    return node.op_type == "Constant" and node.domain == "ai.onnx"


def _vi_type(vi: onnx.ValueInfoProto) -> ValueType:
    t = vi.type
    if t.WhichOneof("value") != "tensor_type":
        return ValueType()
    tt = t.tensor_type
    dtype = dtype_name(tt.elem_type)
    if not tt.HasField("shape"):
        return ValueType(dtype, None)
    dims: list[int | str | None] = []
    for d in tt.shape.dim:
        if d.HasField("dim_value"):
            dims.append(int(d.dim_value))
        elif d.HasField("dim_param"):
            dims.append(d.dim_param)
        else:
            dims.append(None)
    return ValueType(dtype, tuple(dims))


#: rounds of "a Shape of a tensor that is now static is a constant" (a Reshape to the shape
#: of a Reshape's output needs two); each round is one inference pass without propagation
_SHAPE_ROUNDS = 4


def _infer(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model's types as ORT resolves them when it creates a session.

    Measured with ORT 1.32 and QNN's "Cannot get shape" (optimizations disabled): ORT's
    graph resolution knows the output of ``Reshape(x, Shape(y))`` when ``y`` is static,
    of ``Concat(Shape(a), Shape(b))``, and of a Reshape or Slice whose shape or bounds are
    an element of a static Shape (``Unsqueeze(Gather(Shape(y), i))``), not of one whose
    shape is computed from ``Shape`` through Slice, arithmetic or a Concat with an
    initializer (ONNX's data propagation would find it). So this is ONNX inference
    without data propagation, in which a ``Shape`` of a static tensor, its Gathers and
    their Unsqueezes, and a Concat of those, count as the constants they are; that
    ``GreaterOrEqual``/``LessOrEqual`` revision 12 outputs stay unknown
    (:data:`_UNRESOLVED_SHAPE_OPS`); and ``com.microsoft`` Q/DQ, which ONNX
    has no schema for, infer as their ai.onnx twins (ORT's contrib schemas do the same).
    The inference runs on a copy whose nodes are then put back as they were; it never
    raises, and without propagation its memory is bounded by the graph.
    """
    from onnxlint.analyses.shapes import collect_value_types, iter_graphs

    work = onnx.ModelProto()
    work.CopyFrom(model)
    if work.ir_version < 4:
        # Below IR 4 ONNX only reads initializers that are also graph inputs; ORT's
        # optimized models keep the old IR version but drop the folded inputs.
        work.ir_version = 4
    originals: dict[tuple[int, int], onnx.NodeProto] = {}
    for gi, g in enumerate(iter_graphs(work.graph)):
        for ni, n in enumerate(g.node):
            if _is_contrib_qdq(n):
                originals[(gi, ni)] = _copy_node(n)
                n.domain = ""
    hidden = set(_hide_unresolved_outputs(work, originals))
    inferred = _lenient_infer(work)
    values: dict[str, list[int]] = {}
    scalars: set[str] = set()
    for _ in range(_SHAPE_ROUNDS):
        if not _constant_shapes(work, collect_value_types(inferred), originals, values, scalars):
            break
        inferred = _lenient_infer(work)
    for gi, g in enumerate(iter_graphs(inferred.graph)):
        for ni in range(len(g.node)):
            if (gi, ni) in originals:
                g.node[ni].CopyFrom(originals[(gi, ni)])
    if hidden:
        kept = [i for i in inferred.graph.input if i.name not in hidden]
        del inferred.graph.input[:]
        inferred.graph.input.extend(kept)
        for w in (work.graph, inferred.graph):
            kept_vi = [v for v in w.value_info if v.name not in hidden]
            del w.value_info[:]
            w.value_info.extend(kept_vi)
    return inferred


#: op -> the ai.onnx opsets (revision 12: opsets 12 to 15) at which ORT infers no output
#: shape for it (only a declared one, e.g. a graph output's, stays), and its constant
#: folding leaves it in place even on constant inputs; QNN then refuses it and what
#: follows from it ("Cannot get shape"). Measured with ORT 1.32 on int64 and float
#: inputs, optimizations disabled and basic; from opset 16 (and for Greater, Less, Equal
#: at any opset) the output is inferred and a node of constants folds.
_UNRESOLVED_SHAPE_OPS: dict[str, tuple[int, int]] = {
    "GreaterOrEqual": (12, 15),
    "LessOrEqual": (12, 15),
}


def _hide_unresolved_outputs(
    work: onnx.ModelProto, originals: dict[tuple[int, int], onnx.NodeProto]
) -> list[str]:
    """Feed the main-graph nodes of :data:`_UNRESOLVED_SHAPE_OPS` from added graph inputs
    of unknown shape in ``work``, so inference leaves their outputs, and what follows from
    them, unknown (declared value_info stays, as in ORT). Returns the added input names
    (for the caller to remove after inference)."""
    g = work.graph
    opset = next((o.version for o in work.opset_import if o.domain in ("", "ai.onnx")), 0)
    types = {i.name: i.data_type for i in g.initializer}
    for v in (*g.input, *g.value_info):
        types[v.name] = v.type.tensor_type.elem_type
    for n in g.node:
        if n.op_type == "Constant" and n.output:
            value = next((a.t for a in n.attribute if a.name == "value"), None)
            types[n.output[0]] = value.data_type if value is not None else 0
    added: list[str] = []
    for ni, n in enumerate(g.node):
        low, high = _UNRESOLVED_SHAPE_OPS.get(n.op_type, (1, 0))
        if not low <= opset <= high or n.domain not in ("", "ai.onnx") or (0, ni) in originals:
            continue
        elem = next((types[i] for i in n.input if types.get(i)), onnx.TensorProto.FLOAT)
        originals[(0, ni)] = _copy_node(n)
        for k, name in enumerate(n.input):
            if not name:
                continue
            fresh = f"onnxlint_unresolved_{ni}_{k}"
            vi = g.input.add()
            vi.name = fresh
            vi.type.tensor_type.elem_type = elem
            n.input[k] = fresh
            added.append(fresh)
    return added


def _session_types_differ(model: onnx.ModelProto) -> bool:
    """Whether :func:`_infer` can see other types than plain ONNX inference: the model
    computes shapes from values or holds com.microsoft Q/DQ."""
    from onnxlint.analyses.shapes import VALUE_SHAPED_OPS, iter_graphs

    return any(
        n.op_type in VALUE_SHAPED_OPS or n.op_type in _UNRESOLVED_SHAPE_OPS or _is_contrib_qdq(n)
        for g in iter_graphs(model.graph)
        for n in g.node
    )


def _copy_node(node: onnx.NodeProto) -> onnx.NodeProto:
    out = onnx.NodeProto()
    out.CopyFrom(node)
    return out


def _lenient_infer(model: onnx.ModelProto) -> onnx.ModelProto:
    from onnxlint.tensors import dataless_copy, restore_data

    light, left = dataless_copy(model)  # the weights' values are not needed (copying them is)
    try:
        inferred = onnx.shape_inference.infer_shapes(light, strict_mode=False, data_prop=False)
        return restore_data(inferred, left)
    except Exception:  # protobuf or checker errors on hostile models: keep what is declared
        return model


def _const_ints(g: onnx.GraphProto, name: str) -> tuple[list[int], bool] | None:
    """The int values of initializer or Constant ``name`` of ``g`` and whether it is a
    scalar; None when it is neither or not an int tensor."""
    from onnxlint.tensors import inline_array

    tensor = next((t for t in g.initializer if t.name == name), None)
    if tensor is None:
        node = next((n for n in g.node if n.op_type == "Constant" and name in n.output), None)
        tensor = next((a.t for a in node.attribute if a.name == "value"), None) if node else None
    if tensor is None or tensor.data_type not in (onnx.TensorProto.INT64, onnx.TensorProto.INT32):
        return None
    if len(tensor.dims) > 1 or (tensor.dims and tensor.dims[0] > 64):
        return None
    arr = inline_array(tensor, max_elements=64)  # never external data; None when malformed
    if arr is None:
        return None
    return [int(v) for v in arr.reshape(-1)], not tensor.dims


def _shape_value_op(
    g: onnx.GraphProto, n: onnx.NodeProto, values: dict[str, list[int]], scalars: set[str]
) -> tuple[list[int], bool] | None:
    """(value, is scalar) of a Gather or Unsqueeze of shape value ``n.input[0]``."""
    data = values[n.input[0]]
    attrs = {a.name: a for a in n.attribute}
    if n.op_type == "Gather":
        axis = attrs["axis"].i if "axis" in attrs else 0
        idx = _const_ints(g, n.input[1]) if len(n.input) > 1 else None
        if axis != 0 or idx is None or n.input[0] in scalars:
            return None
        ints, is_scalar = idx
        if any(not -len(data) <= i < len(data) for i in ints):
            return None
        return [data[i] for i in ints], is_scalar
    # Unsqueeze of a scalar to a 1-D vector
    if n.input[0] not in scalars:
        return None
    if len(n.input) > 1 and n.input[1]:
        axes = _const_ints(g, n.input[1])
        ok = axes is not None and axes[0] in ([0], [-1])
    else:
        ok = "axes" in attrs and list(attrs["axes"].ints) in ([0], [-1])
    return (list(data), False) if ok else None


def _constant_shapes(
    work: onnx.ModelProto,
    table: dict[str, Any],
    originals: dict[tuple[int, int], onnx.NodeProto],
    values: dict[str, list[int]],
    scalars: set[str],
) -> bool:
    """Replace, in ``work``, by the ``Constant`` it evaluates to: each ai.onnx ``Shape``
    whose input ``table`` knows statically, each ``Concat`` of such shape values only,
    and each ``Gather`` (axis 0, constant indices) or ``Unsqueeze`` (of a scalar, to 1-D)
    of one (ORT propagates those; a Concat with an initializer or a Slice it does not:
    measured, see :func:`_infer`). The originals go to ``originals``, the vectors to
    ``values`` (a scalar as a one-element list, its name also in ``scalars``); returns
    whether any node was replaced."""
    from onnxlint.analyses.shapes import iter_graphs

    changed = False
    for gi, g in enumerate(iter_graphs(work.graph)):
        for ni, n in enumerate(g.node):
            if n.domain not in ("", "ai.onnx") or (gi, ni) in originals or not n.output:
                continue
            dims: list[int] | None = None
            scalar = False
            if n.op_type in ("Gather", "Unsqueeze") and n.input and n.input[0] in values:
                got = _shape_value_op(g, n, values, scalars)
                if got is not None:
                    dims, scalar = got
            if n.op_type == "Shape" and n.input:
                vt = table.get(n.input[0])
                if vt is not None and vt.is_static:
                    ints = {a.name: a.i for a in n.attribute if a.type == onnx.AttributeProto.INT}
                    rank = len(vt.shape)
                    start, end = ints.get("start", 0), ints.get("end", rank)
                    dims = [int(d) for d in vt.shape][slice(start, end)]
            elif (
                n.op_type == "Concat"
                and n.input
                and all(i in values and i not in scalars for i in n.input if i)
            ):
                dims = [d for i in n.input if i for d in values[i]]
            elif n.op_type == "Squeeze" and n.input and n.input[0] in values:
                dims, scalar = _squeezed_shape_value(g, n, values, scalars)
            elif n.op_type == "Range" and _range_of_values(g, n, values, scalars, table):
                originals[(gi, ni)] = _copy_node(n)
                g.node[ni].CopyFrom(_range_constant(g, n, values, scalars))
                changed = True
                continue
            if dims is None:
                continue
            values[n.output[0]] = dims
            if scalar:
                scalars.add(n.output[0])
            shape = [] if scalar else [len(dims)]
            value = onnx.helper.make_tensor("value", onnx.TensorProto.INT64, shape, dims)
            originals[(gi, ni)] = _copy_node(n)
            g.node[ni].CopyFrom(
                onnx.helper.make_node("Constant", [], [n.output[0]], n.name, value=value)
            )
            changed = True
    return changed


#: longest Range whose output ORT's graph resolution sizes that is replaced by its value
_MAX_RANGE = 4096


def _squeezed_shape_value(
    g: onnx.GraphProto, n: onnx.NodeProto, values: dict[str, list[int]], scalars: set[str]
) -> tuple[list[int] | None, bool]:
    """A Squeeze (no axes, or axis 0) of a one-element shape value: that element, a scalar.

    Measured with ORT 1.32 (QNN's validation log, optimizations disabled, named dims
    fixed): ``Range(0, Squeeze(Shape(x)[0:1]), 1)`` of a dynamo attention mask has a
    static output, so ORT knows the squeezed element."""
    data = values[n.input[0]]
    if n.input[0] in scalars or len(data) != 1:
        return None, False
    axes = _const_ints(g, n.input[1]) if len(n.input) > 1 and n.input[1] else ([0], False)
    if axes is None or axes[0] not in ([0], [-1]):
        return None, False
    return list(data), True


def _scalar_of(
    g: onnx.GraphProto, name: str, values: dict[str, list[int]], scalars: set[str]
) -> int | None:
    if name in scalars:
        return values[name][0]
    got = _const_ints(g, name)
    return got[0][0] if got is not None and got[1] else None


def _range_of_values(
    g: onnx.GraphProto,
    n: onnx.NodeProto,
    values: dict[str, list[int]],
    scalars: set[str],
    table: dict[str, Any],
) -> bool:
    """Whether ``n`` is an integer Range whose start, limit and delta are scalar shape
    values or constants, one of them a shape value (ORT sizes its output; same
    measurement as :func:`_squeezed_shape_value`), of at most :data:`_MAX_RANGE` elements."""
    if len(n.input) != 3 or not any(i in scalars for i in n.input):
        return False
    if any(getattr(table.get(i), "dtype", "int64") not in (None, "int64") for i in n.input):
        return False
    got = [_scalar_of(g, i, values, scalars) for i in n.input]
    if any(v is None for v in got) or got[2] == 0:
        return False
    start, limit, delta = (int(v) for v in got if v is not None)
    return 0 <= len(range(start, limit, delta)) <= _MAX_RANGE


def _range_constant(
    g: onnx.GraphProto, n: onnx.NodeProto, values: dict[str, list[int]], scalars: set[str]
) -> onnx.NodeProto:
    """The Constant a Range of :func:`_range_of_values` evaluates to (int64)."""
    start, limit, delta = (int(_scalar_of(g, i, values, scalars) or 0) for i in n.input)
    seq = list(range(start, limit, delta))
    value = onnx.helper.make_tensor("value", onnx.TensorProto.INT64, [len(seq)], seq)
    return onnx.helper.make_node("Constant", [], [n.output[0]], n.name, value=value)


def build_level_graph(
    model: onnx.ModelProto,
    level: str,
    source: ModelIndex | None = None,
    inferred: onnx.ModelProto | None = None,
    source_index: ModelIndex | None = None,
) -> LevelGraph:
    """Index ``model`` after shape inference; map node paths back to ``source`` by name.

    ``inferred``: ``model`` already through shape inference (the shared Shapes analysis).
    ``source_index``: an index of ``model`` itself (the lint's own); used instead of a
    second index when the inferred copy has the same graphs and nodes.
    Types are those ORT resolves at session creation (:func:`_infer`).
    """
    if inferred is None:
        inferred = _infer(model)
    if inferred is not model:
        inferred.ir_version = model.ir_version  # _infer may bump it; constness depends on it
    index = reuse if (reuse := _same_structure(source_index, inferred)) else ModelIndex(inferred)
    # on the lint's own index the graph is the model itself; the inferred copy is only
    # read for its types below and then let go
    lg = LevelGraph(level=level, model=model if index is source_index else inferred, index=index)
    if index is source_index:
        # the lint's own index (the model as written): types come from the inferred copy,
        # walked graph by graph in the index's order
        seen: dict[ValueType, ValueType] = {}  # one object per distinct type
        for g, proto in zip(index.graphs, _graph_protos(inferred), strict=True):
            if isinstance(proto, onnx.GraphProto):  # function signatures carry no types
                for vi in (*proto.input, *proto.output, *proto.value_info):
                    vt = _vi_type(vi)
                    lg.types.setdefault((g.path, vi.name), seen.setdefault(vt, vt))
    else:
        for g in index.graphs:
            for name, vi in g.value_info.items():
                lg.types[(g.path, name)] = _vi_type(vi)
    if source is None:
        lg.source_path = {n.path: n.path for n in index.nodes}
    else:
        by_name: dict[tuple[str, str], str] = {}
        for n in source.nodes:
            if n.name:
                by_name.setdefault((n.name, n.op_type), n.path)
        callers = {n.label: n.path for n in source.main.nodes}
        callers.update({n.name: n.path for n in source.nodes if n.name})
        # unnamed nodes keep no name in ORT's output either: pair them by op type, in order
        unnamed: dict[tuple[str, str], list[str]] = {}
        for n in source.nodes:
            if not n.name and not n.graph.is_function:
                unnamed.setdefault((n.graph.path.split("/")[0], n.op_type), []).append(n.path)
        for n in index.nodes:
            hit = by_name.get((n.name, n.op_type)) if n.name else None
            if hit is None and "/" in n.name:
                # a node inlined from a function call ("swish0/Sigmoid"): the call is its place
                hit = callers.get(n.name.split("/", 1)[0])
            if hit is None and not n.name:
                queue = unnamed.get((n.graph.path.split("/")[0], n.op_type))
                hit = queue.pop(0) if queue else None
            if hit is not None:
                lg.source_path[n.path] = hit
    return lg


def _graph_protos(model: onnx.ModelProto) -> list[onnx.GraphProto | onnx.FunctionProto]:
    """The model's graphs in :class:`ModelIndex` order: each graph, then the bodies of its
    nodes depth first; then each function the same way."""
    out: list[onnx.GraphProto | onnx.FunctionProto] = []

    def walk(g: onnx.GraphProto | onnx.FunctionProto) -> None:
        out.append(g)
        for n in g.node:
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g)
                elif a.type == onnx.AttributeProto.GRAPHS:
                    for sub in a.graphs:
                        walk(sub)

    walk(model.graph)
    for fn in model.functions:
        walk(fn)
    return out


_CONTRIB_QDQ = ("QuantizeLinear", "DequantizeLinear")


def _is_contrib_qdq(node: onnx.NodeProto) -> bool:
    return node.domain == "com.microsoft" and node.op_type in _CONTRIB_QDQ


def _same_structure(index: ModelIndex | None, model: onnx.ModelProto) -> ModelIndex | None:
    """``index`` when it describes ``model``'s graphs node for node (same counts, op types
    and names in the same order), else None."""
    if index is None:
        return None
    protos = _graph_protos(model)
    if len(protos) != len(index.graphs):
        return None
    for g, proto in zip(index.graphs, protos, strict=True):
        nodes = proto.node
        if len(nodes) != len(g.nodes):
            return None
        for ref, n in zip(g.nodes, nodes, strict=True):
            if ref.node.op_type != n.op_type or ref.node.name != n.name:
                return None
    return index


def inline_functions(model: onnx.ModelProto) -> onnx.ModelProto:
    """Model-local functions inlined, as ORT does before it partitions (a copy; else ``model``)."""
    if not model.functions:
        return model
    try:
        import onnx.inliner

        out = onnx.inliner.inline_local_functions(model)
    except Exception:
        out = model
    calls = {(f.domain, f.name) for f in model.functions}
    if any((n.domain, n.op_type) in calls for n in out.graph.node):
        # onnx's inliner leaves calls whose function imports another opset; ORT inlines them
        out = _inline_simple(out)
    return out


def _inline_simple(model: onnx.ModelProto, depth: int = 8) -> onnx.ModelProto:
    """Inline main-graph calls of local functions, renaming the function's inner values."""
    fns = {(f.domain, f.name): f for f in model.functions}
    out = onnx.ModelProto()
    out.CopyFrom(model)
    for _ in range(depth):
        nodes: list[onnx.NodeProto] = []
        changed = False
        for k, n in enumerate(out.graph.node):
            fn = fns.get((n.domain, n.op_type))
            if fn is None:
                nodes.append(n)
                continue
            changed = True
            nodes.extend(_instantiate(fn, n, f"{n.name or n.op_type + '_' + str(k)}/"))
        if not changed:
            break
        del out.graph.node[:]
        out.graph.node.extend(nodes)
    return out


def expand_unclaimed_function_ops(lg: LevelGraph, la: LevelAssignment) -> onnx.ModelProto | None:
    """Expand main-graph ai.onnx ops that no EP claims into their ONNX function bodies.

    ORT does this before partitioning (an operator defined as a function, such as
    Mish or GroupNormalization, runs as its body when no EP has a kernel for it).
    Returns the expanded model, or None when nothing is expanded.
    """
    import onnx.defs

    model = lg.model
    main = lg.index.main
    replace_at: dict[int, list[onnx.NodeProto]] = {}
    for node in main.nodes:
        na = la.get(node)
        if na is None or node.domain != "ai.onnx" or node.schema is None:
            continue
        # onnx's stubs lack OpSchema's function accessors (present at run time)
        if not (
            node.schema.has_function  # type: ignore[attr-defined]
            or node.schema.has_context_dependent_function  # type: ignore[attr-defined]
        ):
            continue
        # the CPU profile counts an expanded function op as claimed (it does run); what
        # decides is whether any EP in the list has a kernel for the op itself
        if any(v.claimed for v in na.verdicts if v.ep != CPU_EP) or _cpu_has_kernel(
            node.op_type, node.since_version
        ):
            continue
        opset = node.opset
        schema = node.schema
        if schema is None or opset is None:
            continue
        fn = onnx.FunctionProto()
        try:
            # the function accessors are missing from onnx's stubs, not from OpSchema
            if schema.has_function:  # type: ignore[attr-defined]
                fn.ParseFromString(schema.get_function_with_opset_version(opset))  # type: ignore[attr-defined]
            elif schema.has_context_dependent_function:  # type: ignore[attr-defined]
                types = []
                for name in node.inputs:
                    vt = lg.value_type(main, name) if name else ValueType()
                    t = _type_proto(vt)
                    types.append(t.SerializeToString())
                fn.ParseFromString(
                    schema.get_context_dependent_function_with_opset_version(  # type: ignore[attr-defined]
                        opset, node.node.SerializeToString(), types
                    )
                )
            else:
                continue
        except Exception:
            continue
        if not fn.node:
            continue
        replace_at[node.index] = _instantiate(fn, node.node, f"{node.name or node.label}/")
    if not replace_at:
        return None
    out = onnx.ModelProto()
    out.CopyFrom(model)
    nodes: list[onnx.NodeProto] = []
    for i, n in enumerate(model.graph.node):
        nodes.extend(replace_at.get(i, [n]))
    del out.graph.node[:]
    out.graph.node.extend(nodes)
    return out


@functools.cache
def _cpu_kernels() -> dict[str, list[tuple[int, int]]] | None:
    """ai.onnx op -> CPU kernel version ranges of the installed onnxruntime (None if unknown)."""
    try:
        from onnxruntime.capi import onnxruntime_pybind11_state as ort_state

        out: dict[str, list[tuple[int, int]]] = {}
        for k in ort_state.get_all_opkernel_def():
            if k.provider == CPU_EP and k.domain in ("", "ai.onnx"):
                lo, hi = k.version_range
                out.setdefault(k.op_name, []).append((int(lo), int(hi)))
        return out
    except Exception:
        return None


def _cpu_has_kernel(op_type: str, since: int | None) -> bool:
    kernels = _cpu_kernels()
    if kernels is None:
        return True  # cannot tell: assume ORT runs the op as it is, not expanded
    ranges = kernels.get(op_type, [])
    return any(lo <= (since or lo) <= hi for lo, hi in ranges)


def _type_proto(vt: ValueType) -> onnx.TypeProto:
    elem = 0
    if vt.dtype:
        try:
            elem = onnx.TensorProto.DataType.Value(vt.dtype.upper())
        except ValueError:
            elem = 0
    shape = None
    if vt.shape is not None:
        shape = [d if isinstance(d, (int, str)) else None for d in vt.shape]
    return onnx.helper.make_tensor_type_proto(elem, shape)


def _instantiate(fn: onnx.FunctionProto, call: onnx.NodeProto, prefix: str) -> list[onnx.NodeProto]:
    """The function's nodes with its formal names bound to the call's values."""
    rename = dict(zip(fn.input, call.input, strict=False))
    rename.update(zip(fn.output, call.output, strict=False))
    attrs = {a.name: a for a in call.attribute}
    out: list[onnx.NodeProto] = []
    for inner in fn.node:
        m = onnx.NodeProto()
        m.CopyFrom(inner)
        m.name = prefix + (inner.name or f"{inner.op_type}_{len(out)}")
        m.input[:] = [rename.get(x, prefix + x) if x else "" for x in inner.input]
        m.output[:] = [rename.get(x, prefix + x) if x else "" for x in inner.output]
        kept = []
        for a in m.attribute:
            if a.ref_attr_name:
                if a.ref_attr_name in attrs:
                    b = onnx.AttributeProto()
                    b.CopyFrom(attrs[a.ref_attr_name])
                    b.name = a.name
                    kept.append(b)
            else:
                kept.append(a)
        del m.attribute[:]
        m.attribute.extend(kept)
        out.append(m)
    return out


def source_location(lg: LevelGraph, node: NodeRef, source: ModelIndex) -> Location:
    """Where ``node`` of a level graph sits in the user's model.

    Nodes ORT (or inlining) created have no position in the user's file: they
    are named, without an index.
    """
    src = lg.source_path.get(node.path)
    if src is not None:
        ref = source.node_by_path(src)
        if ref is not None:
            return ref.location()
    return Location(graph=node.graph.path, node_name=node.name or None, op_type=node.op_type)


# ---------------------------------------------------------------------------
# ORT level-1 graph


def optimized_model(
    model: onnx.ModelProto, timeout_s: float = 120.0
) -> tuple[onnx.ModelProto | None, str]:
    """The graph after ORT's basic (level-1) optimizations, and a note on how it was made.

    From the level-1 cache, or a CPU-only ORT session in an isolated worker reading a
    copy in a temporary folder (never next to the user's model); see
    :mod:`onnxlint.analyses.level1`. Returns ``(None, reason)`` when ORT cannot load
    the model or it is not built (external data, above ``level1.OPTIMIZED_MAX_NODES``).
    """
    from onnxlint.analyses.level1 import Level1Job, cache_enabled

    job = Level1Job(model, use_cache=cache_enabled(), timeout_s=timeout_s)
    try:
        return job.result()
    finally:
        job.close()


#: above this many nodes (subgraphs included) the level-1 graph is not built (docs/performance.md)
# ---------------------------------------------------------------------------
# Facts and verdicts


def _attr_plain(a: onnx.AttributeProto) -> Any:
    if a.type in (
        onnx.AttributeProto.TENSOR,
        onnx.AttributeProto.GRAPH,
        onnx.AttributeProto.GRAPHS,
        onnx.AttributeProto.SPARSE_TENSOR,
        onnx.AttributeProto.TENSORS,
        onnx.AttributeProto.TYPE_PROTO,
        onnx.AttributeProto.TYPE_PROTOS,
    ):
        return None
    try:
        v = onnx.helper.get_attribute_value(a)
    except ValueError:  # e.g. a ref_attr_name outside a function: value unknown
        return None
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, list):
        return [x.decode("utf-8", "replace") if isinstance(x, bytes) else x for x in v]
    return v


def _type_params(schema: Any, formals_attr: str, count: int) -> tuple[str | None, ...]:
    if schema is None:
        return (None,) * count
    formals = getattr(schema, formals_attr)
    if not formals:
        return (None,) * count
    names = {tc.type_param_str for tc in schema.type_constraints}
    out: list[str | None] = []
    for i in range(count):
        f = formals[min(i, len(formals) - 1)]
        out.append(f.type_str if f.type_str in names else None)
    return tuple(out)


def _dequantized_constant(lg: LevelGraph, g: GraphRef, name: str) -> bool:
    """``name`` is computed by a DequantizeLinear (any domain) of constants: initializers,
    Constant outputs, or a QuantizeLinear of those (a quantized constant, as
    onnxruntime.quantization writes a Pad's constant_value)."""

    def constant(value: str, quantized: bool) -> bool:
        if lg.is_initializer(g, value):
            return True
        q = g.producers.get(value) if quantized else None
        return (
            q is not None
            and q.op_type == "QuantizeLinear"
            and all(lg.is_initializer(g, i) for i in q.inputs if i)
        )

    p = g.producers.get(name)
    return (
        p is not None
        and p.op_type == "DequantizeLinear"
        and all(constant(i, k == 0) for k, i in enumerate(p.inputs) if i)
    )


def node_facts(lg: LevelGraph, node: NodeRef, graph_node_count: int) -> NodeFacts:
    """NodeFacts for one node as ORT's capability code would see it."""
    g = node.graph
    ins = [lg.value_type(g, n) if n else ValueType() for n in node.inputs]
    outs = [lg.value_type(g, n) if n else ValueType() for n in node.outputs]
    attrs = {a.name: _attr_plain(a) for a in node.node.attribute}
    return NodeFacts(
        op_type=node.op_type,
        domain=node.domain,
        since_version=node.since_version,
        opset=node.opset,
        input_dtypes=tuple(v.dtype for v in ins),
        output_dtypes=tuple(v.dtype for v in outs),
        input_type_params=_type_params(node.schema, "inputs", len(ins)),
        output_type_params=_type_params(node.schema, "outputs", len(outs)),
        input_shapes=tuple(v.shape for v in ins),
        output_shapes=tuple(v.shape for v in outs),
        constant_inputs=frozenset(
            i for i, n in enumerate(node.inputs) if n and lg.is_initializer(g, n)
        ),
        dequantized_inputs=frozenset(
            i for i, n in enumerate(node.inputs) if n and _dequantized_constant(lg, g, n)
        ),
        graph_inputs=frozenset(
            i for i, n in enumerate(node.inputs) if n and lg.is_graph_input(g, n)
        ),
        graph_outputs=frozenset(i for i, n in enumerate(node.outputs) if n and n in g.outputs),
        absent_inputs=frozenset(i for i, n in enumerate(node.inputs) if not n),
        attributes=attrs,
        graph_node_count=graph_node_count,
    )


@dataclass(frozen=True, slots=True)
class NodeAssignment:
    """Verdicts of every EP for one node, and which EP claims it first."""

    node: NodeRef
    facts: NodeFacts
    #: one verdict per EP in priority order (CPU last)
    verdicts: tuple[Verdict, ...]
    #: EP (ORT name) of the first profile that claims the node, CPU when none does
    first_claimer: str
    #: EPs whose claim ORT withdraws because of its CPU preference for shape computations
    cpu_preferred_by: tuple[str, ...] = ()
    #: the node sits in a control-flow body that an EP needing static control flow never sees
    in_body_refused_by: tuple[str, ...] = ()

    @property
    def path(self) -> str:
        return self.node.path

    def verdict_for(self, ep: str) -> Verdict | None:
        for v in self.verdicts:
            if v.ep == ep:
                return v
        return None

    def claims(self, ep: str) -> bool:
        """Whether ``ep``'s GetCapability would offer this node (before grouping)."""
        v = self.verdict_for(ep)
        if v is None or not v.claimed:
            return False
        return ep not in self.cpu_preferred_by and ep not in self.in_body_refused_by


@dataclass(eq=False)
class LevelAssignment:
    """Facts, verdicts and first claimer of every partitioned node at one graph level."""

    graph: LevelGraph
    profiles: list[Profile]
    nodes: dict[str, NodeAssignment] = field(default_factory=dict)

    @property
    def level(self) -> str:
        return self.graph.level

    def __iter__(self) -> Iterator[NodeAssignment]:
        return iter(self.nodes.values())

    def get(self, node: NodeRef | str) -> NodeAssignment | None:
        return self.nodes.get(node if isinstance(node, str) else node.path)


def _with_cpu(profiles: Sequence[Profile]) -> list[Profile]:
    from onnxlint import profiles as prof

    out = list(profiles)
    if not any(p.ep == CPU_EP for p in out):
        # the CPU profile ships with onnxlint; without it CPU simply takes what is left
        with contextlib.suppress(prof.ProfileError):
            out.append(prof.get_profile("cpu"))
    return out


def assign_level(lg: LevelGraph, profiles: Sequence[Profile]) -> LevelAssignment:
    """Verdicts of every EP for every partitioned node, plus the CPU preference rule."""
    eps = _with_cpu(profiles)
    result = LevelAssignment(graph=lg, profiles=eps)
    # evaluate() is pure: nodes with equal facts (most of a large graph) share one
    # evaluation per EP, and one facts object and one tuple of verdicts in memory
    exact: dict[tuple[Any, ...], tuple[NodeFacts, tuple[Verdict, ...]]] = {}
    # a second memo keyed without symbolic dim names: shape inference names unknown dims
    # one by one (unk__17), which makes most nodes of a transformer unique. An EP's verdict
    # from there is reused unless its reason names a symbol; only those EPs are re-asked.
    by_class: dict[tuple[Any, ...], tuple[tuple[Verdict, ...], tuple[bool, ...]]] = {}
    # graph sizes matter only up to the largest size a profile asks about: without the cap
    # every control-flow body (its own node count) would need evaluations of its own
    cap = node_count_cap(eps)
    for g in lg.graphs():
        nodes = lg.nodes(g)
        count = len(nodes)
        # ORT asks EPs that need static control flow nothing about body nodes: they run on CPU.
        static_cf = tuple(p.ep for p in eps if p.requires_static_control_flow and g.depth > 0)
        for n in nodes:
            facts = node_facts(lg, n, count)
            verdicts, facts = _verdicts(eps, facts, cap, exact, by_class)
            result.nodes[n.path] = NodeAssignment(
                node=n,
                facts=facts,
                verdicts=verdicts,
                first_claimer=CPU_EP,
                in_body_refused_by=static_cf,
            )
    _apply_fusions(lg, result)
    _apply_requantized_failures(lg, result)
    for p in eps:
        if p.cpu_preferred_shape_nodes:
            _apply_cpu_preference(lg, result, p.ep)
    _fill_first_claimer(result, eps)
    return result


def _verdicts(
    eps: Sequence[Profile],
    facts: NodeFacts,
    cap: int,
    exact: dict[tuple[Any, ...], tuple[NodeFacts, tuple[Verdict, ...]]],
    by_class: dict[tuple[Any, ...], tuple[tuple[Verdict, ...], tuple[bool, ...]]],
) -> tuple[tuple[Verdict, ...], NodeFacts]:
    """Every EP's verdict for ``facts`` through the two memos; also the facts object to keep
    (an equal one already kept, so that identical nodes share it)."""

    def ask(p: Profile) -> Verdict:
        return _epcontext_verdict(p, facts) or evaluate(p, facts)

    try:
        key = facts.key(cap)
        hit = exact.get(key)
    except TypeError:  # an attribute value that does not hash: evaluate the node alone
        return tuple(ask(p) for p in eps), facts
    if hit is not None:
        return hit[1], (hit[0] if hit[0] == facts else facts)
    ckey = facts.key(cap, symbols=False)
    known = by_class.get(ckey)
    if known is None:
        verdicts = tuple(ask(p) for p in eps)
        symbols = symbols_of(facts)
        names = tuple(
            bool(symbols)
            and any(sym in t for t in (v.reason, v.fails_after_claim) if t for sym in symbols)
            for v in verdicts
        )
        by_class[ckey] = (verdicts, names)
    else:
        verdicts = tuple(ask(p) if named else v for p, v, named in zip(eps, *known, strict=True))
    exact[key] = (facts, verdicts)
    return verdicts, facts


def _epcontext_verdict(p: Profile, facts: NodeFacts) -> Verdict | None:
    """An EPContext node holds one EP's compiled binary: ORT gives it to the EP named by its
    ``source`` attribute and to no other (the compiled-model rules check the node itself)."""
    if facts.op_type != "EPContext" or facts.domain != "com.microsoft":
        return None
    source = str(facts.attributes.get("source") or "").lower()
    names = {p.ep.lower(), p.ep.lower().removesuffix("executionprovider")}
    mine = bool(source) and source in names
    reason = (
        f"{p.label} runs its own compiled EPContext binary"
        if mine
        else f"{p.label} does not run an EPContext node compiled for '{source or 'no source'}'"
    )
    return Verdict(
        ep=p.ep, profile=p.id, claimed=mine, kind="supported" if mine else "domain", reason=reason
    )


#: EPs that claim a node they refuse alone when it is part of a pattern they fuse.
#: QNN HTP: the exporters' erf-form Gelu ``x * 0.5 * (1 + erf(x / sqrt(2)))`` is
#: fused, so its Erf is claimed although a lone Erf is not (measured with
#: onnxruntime-qnn 2.7.0, HTP simulator; benchmarks/partition_models.py encoder blocks).
ERF_GELU_EPS = frozenset({"QNNExecutionProvider"})


def _apply_fusions(lg: LevelGraph, result: LevelAssignment) -> None:
    from dataclasses import replace

    for na in list(result.nodes.values()):
        n = na.node
        if n.op_type != "Erf":
            continue
        pattern = _erf_gelu_nodes(n)
        if not pattern:
            continue
        verdicts = []
        for v in na.verdicts:
            # only an Erf refused for being Erf, in a pattern whose other nodes the EP takes
            others = [result.nodes.get(p.path) for p in pattern]
            fused = (
                v.ep in ERF_GELU_EPS
                and not v.claimed
                and v.kind == "op"
                and all(o is not None and o.claims(v.ep) for o in others)
            )
            verdicts.append(
                replace(v, claimed=True, kind="supported", reason=f"{v.ep} fuses Erf into Gelu")
                if fused
                else v
            )
        result.nodes[n.path] = replace(na, verdicts=tuple(verdicts))


def _apply_requantized_failures(lg: LevelGraph, result: LevelAssignment) -> None:
    """Claimed nodes that a profile's ``requantized_constant_failures`` say fail to compile
    (OpenVINO CPU): their verdict gets ``fails_after_claim`` (see analyses/requantized)."""
    from dataclasses import replace

    from onnxlint.analyses.requantized import match_node, requantized_failure_ops

    wanted = [(p, requantized_failure_ops(p)) for p in result.profiles]
    wanted = [(p, ops) for p, ops in wanted if ops]
    if not wanted:
        return
    for na in list(result.nodes.values()):
        hits = {}
        for p, ops in wanted:
            v = na.verdict_for(p.ep)
            if na.node.op_type not in ops or v is None or not v.claimed or v.fails_after_claim:
                continue
            m = match_node(lg, na.node, p)
            if m is not None:
                hits[p.ep] = m
        if not hits:
            continue
        verdicts = tuple(
            replace(
                v,
                fails_after_claim=f"{v.reason} but session creation fails: {hits[v.ep].describe()}",
                provenance=hits[v.ep].failure.provenance or v.provenance,
            )
            if v.ep in hits
            else v
            for v in na.verdicts
        )
        result.nodes[na.path] = replace(na, verdicts=verdicts)


def _erf_gelu_nodes(erf: NodeRef) -> list[NodeRef]:
    """The other nodes of Div(x, c) -> Erf -> Add(., 1) -> Mul(x, .), or [] when no match."""
    g = erf.graph
    div = g.producers.get(erf.inputs[0]) if erf.inputs else None
    if div is None or div.op_type != "Div":
        return []
    x = div.inputs[0]
    adds = g.consumers.get(erf.outputs[0], [])
    if len(adds) != 1 or adds[0].op_type != "Add":
        return []
    for mul in g.consumers.get(adds[0].outputs[0], []):
        if mul.op_type != "Mul":
            continue
        if x in mul.inputs:
            return [div, adds[0], mul]
        # x * 0.5 computed first: Mul(Mul(x, 0.5), add)
        for name in mul.inputs:
            p = g.producers.get(name)
            if p is not None and p.op_type == "Mul" and x in p.inputs:
                return [div, adds[0], mul, p]
    return []


def _fill_first_claimer(result: LevelAssignment, eps: Sequence[Profile]) -> None:
    from dataclasses import replace

    for path, na in list(result.nodes.items()):
        first = next((p.ep for p in eps if na.claims(p.ep)), CPU_EP)
        result.nodes[path] = replace(na, first_claimer=first)


def _apply_cpu_preference(lg: LevelGraph, result: LevelAssignment, ep: str) -> None:
    """ORT's GetCpuPreferredNodes for one kernel EP, per graph.

    Seeds: consumers of outputs the EP's kernels leave in CPU memory (Shape,
    Size). A candidate the EP would run moves to CPU when every input is a
    CPU value (a seed output, an output of a node already moved), a graph
    input or a small initializer, none is float16/bfloat16, and no CPU input
    lands on a slot the EP's kernel reads from CPU anyway; the move then
    propagates to its consumers. Candidates are taken in topological order.
    """
    from dataclasses import replace

    for g in lg.graphs():
        nodes = lg.nodes(g)
        seeds = [n for n in nodes if n.op_type in CPU_OUTPUT_OPS and n.domain == "ai.onnx"]
        if not seeds:
            continue  # nothing leaves a value in CPU memory: nothing to move
        topo = lg.order(g)
        order = lg.positions(g)

        def is_tentative(path: str) -> bool:
            na = result.nodes.get(path)
            return na is not None and na.claims(ep)

        cpu_values: set[str] = set()
        candidates: set[str] = set()

        def consumers(name: str, g: GraphRef = g, order: dict[str, int] = order) -> list[NodeRef]:
            return [c for c in g.consumers.get(name, []) if c.path in order]

        for n in seeds:
            if not is_tentative(n.path):
                continue
            for slot in CPU_OUTPUT_OPS[n.op_type]:
                if slot < len(n.outputs) and n.outputs[slot]:
                    cpu_values.add(n.outputs[slot])
                    candidates.update(c.path for c in consumers(n.outputs[slot]))
        visited: set[str] = set()
        moved: set[str] = set()
        # a heap in topological position: taking the min of a set each time was quadratic
        heap = [(order.get(p, 0), p) for p in candidates]
        heapq.heapify(heap)
        while heap:
            cur = heapq.heappop(heap)[1]
            if cur in visited:
                continue
            visited.add(cur)
            if not is_tentative(cur):
                continue
            n = topo[order[cur]]
            cpu_slots = CPU_INPUT_SLOTS.get(n.op_type, ()) if n.domain == "ai.onnx" else ()
            place = True
            for i, name in enumerate(n.inputs):
                if not name:
                    continue
                if lg.value_type(g, name).dtype in _NO_CPU_PREFERENCE_DTYPES:
                    place = False
                    break
                elems = lg.initializer_elements(g, name)
                if (elems is not None and elems <= SMALL_INITIALIZER_ELEMENTS) or lg.is_graph_input(
                    g, name
                ):
                    continue
                if name not in cpu_values or i in cpu_slots:
                    place = False
                    break
            if place:
                moved.add(cur)
                cpu_values.update(o for o in n.outputs if o)
                for o in n.outputs:
                    if o:
                        for c in consumers(o):
                            heapq.heappush(heap, (order.get(c.path, 0), c.path))
        for path in moved:
            na = result.nodes[path]
            result.nodes[path] = replace(na, cpu_preferred_by=(*na.cpu_preferred_by, ep))


# ---------------------------------------------------------------------------
# ORT's topological order


def node_edges(
    g: GraphRef, nodes: Sequence[NodeRef], captured: bool = True
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Node-to-node edges (inputs and values captured by bodies), as ORT's graph has them;
    without ``captured``, the explicit inputs only."""
    paths = {n.path for n in nodes}
    preds: dict[str, list[str]] = {n.path: [] for n in nodes}
    succs: dict[str, list[str]] = {n.path: [] for n in nodes}
    for n in nodes:
        names = list(n.inputs)
        for sub in n.subgraphs.values() if captured else ():
            names += sorted(sub.captured)
        for name in names:
            if not name:
                continue
            p = g.producers.get(name)
            if p is None or p.path not in paths or p.path == n.path:
                continue
            preds[n.path].append(p.path)
            succs[p.path].append(n.path)
    return preds, succs


def topological_order(g: GraphRef, nodes: Sequence[NodeRef]) -> list[NodeRef]:
    """ORT's GraphViewer order: a reverse DFS from the leaf nodes, the highest-index input first.

    The order matters: OpenVINO cuts clusters along it, and the QDQ-aware
    grouping takes its root nodes in it.
    """
    by_path = {n.path: n for n in nodes}
    index = {n.path: i for i, n in enumerate(nodes)}
    preds, succs = node_edges(g, nodes)
    leaves = [n.path for n in nodes if not succs[n.path]]
    stack: list[tuple[str, bool]] = [(p, False) for p in leaves]
    visited: set[str] = set()
    out: list[NodeRef] = []
    while stack:
        path, leave = stack.pop()
        if leave:
            out.append(by_path[path])
            continue
        if path in visited:
            continue
        visited.add(path)
        stack.append((path, True))
        # ORT sorts inputs by ascending index before pushing: the highest index is visited
        # first (measured, onnxruntime-openvino 1.24.1: a cut at a refused node between two
        # producers of one consumer leaves the higher-index producer's chain before the cut)
        for p in sorted(set(preds[path]), key=lambda x: index[x]):
            if p not in visited:
                stack.append((p, False))
    if len(out) < len(nodes):  # a cycle (invalid model): keep the remaining nodes in file order
        seen = {n.path for n in out}
        out += [n for n in nodes if n.path not in seen]
    return out


# ---------------------------------------------------------------------------
# The shared analysis


class Assignment:
    """``ctx.analysis(Assignment)``: verdicts per node and EP, per graph level, computed once.

    ``level("exported")`` is always available; ``level("optimized")`` runs ORT
    (CPU only) the first time it is asked for and returns None when ORT cannot
    load the model (``optimized_note`` says why).
    """

    def __init__(self, ctx: LintContext) -> None:
        self.ctx = ctx
        self.profiles: list[Profile] = list(ctx.eps)
        self._levels: dict[str, LevelAssignment | None] = {}
        self.optimized_note: str | None = None
        #: the level-1 worker's failure (hung, crashed, ...), reported as OL605
        self.optimized_failure: WorkerFailure | None = None

    @property
    def exported(self) -> LevelAssignment:
        got = self.level(EXPORTED)
        assert got is not None
        return got

    def level(self, level: str) -> LevelAssignment | None:
        if level not in self._levels:
            self._levels[level] = self._build(level)
        return self._levels[level]

    def _build(self, level: str) -> LevelAssignment | None:
        from onnxlint.analyses.shapes import Shapes

        source = override_dims(self.ctx.model, self.ctx.config.assume_dims)
        note: str | None = None
        if level == EXPORTED:
            model = inline_functions(source)
        elif level == OPTIMIZED:
            from onnxlint.analyses.level1 import graph_for

            # collects the worker the engine started right after loading (or the cache's copy)
            failures: list[WorkerFailure] = []
            got, note = graph_for(self.ctx.model, self.ctx.config, source, failures)
            self.optimized_note = note
            self.optimized_failure = failures[0] if failures else None
            if got is None:
                return None
            model = got
        else:
            raise ValueError(f"unknown graph level {level!r}")
        mapped = level != EXPORTED or model is not source
        inferred = None
        if model is self.ctx.model and model.ir_version >= 4:
            # the exported graph as the user wrote it: the Shapes analysis has inferred it
            # already (below IR 4 the inference here reads initializers differently)
            inferred = self.ctx.analysis(Shapes).take_inferred()
            if inferred is not None and _session_types_differ(model):
                # the Shapes analysis may have propagated shape values ORT does not
                inferred = _infer(model)
        lg = build_level_graph(
            model,
            level,
            source=self.ctx.index if mapped else None,
            inferred=inferred,
            source_index=self.ctx.index if inferred is not None else None,
        )
        la = assign_level(lg, self.profiles)
        expanded = expand_unclaimed_function_ops(lg, la)
        if expanded is not None:
            lg = build_level_graph(expanded, level, source=self.ctx.index)
            la = assign_level(lg, self.profiles)
        lg.note = note
        return la
