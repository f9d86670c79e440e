"""The immutable model of an EP capability profile: :class:`Profile` and the records it
holds (op support, constraints, partitioning facts, provenance), and the errors a profile
that cannot be found, parsed or validated raises."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Effect = Literal["refuse", "fails_after_claim"]
Consequence = Literal["cpu_fallback", "session_fails"]


class ProfileError(Exception):
    """A profile could not be found, parsed or validated.

    ``errors`` holds one line per problem, each starting with the JSON path of
    the offending value (``ops[12].versions[0].from: 'x' is not of type 'integer'``).
    """

    def __init__(self, source: str, errors: Iterable[str]) -> None:
        self.source = source
        self.errors: tuple[str, ...] = tuple(errors)
        lines = "\n".join(f"  {e}" for e in self.errors)
        super().__init__(f"invalid EP profile {source}:\n{lines}" if lines else source)


class UnknownProfileError(ProfileError):
    """No shipped profile answers to the given EP name or alias."""

    def __init__(self, name: str, known: Iterable[str]) -> None:
        self.name = name
        self.known = tuple(known)
        msg = f"unknown execution provider {name!r} (known: {', '.join(self.known)})"
        self.source = name
        self.errors = (msg,)
        Exception.__init__(self, msg)


@dataclass(frozen=True)
class Provenance:
    """Where a group of facts came from (an upstream file, a runtime query, a measurement)."""

    id: str
    kind: str
    repository: str | None = None
    file: str | None = None
    version: str | None = None
    commit: str | None = None
    date: str | None = None
    packages: Mapping[str, str] = field(default_factory=dict, hash=False, compare=False)
    tool: str | None = None
    note: str | None = None

    def describe(self) -> str:
        """One line a reviewer can follow back to the source."""
        parts: list[str] = []
        if self.kind == "measured":
            parts.append("measured with onnxlint probe")
        if self.repository:
            parts.append(self.repository)
        if self.file:
            parts.append(self.file)
        if self.version:
            parts.append(self.version)
        if self.commit:
            parts.append(f"@{self.commit[:10]}")
        if self.packages:
            parts.append(", ".join(f"{k} {v}" for k, v in sorted(self.packages.items())))
        if self.date:
            parts.append(self.date)
        return " ".join(parts) if parts else self.id


@dataclass(frozen=True)
class Constraint:
    """One declarative condition a node must meet (see the schema for the kinds)."""

    kind: str
    reason: str
    effect: Effect = "refuse"
    provenance: str | None = None
    inputs: tuple[int, ...] | None = None
    outputs: tuple[int, ...] | None = None
    value: int | None = None
    name: str | None = None
    allowed: tuple[Any, ...] | None = None
    forbidden: tuple[Any, ...] | None = None
    absent: bool = False
    default: Any = None
    graph_nodes_at_most: int | None = None
    except_ops: frozenset[str] = frozenset()
    skip_constant_inputs: bool = False
    graph_inputs_only: bool = False
    #: ``no_zero_dims``: a zero-sized dimension counts only while another checked slot
    #: holds elements (the EP takes the node when every checked slot is empty)
    only_beside_elements: bool = False
    #: the constraint applies only while this input is absent or holds no element
    when_input_empty: int | None = None
    #: ``multiple_of``: the attribute whose value must divide
    divisor: str | None = None
    #: ``multiple_of`` with ``inputs``: the attribute that names the input's axis
    axis_attribute: str | None = None
    #: the constraint does not apply when every one of these input slots is known before
    #: the run (``NodeFacts.known_inputs``, or a constant): the EP folds the node
    unless_inputs_known: tuple[int, ...] | None = None

    def op_excluded(self, op_type: str) -> bool:
        return op_type in self.except_ops


@dataclass(frozen=True)
class OpRange:
    """Supported operator revisions ``first..last`` (inclusive; ``last`` None = open)."""

    first: int
    last: int | None = None
    types: Mapping[str, frozenset[str]] = field(default_factory=dict, hash=False, compare=False)
    constraints: tuple[Constraint, ...] = ()

    def covers(self, revision: int) -> bool:
        return revision >= self.first and (self.last is None or revision <= self.last)

    def label(self) -> str:
        if self.last is None:
            return f"{self.first}+"
        if self.last == self.first:
            return str(self.first)
        return f"{self.first}-{self.last}"


@dataclass(frozen=True)
class OpSupport:
    """What the EP claims for one (domain, op type)."""

    domain: str
    op: str
    ranges: tuple[OpRange, ...] | None
    types: Mapping[str, frozenset[str]] = field(default_factory=dict, hash=False, compare=False)
    constraints: tuple[Constraint, ...] = ()
    provenance: str = ""
    note: str | None = None
    index: int = 0
    graph_io_types: Mapping[str, frozenset[str]] = field(
        default_factory=dict, hash=False, compare=False
    )  # position in the profile's ``ops`` array, for JSON paths

    def range_for(self, revision: int) -> OpRange | None:
        if self.ranges is None:
            return OpRange(first=1)
        for r in self.ranges:
            if r.covers(revision):
                return r
        return None


@dataclass(frozen=True)
class OpsetLimit:
    min: int | None = None
    max: int | None = None
    #: why a model above ``max`` is refused (below ``min`` too, unless ``min_reason`` says)
    reason: str | None = None
    provenance: str | None = None
    min_reason: str | None = None
    min_provenance: str | None = None

    def refusal(self, opset: int) -> tuple[str | None, str | None] | None:
        """(reason, provenance) when a model importing ``opset`` is outside the limit."""
        if self.min is not None and opset < self.min:
            return self.min_reason or self.reason, self.min_provenance or self.provenance
        if self.max is not None and opset > self.max:
            return self.reason, self.provenance
        return None


@dataclass(frozen=True)
class TensorDtypes:
    """Element types accepted on every input/output of every claimed node."""

    allowed: frozenset[str]
    allowed_constant: frozenset[str] | None
    reason: str
    provenance: str | None = None
    forbidden_on_graph_io: frozenset[str] = frozenset()
    fails_on_graph_io: frozenset[str] = frozenset()


@dataclass(frozen=True)
class RankLosingOp:
    """An operator revision whose outputs reach the EP's next subgraph without a rank."""

    op: str
    domain: str
    since_version: int
    reason: str
    provenance: str | None = None


