"""QDQ arrangements an EP claims and then fails to compile: requantized constants.

``onnxruntime.quantization`` quantizes a float constant that the model computes with
(attention's scale, a GELU's ``0.5``, a Pad's ``constant_value``) with a QuantizeLinear of
the constant followed by a DequantizeLinear, both left in the graph. ORT's level-1 constant
folding (on by default) turns the QuantizeLinear into a quantized initializer before any EP
sees it; with optimizations disabled the EP gets the QuantizeLinear itself. OpenVINO's CPU
plug-in fails to compile some of these arrangements (its low-precision transformations on
an 8-bit Add/Mul, Pad's shape check with a 16-bit ``constant_value``). Which ones is data,
``requantized_constant_failures`` in the EP's profile; this module matches it against the
graph of one level.

The constant may also be computed from constants alone, where the entry says so
(``computed_constants``): a model whose float constant is an Identity of a shared, already
quantized bias (a DequantizeLinear of an int32 initializer, as the ConvNeXt QDQ export has)
fails the same way. ORT's constant folding leaves DequantizeLinear nodes to the EPs, so such
a QuantizeLinear is still there at the default level and the session fails at both levels;
a float subgraph of constants is folded, and fails with optimizations disabled only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from onnxlint.profiles import Profile, RequantizedConstantFailure

if TYPE_CHECKING:
    from onnxlint.analyses.level_graph import LevelGraph
    from onnxlint.index import GraphRef, NodeRef

__all__ = ["RequantizedMatch", "match_node", "requantized_failure_ops"]

#: the domains onnxruntime.quantization writes QuantizeLinear/DequantizeLinear in
_QDQ_DOMAINS = frozenset({"ai.onnx", "com.microsoft"})
#: ops without inputs whose output is not a constant (each run draws new values)
_RANDOM_OPS = frozenset({"RandomNormal", "RandomUniform"})


@dataclass(frozen=True)
class RequantizedMatch:
    """One node that meets an entry of the profile's ``requantized_constant_failures``."""

    failure: RequantizedConstantFailure
    #: the input slot fed by the requantized constant
    slot: int
    #: the QuantizeLinear of the constant, and the constant it quantizes
    quantize: NodeRef
    constant: str
    #: the element type the constant is quantized to
    dtype: str
    #: the op that computes the constant from constants; None for an initializer or Constant
    computed_by: str | None = None
    #: whether a DequantizeLinear is among the nodes that compute it (ORT does not fold it)
    dequantized: bool = False

    def describe(self) -> str:
        """Why the node fails, with the arrangement that makes it fail."""
        head = (
            f"{self.failure.reason}: input {self.slot} is dequantized from "
            f"{self.quantize.label}, a {self.dtype} QuantizeLinear of the constant "
            f"'{self.constant}'"
        )
        if self.computed_by is None:
            return (
                f"{head} (ORT's constant folding, on at the default optimization level, "
                "quantizes it ahead of time)"
            )
        if self.dequantized:
            return (
                f"{head}, which a {self.computed_by} computes from a DequantizeLinear of "
                "constants (ORT's constant folding leaves DequantizeLinear nodes to the EP, "
                "so the arrangement stays at every optimization level)"
            )
        return (
            f"{head}, which a {self.computed_by} computes from constants (ORT's constant "
            "folding, on at the default optimization level, quantizes it ahead of time)"
        )


def requantized_failure_ops(profile: Profile) -> frozenset[str]:
    """The op types the profile's entries are about (cheap pre-filter)."""
    return frozenset(f.op for f in profile.requantized_constant_failures)


def _qdq(node: NodeRef | None, op: str) -> bool:
    return node is not None and node.op_type == op and node.domain in _QDQ_DOMAINS


def _quantized_type(lg: LevelGraph, g: GraphRef, q: NodeRef) -> str | None:
    """The element type ``q`` quantizes to: its output's type, else its zero point's
    (ONNX inference knows no com.microsoft schema), else uint8 (the default)."""
    got = lg.value_type(g, q.outputs[0]).dtype if q.outputs else None
    if got is None and len(q.inputs) > 2 and q.inputs[2]:
        got = lg.value_type(g, q.inputs[2]).dtype
    if got is None and (len(q.inputs) < 3 or not q.inputs[2]):
        got = "uint8"
    return got


