"""Session-failure rules for what an EP claims and then cannot build (OL512, OL513).

OL512: an NHWC EP (QNN) answers ORT's first capability query for layout-sensitive ops
such as Conv without building them; ORT then rewrites the claimed nodes to the EP's
layout and asks again, and only this second pass builds each node. A node refused there
has no EP left. The conditions are the profile's ``partitioning.layout_pass_failures``.

OL513: a chain of claimed nodes the EP's backend fails to compile when the chain falls in
one partition (``partitioning.finalize_failures``).

The partition plan marks the nodes (:attr:`onnxlint.analyses.partition_plan.PartitionPlan.
layout_failures`, ``finalize_failures``); both rules read the plans of both graph levels.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from onnxlint.analyses.partition import Partitions
from onnxlint.analyses.partition_plan import PartitionPlan
from onnxlint.context import LintContext
from onnxlint.diagnostics import Category, Fix, Severity
from onnxlint.ep_names import CPU_EP, short_ep
from onnxlint.profiles.model import Partitioning
from onnxlint.rule import Rule, register
from onnxlint.rules.partition import _location


def _report_marked(
    rule: Rule,
    ctx: LintContext,
    wanted: Callable[[Partitioning], bool],
    marked: Callable[[PartitionPlan], dict[str, str]],
    fix: str,
    marked_for_ep: Callable[[PartitionPlan], dict[str, tuple[str, str]]] | None = None,
) -> None:
    """Emit ``rule`` once per node the plans of both levels mark, on the first level.
    ``marked_for_ep``: nodes marked with the EP that fails, whichever EP runs the node."""
    if not any(wanted(p.partitioning) for p in ctx.eps):
        return
    reported: set[str] = set()
    for plan in ctx.analysis(Partitions).plans():
        if plan.graph is None:
            continue
        items = [(path, plan.node_ep.get(path), reason) for path, reason in marked(plan).items()]
        if marked_for_ep is not None:
            items += [(path, ep, reason) for path, (ep, reason) in marked_for_ep(plan).items()]
        for path, ep, reason in items:
            if ep is None or ep == CPU_EP:
                continue
            loc, label = _location(ctx, plan, path)
            if f"{ep}|{label}" in reported:
                continue  # the same node on both levels: once, on the first
            reported.add(f"{ep}|{label}")
            d = rule.make(
                loc,
                ep=ep,
                fix=Fix(title=fix),
                reason=reason,
                node=label,
                accel=short_ep(ep),
                level=plan.level,
            )
            ctx.emit(replace(d, graph_level=plan.level))


class _SessionFailure(Rule):
    """What the rules of this module share: errors, preview, QNN examples."""

    status = "preview"
    since = "0.2.0"
    category = Category.EP_SUPPORT
    severity = Severity.ERROR
    messages = {
        "default": "{reason}; {node} makes session creation fail on {accel} (on the {level} graph)",
    }
    example_eps = ("qnn",)


@register
class EpRefusedAfterLayoutTransform(_SessionFailure):
    """The execution provider claims this node, refuses it after ORT's layout transform, and the session fails.

    What it does:
        For EPs whose profile lists ``partitioning.layout_pass_failures`` (QNN HTP: Conv,
        MaxPool), reports the nodes the predicted partitions give the EP that meet one of
        the listed conditions: a QDQ Conv whose bias is computed by a node at run time (an
        ``Identity`` of the bias DequantizeLinear, as exporters write for shared biases),
        a Conv whose output has a zero-sized dimension, a Conv whose input has another
        number of channels than its weight takes (a channel dim fixed to the wrong value),
        or a MaxPool of a uint8 or int8 tensor outside any QDQ unit (the QOperator
        format's MaxPool between QLinearConvs). Both graph levels are checked: the
        exported graph is what a session with optimizations disabled partitions, the
        level-1 graph what a default session partitions.

    Why it matters:
        QNN accepts a layout-sensitive node in its first capability pass without building
        it. ORT then rewrites the node to NHWC (``com.ms.internal.nhwc``) and asks again;
        this time QNN builds it, the HTP backend rejects it, and no EP is left for the
        rewritten node. Session creation fails ("... was inserted using the NHWC format as
        requested by QNNExecutionProvider, but was not selected by that EP"); there is no
        fallback to CPU.

    Fix:
        Fold the bias: remove the Identity between the bias DequantizeLinear and the Conv
        (ORT's level-1 optimizations do; ``onnxscript.optimizer`` too) or quantize the
        model again from a float model whose biases are initializers. For an empty output,
        give the input at least the kernel's length (fix the dims that make it shorter).
        For an integer MaxPool, quantize in the QDQ format, which wraps the MaxPool in
        DequantizeLinear and QuantizeLinear.

    Execution providers:
        QNN (HTP backend), measured.
    """

    code = "OL512"
    name = "ep-refused-after-layout-transform"
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,1,72] x) => (float[1,8,0] y) {
    w = Constant <value = float[8,1,256] {1.0}> ()
    r = Relu(x)
    y = Conv <strides = [128]> (r, w)
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,1,512] x) => (float[1,8,3] y) {
    w = Constant <value = float[8,1,256] {1.0}> ()
    r = Relu(x)
    y = Conv <strides = [128]> (r, w)
}
"""

    def check_model(self, ctx: LintContext) -> None:
        _report_marked(
            self,
            ctx,
            lambda part: bool(part.layout_pass_failures),
            lambda plan: plan.layout_failures,
            "fold the computed bias into the QDQ unit, or give the input the kernel size",
        )


#: OL513's two examples up to sqrt(mean(x^2) + eps): the bad one then multiplies by the
#: reciprocal, the good one divides
_RMS_NORM_HEAD = """\
<ir_version: 8, opset_import: ["" : 18]>
g (float[1,8,32] x) => (float[1,8,32] y) {
    two = Constant <value = float {2.0}> ()
    ax = Constant <value = int64[1] {-1}> ()
    eps = Constant <value = float {0.000001}> ()
    w = Constant <value = float[32] {1.0}> ()
    p = Pow(x, two)
    m = ReduceMean(p, ax)
    a = Add(m, eps)
    s = Sqrt(a)
"""


@register
class EpPartitionFailsToCompile(_SessionFailure):
    """The execution provider claims a chain of nodes whose partition its backend then fails to compile.

    What it does:
        For EPs whose profile lists ``partitioning.finalize_failures`` (QNN HTP: an RMSNorm
        written as ``Pow(x, 2)``, ``ReduceMean``, ``Add``, ``Sqrt``, ``Reciprocal``,
        ``Mul(x)``, ``Mul(weight)``, as the dynamo exporter writes ``torch.rsqrt``),
        reports the first node of each such chain that falls whole into one predicted
        partition of the EP, on either graph level (QNN HTP also: a DequantizeLinear with
        per-channel scales feeding a Conv's activation input, as NNCF writes it, which
        the backend cannot add: "Failed to compose Qnn graph"). From ``partitioning.
        boundary_tensor_failures`` (QNN HTP: int64 tensors of rank 5; an int64 Transpose
        that both reads the partition's input and writes its output) it also reports the
        node of a predicted partition that such a tensor enters or leaves. From
        ``partitioning.layout_reshape_rewrite`` (QNN HTP) it reports a Reshape that ORT's
        layout transform gives a constant shape when the CPU ``Shape`` that sized it is
        left feeding only the Gather ORT adds, alone in a QNN graph with no output, and
        from ``partitioning.empty_input_failure`` (QNN HTP) a node of a predicted partition
        that reads a computed tensor with a zero-sized dimension. From ``partitioning.
        layout_constant_rewrite`` (QNN HTP) it reports a node (on any EP) that shares an
        initializer with an elementwise op a channel ``Transpose`` is pushed through in
        ORT's layout transform: ORT rewrites the initializer in place and gives this node a
        ``Squeeze``/``Transpose`` of it, which QNN takes as a graph fed only by a constant
        when that pair joins none of its other groups ("Having zero graph inputs"). From
        ``partitioning.layout_gather_crash`` (QNN HTP) it reports a Gather of rank-1 data
        with indices of rank 2 or more that reads a Reshape of a Conv's output the EP takes
        and feeds a Transpose (the dynamo exporter's ``as_strided`` pooling): ORT's layout
        pass aborts the process.
        OpenVINO (CPU): a ``Transpose -> Slice -> GatherElements`` chain in one subgraph,
        the GatherElements along an axis the Slice does not slice (its plug-in checks the
        GatherElements against the Transpose's whole output; YOLO26's NMS-free pose head).

    Why it matters:
        Every node passes the EP's per-node validation, so nothing is refused and nothing
        falls back; the backend then fails to compile (finalize) the partition, and session
        creation fails (QNN: "Failed to finalize QNN graph ... QNN_COMMON_ERROR_MEM_ALLOC").
        QNN computes int64 as int32 and casts at the partition's boundary; a rank-5 int64
        output crashes the process (SIGSEGV) while finalizing, a rank-5 int64 input fails it,
        and the cast back after an int64 Transpose alone at the boundary cannot be added
        ("Failed to compose Qnn graph").

    Fix:
        Write the pattern in a form the backend compiles: for the RMSNorm, divide by the
        square root (``x / sqrt(mean(x^2) + eps)``) instead of multiplying by its
        reciprocal, or use ``RMSNormalization`` (opset 23) where the EP supports it. For a
        rank-5 int64 tensor, keep the int64 computation on CPU or give it rank 4 or less;
        for the int64 Transpose, keep it with its consumer on one side (transpose after
        the CPU node, or cast to int32 first). For a shared initializer, give the node its
        own copy (the exporter's zero biases are one initializer once ORT merges equal
        ones: make them differ, or fix the dynamic dimensions so that QNN takes the node).
        For the Gather, reshape the pooled tensor with a ``Reshape`` instead of gathering
        it (the TorchScript exporter writes no ``as_strided`` Gather there).

    Execution providers:
        QNN (HTP backend), OpenVINO (CPU), measured.
    """

    code = "OL513"
    name = "ep-partition-fails-to-compile"
    example_bad = (
        _RMS_NORM_HEAD
        + """\
    r = Reciprocal(s)
    q = Mul(x, r)
    y = Mul(w, q)
}
"""
    )
    example_good = (
        _RMS_NORM_HEAD
        + """\
    q = Div(x, s)
    y = Mul(w, q)
}
"""
    )

    def check_model(self, ctx: LintContext) -> None:
        _report_marked(
            self,
            ctx,
            lambda part: bool(part.finalize_failures) or part.layout_constant_rewrite is not None,
            lambda plan: plan.finalize_failures,
            "rewrite the pattern in a form the backend compiles (see the rule's docs)",
            lambda plan: plan.layout_constant_failures,
        )