@dataclass(frozen=True)
class RefusedQdqUnit:
    """A QDQ node unit the EP refuses whole: target ``op`` whose DQ on each slot of
    ``input_types`` dequantizes one of the listed element types. With ``accepted_types``
    (a table of the type combinations the EP takes), only a unit that matches none of its
    rows is refused; there a slot's type is what its DQ dequantizes, or the element type
    of the tensor itself when no DQ of the unit feeds it. With ``per_axis_scale``, only a
    unit whose target's scale (input 1) has more than one element (per-axis or blocked
    quantization) is refused; an unknown scale shape never refuses. With
    ``per_axis_zero_points`` (slot, then per dequantized type the one zero point the EP
    takes), only a unit whose DequantizeLinear at that slot quantizes per axis with a zero
    point other than its type's value is refused; a type not listed, or a zero point that
    is not a known constant, never refuses."""

    op: str
    input_types: Mapping[int, frozenset[str]] = field(hash=False, compare=False)
    reason: str = ""
    provenance: str | None = None
    accepted_types: tuple[Mapping[int, frozenset[str]], ...] = field(
        default=(), hash=False, compare=False
    )
    per_axis_scale: bool = False
    per_axis_zero_points: tuple[int, Mapping[str, int]] | None = field(
        default=None, hash=False, compare=False
    )