def _dequantized_from(g: GraphRef, name: str) -> NodeRef | None:
    """The QuantizeLinear whose DequantizeLinear computes ``name``, or None."""
    dq = g.producers.get(name)
    if not _qdq(dq, "DequantizeLinear") or dq is None or not dq.inputs:
        return None
    q = g.producers.get(dq.inputs[0])
    return q if _qdq(q, "QuantizeLinear") and q is not None and q.inputs else None


def _constant_producers(lg: LevelGraph, g: GraphRef, name: str) -> list[NodeRef] | None:
    """The nodes that compute ``name`` from initializers and Constant nodes alone (empty
    for an initializer or Constant), or None when a graph input or a random op feeds it."""
    seen: set[str] = set()
    nodes: list[NodeRef] = []
    stack = [name]
    while stack:
        t = stack.pop()
        if not t or t in seen or lg.is_initializer(g, t):
            continue
        seen.add(t)
        p = g.producers.get(t)
        if p is None or p.op_type in _RANDOM_OPS:
            return None  # a graph input, a value from an outer graph, or new on every run
        nodes.append(p)
        stack.extend(p.inputs)
    return nodes


def _constant_derived(lg: LevelGraph, g: GraphRef, name: str) -> bool:
    """Whether ``name`` is computed from initializers and Constant nodes alone."""
    return _constant_producers(lg, g, name) is not None


def _activation_ok(
    lg: LevelGraph, g: GraphRef, names: Iterable[str], failure: RequantizedConstantFailure
) -> bool:
    """Whether one of ``names`` is dequantized from a QuantizeLinear of a computed tensor of
    the entry's types (and, when it lists producers, computed by one of them)."""
    for name in names:
        q = _dequantized_from(g, name) if name else None
        if q is None or _quantized_type(lg, g, q) not in failure.quantized_types:
            continue
        x = q.inputs[0]
        if _constant_derived(lg, g, x):
            continue
        producer = g.producers.get(x)
        if failure.activation_producers and (
            producer is None or producer.op_type not in failure.activation_producers
        ):
            continue
        if failure.activation_producer_computed and (
            producer is None or any(_constant_derived(lg, g, i) for i in producer.inputs if i)
        ):
            continue
        return True
    return False


def _dequantized_from_types(
    lg: LevelGraph, g: GraphRef, computed: list[NodeRef], types: frozenset[str]
) -> bool:
    """Whether a DequantizeLinear among ``computed`` reads an initializer of ``types``."""
    return bool(types) and any(
        _qdq(n, "DequantizeLinear")
        and n.inputs
        and lg.is_initializer(g, n.inputs[0])
        and lg.value_type(g, n.inputs[0]).dtype in types
        for n in computed
    )


def _stored_constant(lg: LevelGraph, g: GraphRef, name: str) -> bool:
    """Whether ``name`` is an initializer or a Constant node's output."""
    source = g.producers.get(name)
    return source.op_type == "Constant" if source is not None else lg.is_initializer(g, name)


#: the largest constant whose values are read to tell whether they are all equal
UNIFORM_MAX_ELEMENTS = 1 << 20


def _uniform(g: GraphRef, name: str) -> bool:
    """Whether ``name`` is an initializer of this graph whose values are all equal (the EP
    takes such a constant per tensor)."""
    tensor = g.initializers.get(name)
    if tensor is None:
        return False
    from onnxlint.tensors import inline_array

    # stored in the model and of a size worth decoding; external data is never opened
    values = inline_array(tensor, max_elements=UNIFORM_MAX_ELEMENTS)
    if values is None:
        return False  # not known to be uniform
    return values.size > 0 and bool((values == values.flat[0]).all())


def _constant_operand_fits(
    lg: LevelGraph, g: GraphRef, node: NodeRef, names: Iterable[str], axis: int
) -> bool:
    """Whether one of ``names`` is a constant (an initializer, a Constant, or a
    DequantizeLinear of one) whose shape, aligned to ``node``'s output rank, has a dimension
    above 1 at ``axis`` and at no other, and whose values are not all equal (a per-channel
    constant on that axis)."""
    out = lg.value_type(g, node.outputs[0]).shape if node.outputs and node.outputs[0] else None
    if out is None:
        return False
    for name in names:
        if not name:
            continue
        source = g.producers.get(name)
        stored = name
        if _qdq(source, "DequantizeLinear") and source is not None and source.inputs:
            stored = source.inputs[0]
        if not _stored_constant(lg, g, stored) or _uniform(g, stored):
            continue
        shape = lg.value_type(g, name).shape
        if shape is None or len(shape) > len(out):
            continue
        aligned = (1,) * (len(out) - len(shape)) + tuple(shape)
        if any(not isinstance(d, int) for d in aligned):
            continue
        if [k for k, d in enumerate(aligned) if isinstance(d, int) and d > 1] == [axis]:
            return True
    return False


