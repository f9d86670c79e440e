"""Dataflow analysis: which values are constants, shape-derived, or data-dependent.

Every value gets a :class:`Constness`:

- ``CONSTANT``: computable from initializers and ``Constant`` nodes alone;
- ``SHAPE_DERIVED``: computable from tensor *shapes* (``Shape``/``Size`` and
  arithmetic on them), never from tensor values. Whether it is known at export
  time depends on those shapes: :meth:`Dataflow.symbols` names the symbolic
  dims it still depends on, and :meth:`Dataflow.foldable` is True when there
  are none;
- ``DATA_DEPENDENT``: depends on the runtime *values* of graph inputs (or on a
  random op, or on a tensor whose shape itself depends on runtime values).

Alongside, each value carries whether its *shape* depends on runtime values
(``NonZero``, ``Reshape`` to a computed shape, ...) and the node that made it so.

Small integer tensors (the shape vectors exporters build with
``Shape -> Gather -> Unsqueeze -> Concat``) are evaluated symbolically, element
by element, so ``Gather(Shape(x), 2)`` is foldable when dim 2 of ``x`` is static
even if dim 0 is ``batch``. :meth:`Dataflow.value` returns those elements.

Propagation enters If/Loop/Scan bodies (loop-carried values reach a fixpoint)
and model-local functions (their inputs take the join of all call sites).
Everything is linear in the size of the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from onnxlint.analyses.elements import (
    MAX_TRACKED_ELEMENTS,
    UNKNOWN_SYMBOL,
    Elem,
    constant_elems,
    elem_symbols,
    evaluate,
    int_attr,
    symbols_of,
    tensor_elems,
)
from onnxlint.analyses.facts import Constness, ValueFacts, moved_facts
from onnxlint.analyses.shapes import Shapes
from onnxlint.index import topological_order

if TYPE_CHECKING:
    from onnxlint.context import LintContext
    from onnxlint.index import GraphRef, ModelIndex, NodeRef

__all__ = [
    "DATA_DEPENDENT_SHAPE_OPS",
    "SIZE_INPUTS",
    "Constness",
    "Dataflow",
    "Elem",
    "ValueFacts",
    "moved_facts",
]

#: ops whose output *shape* follows from input *values*: op -> input slots that set the size.
#: ``None`` means "the data input itself": the output size depends on the contents.
SIZE_INPUTS: dict[str, tuple[int, ...]] = {
    "NonZero": (0,),
    "Unique": (0,),
    "NonMaxSuppression": (0, 1, 2, 3, 4),
    "Compress": (1,),
    "TopK": (1,),
    "Range": (0, 1, 2),
    "ConstantOfShape": (0,),
    "Expand": (1,),
    "Reshape": (1,),
    "Tile": (1,),
    "Resize": (2, 3),
    "Upsample": (1,),
    "Pad": (1, 3),
    "Slice": (1, 2, 3, 4),
    "OneHot": (1,),
    "Split": (1,),
    "Squeeze": (1,),
    "Unsqueeze": (1,),
    "CenterCropPad": (1,),
    "StringSplit": (0,),
}

#: ops whose output size depends on the data input's *contents* (not just a size input)
DATA_DEPENDENT_SHAPE_OPS = frozenset(
    {"NonZero", "Unique", "NonMaxSuppression", "Compress", "StringSplit"}
)

_RANDOM_OPS = frozenset(
    {
        "RandomNormal",
        "RandomUniform",
        "RandomNormalLike",
        "RandomUniformLike",
        "Multinomial",
        "Bernoulli",
    }
)


_CONST = ValueFacts(Constness.CONSTANT)
_SHAPE, _DD = Constness.SHAPE_DERIVED, Constness.DATA_DEPENDENT
#: one empty set for the ~all values that depend on no symbol (a new one is 216 bytes)
_NO_SYMBOLS: frozenset[str] = frozenset()
_INPUT_SOURCE = "graph input"


class Dataflow:
    """Constness of every value; ``ctx.analysis(Dataflow)``."""

    model_only = True  # the model and configuration alone: see context.SharedModel

    def __init__(self, ctx: LintContext) -> None:
        self._shapes = ctx.analysis(Shapes)
        self._index = ctx.index
        self._facts: dict[str, ValueFacts] = {}
        self._fn_facts: dict[str, dict[str, ValueFacts]] = {}
        self._fn_inputs: dict[str, list[ValueFacts | None]] = {}
        self._run(ctx)

    @classmethod
    def taken_over(
        cls, prior: Dataflow, index: ModelIndex, shapes: Shapes, moved: dict[int, NodeRef]
    ) -> Dataflow:
        """``prior``'s facts for an edited model they provably hold for (decided by
        ``analyses.edits``), each fact's nodes moved to ``index``'s records (``moved``: the
        ``id`` of each of ``prior``'s records -> the one at its position in ``index``)."""
        self = cls.__new__(cls)
        self._shapes = shapes
        self._index = index
        # values downstream of one node share its facts (equal records, by value): each
        # distinct record is moved once, and the moved ones are shared the same way
        memo: dict[ValueFacts, ValueFacts] = {}

        def move(f: ValueFacts) -> ValueFacts:
            if f.origin is None and f.shape_origin is None:
                return f
            got = memo.get(f)
            if got is None:
                got = memo[f] = moved_facts(f, moved)
            return got

        self._facts = {k: move(f) for k, f in prior._facts.items()}
        self._fn_facts = {
            path: {k: move(f) for k, f in table.items()} for path, table in prior._fn_facts.items()
        }
        self._fn_inputs = prior._fn_inputs  # origin-free records, never changed once built
        return self

    @property
    def index(self) -> ModelIndex:
        """The index of the model these facts are about (their nodes are its records)."""
        return self._index

    def node_facts(self, node: NodeRef, inputs: dict[str, ValueFacts]) -> dict[str, ValueFacts]:
        """The facts this walk gives ``node``'s outputs when its inputs have ``inputs``."""
        scratch = dict(inputs)
        self._node(node, scratch)  # reads only its inputs; writes its outputs
        return {name: scratch[name] for name in node.outputs if name and name in scratch}

    # -- public queries ---------------------------------------------------------------
    def facts(self, name: str, graph: GraphRef | None = None) -> ValueFacts:
        """Everything known about ``name``; unknown names are treated as data-dependent."""
        if graph is None or (graph.outer is None and graph.function is None):
            found = self._facts.get(name)  # the main graph's (most lookups)
            return found if found is not None else ValueFacts(_DD, source=name)
        table = self._table(graph)
        found = table.get(name)
        if found is None and table is not self._facts:
            found = self._facts.get(name)
        if found is None:
            return ValueFacts(Constness.DATA_DEPENDENT, source=name)
        return found

    def kind(self, name: str, graph: GraphRef | None = None) -> Constness:
        return self.facts(name, graph).kind

    def origin(self, name: str, graph: GraphRef | None = None) -> NodeRef | None:
        """First node that makes ``name`` data-dependent (for messages)."""
        return self.facts(name, graph).origin

    def source(self, name: str, graph: GraphRef | None = None) -> str | None:
        """The graph input (or other root) a data-dependent value comes from."""
        return self.facts(name, graph).source

    def symbols(self, name: str, graph: GraphRef | None = None) -> frozenset[str]:
        """Symbolic dims a shape-derived value depends on (empty: known at export time)."""
        return self.facts(name, graph).symbols

    def value(self, name: str, graph: GraphRef | None = None) -> tuple[Elem, ...] | None:
        """Known elements of a small integer tensor (flattened), or None."""
        return self.facts(name, graph).value

    def foldable(self, name: str, graph: GraphRef | None = None) -> bool:
        """Known at export time: a constant, or shape-derived from static dims only."""
        f = self.facts(name, graph)
        if f.kind is Constness.CONSTANT:
            return True
        return f.kind is Constness.SHAPE_DERIVED and not f.symbols

    def shape_dependent(self, name: str, graph: GraphRef | None = None) -> bool:
        """Whether the *shape* of ``name`` depends on runtime values."""
        return self.facts(name, graph).shape_dependent

    def shape_origin(self, name: str, graph: GraphRef | None = None) -> NodeRef | None:
        return self.facts(name, graph).shape_origin

    def _table(self, graph: GraphRef | None) -> dict[str, ValueFacts]:
        g = graph
        while g is not None and g.outer is not None:
            g = g.outer
        if g is not None and g.is_function:
            return self._fn_facts.setdefault(g.path, {})
        return self._facts

    # -- propagation ------------------------------------------------------------------
    def _run(self, ctx: LintContext) -> None:
        index = ctx.index
        main = index.main
        for name in main.inputs:
            # an initializer listed as an input (required before IR 4) has a value: callers could
            # override it, but nobody feeds weights; OL106 reports the overridability itself
            if name not in main.initializers:
                self._facts[name] = ValueFacts(Constness.DATA_DEPENDENT, source=name)
        self._graph(main, self._facts)
        # functions: their inputs take the join of what the call sites pass
        for fn in index.functions.values():
            table = self._fn_facts.setdefault(fn.path, {})
            seen = self._fn_inputs.get(fn.path, [])
            for i, name in enumerate(fn.inputs):
                passed = seen[i] if i < len(seen) else None
                table[name] = passed or ValueFacts(Constness.DATA_DEPENDENT, source=name)
            self._graph(fn, table)

    def _graph(self, g: GraphRef, table: dict[str, ValueFacts]) -> None:
        for name, init in g.initializers.items():
            if name not in table:
                table[name] = ValueFacts(Constness.CONSTANT, value=tensor_elems(init))
        # ORT's order, the one every other analysis walks: of two call sites of a function
        # that both pass a data-dependent value, the one first in it names the origin
        for node in topological_order(g, g.nodes):
            self._node(node, table)

    def _lookup(self, table: dict[str, ValueFacts], name: str) -> ValueFacts:
        # function bodies have their own table: they never see the model's values
        found = table.get(name)
        if found is None:
            return ValueFacts(Constness.DATA_DEPENDENT, source=name)
        return found

    def _node(self, node: NodeRef, table: dict[str, ValueFacts]) -> None:
        n = node.node
        # the index's names (protobuf makes new strings on every read); _lookup inline
        ins: list[ValueFacts | None] = []
        for in_name in node.input_names:
            if not in_name:
                ins.append(None)
            elif (found := table.get(in_name)) is not None:
                ins.append(found)
            else:
                ins.append(ValueFacts(Constness.DATA_DEPENDENT, source=in_name))
        op = node.op_type if node.domain == "ai.onnx" else None
        outs: list[ValueFacts]
        if node.subgraphs:
            outs = self._control_flow(node, ins, table)
        elif op == "Constant":
            outs = [ValueFacts(Constness.CONSTANT, value=constant_elems(n))]
        elif op in _RANDOM_OPS:
            outs = [
                ValueFacts(Constness.DATA_DEPENDENT, origin=node, source=f"{n.op_type} (random)")
            ]
        elif op in ("Shape", "Size"):
            outs = [self._shape_of(node, ins)]
        else:
            outs = [self._generic(node, ins)] * max(1, len(n.output))
            if op is not None and outs[0].kind is not Constness.DATA_DEPENDENT:
                value = evaluate(op, node, [f.value if f is not None else None for f in ins])
                if value is not None:
                    outs[0] = _with_value(outs[0], value)
        functions = self._index.functions
        fn = functions.get((n.domain, n.op_type)) if functions else None
        if fn is not None:
            self._record_call(fn, ins)
        for i, name in enumerate(n.output):
            if name:
                table[name] = outs[i] if i < len(outs) else outs[-1]

    def _record_call(self, fn: GraphRef, ins: Sequence[ValueFacts | None]) -> None:
        seen = self._fn_inputs.setdefault(fn.path, [])
        for i, f in enumerate(ins):
            if f is None:
                continue
            f = ValueFacts(f.kind, source=f.source, symbols=f.symbols)
            if i >= len(seen):
                seen += [None] * (i + 1 - len(seen))
            seen[i] = f if seen[i] is None else _join([seen[i], f])  # type: ignore[list-item]

    def _shape_of(self, node: NodeRef, ins: Sequence[ValueFacts | None]) -> ValueFacts:
        src = ins[0] if ins else None
        name = node.node.input[0] if node.node.input else ""
        if src is not None and src.shape_dependent:
            return ValueFacts(
                Constness.DATA_DEPENDENT,
                origin=src.shape_origin or node,
                source=f"the shape of '{name}'",
            )
        shape = self._shapes.shape(name) if name else None
        if node.op_type == "Size":
            if shape is not None and all(isinstance(d, int) for d in shape):
                total = 1
                for d in shape:
                    total *= int(d)  # type: ignore[arg-type]
                return ValueFacts(Constness.SHAPE_DERIVED, value=(total,))
            syms = symbols_of(shape) if shape is not None else frozenset({UNKNOWN_SYMBOL})
            return ValueFacts(Constness.SHAPE_DERIVED, symbols=syms or frozenset({UNKNOWN_SYMBOL}))
        if shape is None:
            return ValueFacts(Constness.SHAPE_DERIVED, symbols=frozenset({UNKNOWN_SYMBOL}))
        rank = len(shape)
        start = int_attr(node, "start", 0)
        end = int_attr(node, "end", rank)
        start = max(0, min(rank, start + rank if start < 0 else start))
        end = max(0, min(rank, end + rank if end < 0 else end))
        dims = tuple(shape[start:end])
        kind = Constness.CONSTANT if src is not None and src.kind is Constness.CONSTANT else None
        facts = ValueFacts(Constness.SHAPE_DERIVED, value=dims)
        if kind is Constness.CONSTANT and all(isinstance(d, int) for d in dims):
            return ValueFacts(Constness.CONSTANT, value=dims)
        return _with_value(facts, dims)

    def _generic(self, node: NodeRef, ins: Sequence[ValueFacts | None]) -> ValueFacts:
        present = [f for f in ins if f is not None]
        if not present:
            return _CONST
        joined = _join(present)
        if joined.kind is Constness.DATA_DEPENDENT and joined.origin is None:
            joined = ValueFacts(
                Constness.DATA_DEPENDENT,
                origin=node,
                source=joined.source,
                shape_dependent=joined.shape_dependent,
                shape_origin=joined.shape_origin,
            )
        shape_dep, shape_origin = _shape_dependence(node, ins, joined)
        return ValueFacts(
            joined.kind, joined.origin, joined.source, joined.symbols, None, shape_dep, shape_origin
        )

    # -- control flow -----------------------------------------------------------------
    def _control_flow(
        self, node: NodeRef, ins: Sequence[ValueFacts | None], table: dict[str, ValueFacts]
    ) -> list[ValueFacts]:
        op = node.op_type
        n_out = max(1, len(node.node.output))
        if op == "If" and node.domain == "ai.onnx":
            cond = ins[0] if ins else None
            per_out: list[list[ValueFacts]] = [[] for _ in range(n_out)]
            for sub in node.subgraphs.values():
                self._graph(sub, table)
                for i, name in enumerate(sub.outputs[:n_out]):
                    per_out[i].append(self._lookup(table, name))
            outs = []
            for i in range(n_out):
                parts = [f for f in (cond, *per_out[i]) if f is not None]
                joined = _join(parts) if parts else _CONST
                outs.append(self._as_output(node, joined, cond))
            return outs
        if op == "Loop" and node.domain == "ai.onnx" and "body" in node.subgraphs:
            return self._loop(node, ins, table)
        if op == "Scan" and node.domain == "ai.onnx" and "body" in node.subgraphs:
            return self._scan(node, ins, table)
        # anything else with a body (SequenceMap, custom ops): conservative join
        present = [f for f in ins if f is not None]
        base = _join(present) if present else _CONST
        for sub in node.subgraphs.values():
            for name in sub.inputs:
                table[name] = base
            self._graph(sub, table)
        outs_facts = [
            self._lookup(table, o) for sub in node.subgraphs.values() for o in sub.outputs
        ]
        joined = _join([base, *outs_facts])
        return [self._as_output(node, joined, None)] * n_out

    def _as_output(
        self, node: NodeRef, joined: ValueFacts, control: ValueFacts | None
    ) -> ValueFacts:
        origin = joined.origin
        if joined.kind is Constness.DATA_DEPENDENT and origin is None:
            origin = node
        shape_dep = joined.shape_dependent
        shape_origin = joined.shape_origin
        if control is not None and control.kind is Constness.DATA_DEPENDENT and not shape_dep:
            # which branch runs, or how often, is decided at run time: so is the output's shape
            shape_dep, shape_origin = True, node
        return ValueFacts(
            joined.kind, origin, joined.source, joined.symbols, None, shape_dep, shape_origin
        )

    def _loop(
        self, node: NodeRef, ins: Sequence[ValueFacts | None], table: dict[str, ValueFacts]
    ) -> list[ValueFacts]:
        body = node.subgraphs["body"]
        trip = ins[0] if len(ins) > 0 else None
        cond = ins[1] if len(ins) > 1 else None
        carried_init = list(ins[2:])
        n_carried = len(carried_init)
        control_parts = [f for f in (trip, cond) if f is not None]
        control = _join(control_parts) if control_parts else _CONST
        counter = (
            control
            if control.kind is Constness.DATA_DEPENDENT
            else ValueFacts(Constness.SHAPE_DERIVED, symbols=frozenset({UNKNOWN_SYMBOL}))
        )
        carried = [f or _CONST for f in carried_init]
        for _ in range(4):  # the lattice has three levels: a fixpoint within a few rounds
            if body.inputs:
                table[body.inputs[0]] = counter
            if len(body.inputs) > 1:
                table[body.inputs[1]] = cond or _CONST
            for j, name in enumerate(body.inputs[2 : 2 + n_carried]):
                table[name] = carried[j]
            self._graph(body, table)
            outs = [self._lookup(table, o) for o in body.outputs]
            new = [
                _join([carried[j], outs[1 + j]]) if 1 + j < len(outs) else carried[j]
                for j in range(n_carried)
            ]
            if [f.kind for f in new] == [f.kind for f in carried] and [
                f.shape_dependent for f in new
            ] == [f.shape_dependent for f in carried]:
                break
            carried = new
        outs = [self._lookup(table, o) for o in body.outputs]
        cond_out = outs[0] if outs else _CONST
        # a loop that stops on a condition computed from data runs a data-dependent count
        loop_control = (
            _join([control, cond_out]) if cond_out.kind is Constness.DATA_DEPENDENT else control
        )
        results = []
        for j in range(max(1, len(node.node.output))):
            if j < n_carried:
                body_out = outs[1 + j] if 1 + j < len(outs) else _CONST
                joined = _join([carried[j], body_out, loop_control])
                results.append(self._as_output(node, joined, None))
            else:
                k = 1 + j
                body_out = outs[k] if k < len(outs) else _CONST
                joined = _join([body_out, loop_control])
                results.append(self._as_output(node, joined, loop_control))
        return results

    def _scan(
        self, node: NodeRef, ins: Sequence[ValueFacts | None], table: dict[str, ValueFacts]
    ) -> list[ValueFacts]:
        body = node.subgraphs["body"]
        n_scan = int_attr(node, "num_scan_inputs", 0)
        n_state = max(0, len(body.inputs) - n_scan)
        state = [ins[j] or _CONST if j < len(ins) else _CONST for j in range(n_state)]
        scanned = [ins[j] or _CONST if j < len(ins) else _CONST for j in range(n_state, len(ins))]
        for _ in range(4):
            for j, name in enumerate(body.inputs[:n_state]):
                table[name] = state[j]
            for j, name in enumerate(body.inputs[n_state:]):
                f = scanned[j] if j < len(scanned) else _CONST
                table[name] = ValueFacts(f.kind, f.origin, f.source, f.symbols)
            self._graph(body, table)
            outs = [self._lookup(table, o) for o in body.outputs]
            new = [
                _join([state[j], outs[j]]) if j < len(outs) else state[j] for j in range(n_state)
            ]
            if [f.kind for f in new] == [f.kind for f in state]:
                break
            state = new
        outs = [self._lookup(table, o) for o in body.outputs]
        # the iteration count is the scan axis length: a shape, data-dependent only if that shape is
        length_dep = [f for f in scanned if f.shape_dependent]
        control = _join(length_dep) if length_dep else None
        results = []
        for j in range(max(1, len(node.node.output))):
            body_out = outs[j] if j < len(outs) else _CONST
            parts = [body_out, *([state[j]] if j < n_state else [])]
            if control is not None:
                parts.append(ValueFacts(Constness.DATA_DEPENDENT, control.origin, control.source))
            results.append(self._as_output(node, _join(parts), None))
        return results


# ---------------------------------------------------------------------------
# helpers


def _join(parts: Sequence[ValueFacts]) -> ValueFacts:
    """Least upper bound: the most dependent kind wins, keeping the first origin of that kind."""
    best = parts[0]
    symbols: set[str] = set()
    shape_dep = False
    shape_origin = None
    for f in parts:
        # ``f.kind > best.kind`` by identity (Constness compares in Python)
        if best.kind is not _DD and (
            f.kind is _DD or (f.kind is _SHAPE and best.kind is Constness.CONSTANT)
        ):
            best = f
        if f.kind is Constness.SHAPE_DERIVED:
            symbols |= f.symbols
        if f.shape_dependent and not shape_dep:
            shape_dep, shape_origin = True, f.shape_origin
    kind = best.kind
    return ValueFacts(
        kind,
        best.origin if kind is Constness.DATA_DEPENDENT else None,
        best.source if kind is Constness.DATA_DEPENDENT else None,
        frozenset(symbols) if kind is Constness.SHAPE_DERIVED and symbols else _NO_SYMBOLS,
        None,
        shape_dep,
        shape_origin,
    )


def _shape_dependence(
    node: NodeRef, ins: Sequence[ValueFacts | None], joined: ValueFacts
) -> tuple[bool, NodeRef | None]:
    if joined.shape_dependent:
        return True, joined.shape_origin
    slots = SIZE_INPUTS.get(node.op_type) if node.domain == "ai.onnx" else None
    if slots is None:
        return False, None
    # before opset 13 these took their sizes from attributes, never from inputs
    if node.op_type in ("Squeeze", "Unsqueeze", "Split") and (node.since_version or 13) < 13:
        return False, None
    for s in slots:
        f = ins[s] if s < len(ins) else None
        if f is not None and f.kind is Constness.DATA_DEPENDENT:
            return True, node
    return False, None


def _with_value(facts: ValueFacts, value: tuple[Elem, ...]) -> ValueFacts:
    if len(value) > MAX_TRACKED_ELEMENTS:
        return facts
    if facts.kind is Constness.SHAPE_DERIVED:
        symbols = elem_symbols(value)
        return ValueFacts(
            facts.kind,
            facts.origin,
            facts.source,
            symbols,
            value,
            facts.shape_dependent,
            facts.shape_origin,
        )
    return ValueFacts(
        facts.kind,
        facts.origin,
        facts.source,
        facts.symbols,
        value,
        facts.shape_dependent,
        facts.shape_origin,
    )