@dataclass(frozen=True)
class QdqSelector:
    """How the EP forms a QDQ node unit around one of ``ops`` (its own copy of ORT's
    node-group selectors). The DequantizeLinear inputs are every input a DQ feeds;
    ``dq_inputs`` says how many there must be: ``"all"`` (every input slot the node has),
    a number, or a range ``"a-b"``. The QuantizeLinear outputs: each output read once,
    by a QuantizeLinear, and no graph output (``empty_q``: or no QuantizeLinear at all;
    ``check_q`` false: not checked). ``same_types``: groups of ``dN``/``qN`` references
    (the Nth DQ's quantized type, the Nth Q's output type; ``d*``/``q*`` all of them) that
    must be equal. ``int32_bias``: a third DQ must dequantize int32. ``same_scale``: the
    Q and the DQ share their scale. ``clip``: a Relu or Clip that alone reads the node's
    only output joins the unit (the EP looks for the Qs after it); without, such a
    Relu/Clip stops the unit from forming. ``data_dq``: input 0 must come from a DQ of the
    unit when there are Qs (Clip)."""

    ops: tuple[str, ...]
    dq_inputs: str
    empty_q: bool = False
    check_q: bool = True
    same_types: tuple[tuple[str, ...], ...] = ()
    int32_bias: bool = False
    same_scale: bool = False
    clip: bool = True
    data_dq: bool = False
    #: with Qs required: no unit without them (MatMul)
    needs_q: bool = False
    #: the ops' schema versions the selector takes (empty: every one)
    since_versions: tuple[int, ...] = ()


@dataclass(frozen=True)
class LayoutPassFailure:
    """A layout-sensitive op the EP claims before ORT's layout transform without validating
    it, and then refuses once rewritten to its layout: session creation fails.

    ``condition`` is ``"zero_sized_output"`` (an output has a dimension of 0),
    ``"computed_bias_in_qdq_unit"`` (the op is the target of a QDQ unit and input ``slot``
    is computed by a node that is not a DequantizeLinear) or ``"integer_input"`` (input
    ``slot``, 0 by default, has an integer element type: a quantized tensor outside any
    QDQ unit, whose quantization the EP does not know) or ``"channel_mismatch"`` (input 0's
    dim 1, known, differs from the weight's dim 1 times ``group``: the input has another
    number of channels than the weight takes) or ``"reshaped_input_in_qdq_unit"`` (the op
    is the target of a QDQ unit whose DequantizeLinear at input ``slot``, 0 by default,
    reads a Reshape's output) or ``"qdq_unit_types"`` (the op is the target of a QDQ unit
    whose types match a row of ``unit_types``: per input slot, the element types its
    DequantizeLinear may dequantize; an unknown type never matches)."""

    op: str
    condition: str
    reason: str
    slot: int | None = None
    provenance: str | None = None
    unit_types: tuple[Mapping[int, frozenset[str]], ...] = field(
        default=(), hash=False, compare=False
    )


@dataclass(frozen=True)
class ChainLink:
    """One node of a :class:`FinalizeFailure` chain: its op and, optionally, the value of a
    one-element constant input it must have and the input slot through which the previous
    link feeds it (``fed_at``; any slot when None). ``axis_outside_slice``: the node's
    ``axis`` is none of the axes the previous link, a Slice with constant axes, slices.
    ``squeezes_dynamic_dims``: the node, a Squeeze with no axes, reads a tensor with a dim
    that is not a known number (its output's rank is only known at run time).
    ``per_axis_scale``: the node's scale (input 1) is known to have more than one element.
    ``coords_unresolved``: the node's first input (NonMaxSuppression's boxes) has a last dim
    that is not a known number and is computed, within the partition, from a tensor made
    outside it or from a graph input whose dims or values are not all known."""

    op: str
    constant: float | None = None
    fed_at: int | None = None
    axis_outside_slice: bool = False
    squeezes_dynamic_dims: bool = False
    per_axis_scale: bool = False
    coords_unresolved: bool = False


@dataclass(frozen=True)
class FinalizeFailure:
    """A chain of nodes (each feeding the next) that the EP claims and then fails to
    compile when all of them fall in one of its partitions: session creation fails."""

    chain: tuple[ChainLink, ...]
    reason: str
    provenance: str | None = None


