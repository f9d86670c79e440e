"""Layout-pass rule (OL512): a node the EP claims, and refuses once ORT rewrites it to its layout.

An NHWC EP (QNN) answers ORT's first capability query for layout-sensitive ops such as
Conv without building them; ORT then rewrites the claimed nodes to the EP's layout and
asks again, and only this second pass builds each node. A node refused there has no EP
left, and session creation fails. The conditions are the profile's
``partitioning.layout_pass_failures``; the partition plan marks the nodes that meet them
(:attr:`onnxlint.analyses.partition.PartitionPlan.layout_failures`).
"""

from __future__ import annotations

from dataclasses import replace

from onnxlint.analyses.assignment import CPU_EP
from onnxlint.analyses.partition import Partitions, short_ep
from onnxlint.context import LintContext
from onnxlint.diagnostics import Category, Fix, Severity
from onnxlint.rule import Rule, register
from onnxlint.rules.partition import _location


@register
class EpRefusedAfterLayoutTransform(Rule):
    """The execution provider claims this node, refuses it after ORT's layout transform, and the session fails.

    What it does:
        For EPs whose profile lists ``partitioning.layout_pass_failures`` (QNN HTP: Conv),
        reports the nodes the predicted partitions give the EP that meet one of the listed
        conditions: a QDQ Conv whose bias is computed by a node at run time (an
        ``Identity`` of the bias DequantizeLinear, as exporters write for shared biases), or
        a Conv whose output has a zero-sized dimension. Both graph levels are checked: the
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

    Execution providers:
        QNN (HTP backend), measured.
    """

    code = "OL512"
    status = "preview"
    since = "0.2.0"
    name = "ep-refused-after-layout-transform"
    category = Category.EP_SUPPORT
    severity = Severity.ERROR
    messages = {
        "default": "{reason}; {node} makes session creation fail on {accel} (on the {level} graph)",
    }
    example_eps = ("qnn",)
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
        if not any(p.partitioning.layout_pass_failures for p in ctx.eps):
            return
        reported: set[str] = set()
        for plan in ctx.analysis(Partitions).plans():
            if plan.graph is None:
                continue
            for path, reason in plan.layout_failures.items():
                ep = plan.node_ep.get(path)
                if ep is None or ep == CPU_EP:
                    continue
                loc, label = _location(ctx, plan, path)
                key = f"{ep}|{label}"
                if key in reported:
                    continue  # the same node on both levels: once, on the first
                reported.add(key)
                d = self.make(
                    loc,
                    ep=ep,
                    fix=Fix(
                        title="fold the computed bias into the QDQ unit, or give the input the kernel size"
                    ),
                    reason=reason,
                    node=label,
                    accel=short_ep(ep),
                    level=plan.level,
                )
                ctx.emit(replace(d, graph_level=plan.level))