def _output_quantized_to(lg: LevelGraph, g: GraphRef, node: NodeRef) -> set[str]:
    """The element types the QuantizeLinear nodes reading ``node``'s output quantize to."""
    if not node.outputs or not node.outputs[0]:
        return set()
    return {
        t
        for c in g.consumers.get(node.outputs[0], [])
        if _qdq(c, "QuantizeLinear")
        for t in [_quantized_type(lg, g, c)]
        if t is not None
    }


def _rank_fits(constant: str, shape: tuple[object, ...] | None) -> bool:
    if constant == "any":
        return True
    if shape is None:
        return False  # an unknown rank is not predicted
    return (len(shape) == 0) is (constant == "scalar")


def _channel_broadcast(lg: LevelGraph, g: GraphRef, node: NodeRef, others: list[str]) -> bool:
    """Whether an input of ``others`` has a static 1 where ``node``'s output has a static
    size above 1 on axis 1 (shapes aligned to the output's rank, as broadcasting does)."""
    out = lg.value_type(g, node.outputs[0]).shape if node.outputs else None
    if out is None or len(out) < 2 or not isinstance(out[1], int) or out[1] <= 1:
        return False
    for name in others:
        shape = lg.value_type(g, name).shape if name else None
        if shape is None or len(shape) > len(out):
            continue
        aligned = (1,) * (len(out) - len(shape)) + tuple(shape)
        if aligned[1] == 1:
            return True
    return False


def match_node(lg: LevelGraph, node: NodeRef, profile: Profile) -> RequantizedMatch | None:
    """The first entry of ``profile.requantized_constant_failures`` that ``node`` meets."""
    g = node.graph
    for failure in profile.requantized_constant_failures:
        if node.op_type != failure.op or node.domain != failure.domain:
            continue
        if failure.except_consumers:
            consumers = [c for o in node.outputs if o for c in g.consumers.get(o, [])]
            if consumers and all(c.op_type in failure.except_consumers for c in consumers):
                continue
        for slot in failure.inputs:
            if slot >= len(node.inputs) or not node.inputs[slot]:
                continue
            q = _dequantized_from(g, node.inputs[slot])
            if q is None:
                continue
            if failure.except_shared_dequantize and len(g.consumers.get(node.inputs[slot], [])) > 1:
                continue
            computed: list[NodeRef] | None = []
            if not lg.is_initializer(g, q.inputs[0]):
                computed = (
                    _constant_producers(lg, g, q.inputs[0]) if failure.computed_constants else None
                )
                if not computed or _dequantized_from_types(
                    lg, g, computed, failure.except_dequantized_from
                ):
                    continue
            dtype = _quantized_type(lg, g, q)
            if dtype is None or dtype not in failure.quantized_types:
                continue
            if lg.value_type(g, q.inputs[0]).dtype not in (None, "float", "float16"):
                continue
            if not _rank_fits(failure.constant, lg.value_type(g, q.inputs[0]).shape):
                continue
            others = [n for k, n in enumerate(node.inputs) if k != slot]
            if failure.activation_input and not _activation_ok(lg, g, others, failure):
                continue
            if failure.except_channel_broadcast and _channel_broadcast(lg, g, node, others):
                continue
            if failure.constant_operand_axis is not None and not _constant_operand_fits(
                lg, g, node, others, failure.constant_operand_axis
            ):
                continue
            if failure.except_output_types and (
                _output_quantized_to(lg, g, node) & failure.except_output_types
            ):
                continue
            return RequantizedMatch(
                failure,
                slot,
                q,
                q.inputs[0],
                dtype,
                computed_by=computed[0].op_type if computed else None,
                dequantized=any(_qdq(n, "DequantizeLinear") for n in computed or ()),
            )
    return None