@dataclass(frozen=True)
class BoundaryTensorFailure:
    """A tensor of ``dtype`` and ``rank`` entering (``direction`` "input") or leaving
    ("output") one of the EP's partitions, which the EP then fails to compile; "through":
    a node that reads a tensor entering the partition writes one of ``dtype`` leaving it.
    ``rank`` None: any rank; ``op``: only where the node at the boundary is that op."""

    dtype: str
    rank: int | None
    direction: str
    reason: str
    provenance: str | None = None
    op: str | None = None


@dataclass(frozen=True)
class RequantizedConstantFailure:
    """A QDQ arrangement the EP claims and then fails to compile: a QuantizeLinear of a float
    constant, quantized to one of ``quantized_types``, whose DequantizeLinear feeds one of
    the ``inputs`` of ``op`` (the schema's ``requantized_constant_failures``)."""

    op: str
    domain: str = "ai.onnx"
    inputs: tuple[int, ...] = ()
    quantized_types: frozenset[str] = frozenset()
    #: "any", "scalar" or "non_scalar": the rank of the quantized constant
    constant: str = "any"
    #: the constant may also be computed from constants alone (an Identity or a
    #: DequantizeLinear of a quantized initializer, a float subgraph), not only be one
    computed_constants: bool = False
    #: another input must be a DequantizeLinear of a QuantizeLinear of a computed tensor
    activation_input: bool = False
    #: ops that must compute that tensor; empty = any
    activation_producers: frozenset[str] = frozenset()
    #: that op's inputs must all be computed (no constant, no quantized weight)
    activation_producer_computed: bool = False
    #: a node whose every consumer is one of these loads
    except_consumers: frozenset[str] = frozenset()
    #: a computed constant dequantized from an initializer of one of these element types
    #: loads (a DequantizeLinear among the nodes that compute it reads one)
    except_dequantized_from: frozenset[str] = frozenset()
    #: a constant whose DequantizeLinear feeds another node too loads
    except_shared_dequantize: bool = False
    #: a node whose activation input is broadcast along axis 1 of the output (its dim
    #: there 1, the output's above 1: OpenVINO's channel axis) loads
    except_channel_broadcast: bool = False
    #: another input must be a constant (an initializer, a Constant, or a DequantizeLinear
    #: of one) that varies along this axis of the node's output and no other
    constant_operand_axis: int | None = None
    #: a node whose output a QuantizeLinear to one of these element types reads loads
    except_output_types: frozenset[str] = frozenset()
    reason: str = ""
    provenance: str | None = None


@dataclass(frozen=True)
class LayoutReshapeRewrite:
    """ORT's transpose optimizer gives the EP's Reshapes a constant shape after the layout
    transform (``onnxlint.analyses.layout_rewrites``): the EP groups its nodes across the
    Shape that computed it, and compiles the Gather ORT adds after a Shape that then feeds
    nothing as a graph of its own, which fails when that graph has no output.
    ``extra_layout_ops``: ops the EP converts to its layout besides ORT's list."""

    extra_layout_ops: frozenset[str] = frozenset()
    orphan_reason: str = ""
    provenance: str | None = None


@dataclass(frozen=True)
class LayoutConstantRewrite:
    """ORT's layout transform rewrites an initializer shared with other readers in place
    and gives them a Squeeze/Transpose of it (``onnxlint.analyses.layout_constants``); the
    EP takes those, and a group of them alone has no input, which fails (``reason``)."""

    reason: str
    provenance: str | None = None


@dataclass(frozen=True)
class LayoutGatherCrash:
    """ORT's layout pass for the EP aborts the process on a Gather of rank-1 data with
    indices of rank 2 or more that a node the EP converts to its layout feeds and that
    feeds a Transpose (``reason``)."""

    reason: str
    provenance: str | None = None


@dataclass(frozen=True)
class IntegerTensorRule:
    """How the EP adds an 8-bit tensor outside QDQ node units, and the nodes it then fails
    to add (``onnxlint.analyses.integer_tensors``): ``quantizing_ops`` write it with a
    quantization (and a QuantizeLinear the EP builds), ``plain_ops`` as a plain integer
    tensor, except ``carries_quantization`` of a quantized input; a DequantizeLinear of a
    plain one and ``refused_on_quantized_input`` of a quantized one are refused."""

    quantizing_ops: frozenset[str]
    plain_ops: frozenset[str]
    carries_quantization: frozenset[str]
    refused_on_quantized_input: frozenset[str]
    dequantize_reason: str
    quantized_input_reason: str
    provenance: str | None = None
    #: op -> input slots the EP adds as a weight of its own form (MatMulNBits' packed weight)
    weight_ops: Mapping[str, tuple[int, ...]] = field(
        default_factory=dict, hash=False, compare=False
    )
    weight_reason: str = ""
    weight_provenance: str | None = None
    #: why the EP fails to add every node of a QDQ unit whose DequantizeLinear reads the
    #: plain output of a ``refused_on_quantized_input`` node it refused ("" where not known)
    unit_reason: str = ""
    unit_provenance: str | None = None
    #: ai.onnx op -> input slots the EP adds in its own layout (a Conv's weight): it fails
    #: to add another op of the graph that reads the same initializer
    layout_weight_ops: Mapping[str, tuple[int, ...]] = field(
        default_factory=dict, hash=False, compare=False
    )
    layout_weight_reason: str = ""
    layout_weight_provenance: str | None = None


@dataclass(frozen=True)
class EmptyInputFailure:
    """The EP claims a node that reads a tensor with a zero-sized dimension and then fails
    to build its graph (session creation fails); ``except_ops`` build such nodes.
    ``first_input_reason``: why a partition fails whose first input (in ORT's order) is an
    empty tensor only ``except_ops`` read (they skip it; None: no such failure)."""

    reason: str
    except_ops: frozenset[str] = frozenset()
    first_input_reason: str | None = None
    provenance: str | None = None


@dataclass(frozen=True)
class Partitioning:
    #: "greedy" (connected groups of claimed nodes) or "clusters" (cut in ORT's order)
    grouping: str = "greedy"
    #: with "clusters": supported ops that always cut the cluster they sit in
    cluster_breakers: frozenset[str] = frozenset()
    min_partition_nodes: int = 1
    drop_single_op_partitions: tuple[str, ...] = ()
    drop_if_output_used_outside: tuple[str, ...] = ()
    constant_only_partition_fails: bool = False
    unknown_rank_input_fails: bool = False
    rank_losing_ops: tuple[RankLosingOp, ...] = ()
    cyclic_partition_fails: bool = False
    claimed_body_partition_fails: tuple[str, ...] = ()
    bodies_compiled_with_node: tuple[str, ...] = ()
    #: the last cluster is kept below min_partition_nodes
    keeps_last_small_cluster: bool = False
    refused_qdq_units: tuple[RefusedQdqUnit, ...] = ()
    #: the EP's own QDQ node-group selectors (empty: ORT's, simplified, in partition_units)
    qdq_selectors: tuple[QdqSelector, ...] = ()
    #: when ORT partitions again after inlining function ops no EP claimed, the EP's new
    #: clusters also take supported nodes already assigned to the CPU, and ORT refuses
    #: such a cluster whole (OpenVINO)
    late_pass_takes_assigned: bool = False
    #: (op, why) for the control-flow ops the EP refuses when a body reads an initializer
    #: of an enclosing graph
    refuses_captured_initializers: tuple[tuple[str, str], ...] = ()
    #: (op, why) for the control-flow ops the EP refuses when it does not take every node
    #: of their bodies (it builds the bodies with the node)
    refuses_unsupported_bodies: tuple[tuple[str, str], ...] = ()
    layout_pass_failures: tuple[LayoutPassFailure, ...] = ()
    finalize_failures: tuple[FinalizeFailure, ...] = ()
    boundary_tensor_failures: tuple[BoundaryTensorFailure, ...] = ()
    #: the EP groups its nodes blind to values If/Loop bodies capture, and ORT refuses its
    #: whole answer for a graph when a group is then not fusable
    grouping_ignores_captured_inputs: bool = False
    #: the EP's Reshapes get a constant shape in ORT's layout pass (None: not this EP)
    layout_reshape_rewrite: LayoutReshapeRewrite | None = None
    #: a constant-only graph of the Squeeze/Transpose ORT's layout transform gives the
    #: readers of a shared initializer fails (None: not this EP)
    layout_constant_rewrite: LayoutConstantRewrite | None = None
    #: a rank-1 Gather between a layout node and a Transpose aborts (None: not this EP)
    layout_gather_crash: LayoutGatherCrash | None = None
    #: 8-bit tensors outside QDQ units: which nodes the EP fails to add (None: not known)
    integer_tensor_registration: IntegerTensorRule | None = None
    #: claimed nodes reading an empty tensor fail the session (None: not known to)
    empty_input_failure: EmptyInputFailure | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Profile:
    """A validated, immutable EP capability profile."""

    id: str
    ep: str
    display_name: str
    variant: Mapping[str, Any] = field(hash=False, compare=False)
    aliases: tuple[str, ...]
    describes: Mapping[str, str] = field(hash=False, compare=False)
    provenance: Mapping[str, Provenance] = field(hash=False, compare=False)
    kind: str
    requires_static_shapes: bool
    requires_static_control_flow: bool
    device_memory: str
    cpu_preferred_shape_nodes: bool
    layout: str
    opsets: Mapping[str, OpsetLimit] = field(hash=False, compare=False)
    unlisted_ops: str
    domains: frozenset[str]
    partitioning: Partitioning
    tensor_dtypes: TensorDtypes | None
    global_constraints: tuple[Constraint, ...]
    notes: tuple[str, ...]
    ops: Mapping[tuple[str, str], OpSupport] = field(hash=False, compare=False)
    source: str = ""
    #: a DequantizeLinear of constants counts as a constant input (quantized weights)
    dequantized_constants: bool = False
    #: the ORT release the EP ships in, when it is its own ORT package (``runtime_onnxruntime``)
    runtime_onnxruntime: str | None = None
    #: cause ("dynamic_shapes", "control_flow") -> "cpu_fallback" | "session_fails"
    refusal_consequence: Mapping[str, Consequence] = field(
        default_factory=dict, hash=False, compare=False
    )
    #: QDQ arrangements claimed and then failing to compile (``requantized_constant_failures``)
    requantized_constant_failures: tuple[RequantizedConstantFailure, ...] = ()
    #: node patterns the EP fuses and claims (``fusions``: "erf_gelu", ...)
    fusions: frozenset[str] = frozenset()
    #: op -> output slots its kernel leaves in CPU memory (``kernel_memory.cpu_outputs``)
    kernel_cpu_outputs: Mapping[str, tuple[int, ...]] = field(
        default_factory=dict, hash=False, compare=False
    )
    #: op -> input slots its kernel reads from CPU memory (``kernel_memory.cpu_inputs``)
    kernel_cpu_inputs: Mapping[str, tuple[int, ...]] = field(
        default_factory=dict, hash=False, compare=False
    )

    def refusal_fails(self, cause: str) -> bool:
        """Whether a session fails (rather than falls back to CPU) when this EP refuses nodes
        for ``cause``; a cause the profile does not state falls back, as ORT partitions."""
        return self.refusal_consequence.get(cause, "cpu_fallback") == "session_fails"

    @functools.cached_property
    def label(self) -> str:
        """How messages name the EP: ``QNNExecutionProvider (HTP)`` (computed once: every
        verdict's message names it)."""
        parts = [str(v) for k, v in self.variant.items() if k in ("device", "format", "backend")]
        return f"{self.ep} ({', '.join(parts)})" if parts else self.ep

    def lookup(self, domain: str, op_type: str) -> OpSupport | None:
        return self.ops.get((_norm_domain(domain), op_type))

    def claims_domain(self, domain: str) -> bool:
        return _norm_domain(domain) in self.domains


def _norm_domain(domain: str) -> str:
    return "ai.onnx" if domain in ("", "ai.onnx") else domain
