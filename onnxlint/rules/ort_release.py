"""Nodes an ONNX Runtime release refuses at load (OL208).

Some arrangements load in one ORT release and not in another; ``load_refusals`` in
``rules/ort_versions.json`` lists them with the releases measured. The release that
matters is the one each EP runs in (:func:`onnxlint.ort_versions.ep_ort_version`): the
release its package ships for an EP that comes as its own ORT (the profile's
``runtime_onnxruntime``: onnxruntime-openvino), else ``--target-ort`` or the installed ORT.
"""

from __future__ import annotations

from onnxlint.analyses.shapes import Shapes
from onnxlint.context import LintContext
from onnxlint.diagnostics import Category, Diagnostic, Fix, Severity
from onnxlint.index import DEFAULT_DOMAIN, NodeRef
from onnxlint.ort_versions import LoadRefusal, ep_ort_version, load_refusals, release
from onnxlint.rule import Rule, register
from onnxlint.tensors import inline_scalar_int


def _int_attr(node: NodeRef, name: str, default: int) -> int:
    a = node.attr(name)
    return int(a.i) if a is not None else default


def _static_dim(ctx: LintContext, name: str, axis: int) -> bool:
    """Whether dimension ``axis`` of ``name`` has a known value."""
    shape = ctx.analysis(Shapes).shape(name)
    if shape is None or not -len(shape) <= axis < len(shape):
        return False
    return isinstance(shape[axis], int)


def _gathered_from_shape(ctx: LintContext, node: NodeRef) -> bool:
    """Whether TopK ``node``'s K is ``Gather(Shape(t), [a])`` (the indices a constant of
    shape [1]) with dimension ``a`` of ``t`` and the TopK's own axis both static."""
    g = node.graph
    if len(node.inputs) < 2 or not node.inputs[1]:
        return False
    gather = g.producers.get(node.inputs[1])
    if gather is None or gather.op_type != "Gather" or gather.domain != DEFAULT_DOMAIN:
        return False
    if len(gather.inputs) < 2 or _int_attr(gather, "axis", 0) != 0:
        return False
    shape = g.producers.get(gather.inputs[0])
    if shape is None or shape.op_type != "Shape" or shape.domain != DEFAULT_DOMAIN:
        return False
    if shape.attr("start") is not None or shape.attr("end") is not None or not shape.inputs:
        return False  # not measured
    index = g.initializers.get(gather.inputs[1])
    const = g.producers.get(gather.inputs[1])
    if index is None and const is not None and const.op_type == "Constant":
        value = const.attr("value")
        index = value.t if value is not None and value.HasField("t") else None
    if index is None or list(index.dims) != [1]:
        return False
    gathered = inline_scalar_int(index)
    if gathered is None:
        return False  # external or undecodable: not known
    a = gathered
    axis = _int_attr(node, "axis", -1)
    return _static_dim(ctx, shape.inputs[0], a) and _static_dim(ctx, node.inputs[0], axis)


@register
class OrtReleaseRefusesNode(Rule):
    """The ONNX Runtime release the execution provider runs in refuses this node when it loads the model.

    What it does:
        Reports a node in an arrangement some ONNX Runtime releases refuse while they
        resolve the graph at load (``load_refusals`` in ``rules/ort_versions.json``, each
        with the releases measured and its provenance). The release is the one each
        execution provider runs in: for an EP whose package ships its own onnxruntime, that
        release (the profile's ``runtime_onnxruntime``; onnxruntime-openvino 1.24.1 ships
        onnxruntime 1.24); for any other, the one it is loaded into (``--target-ort``, else
        the installed onnxruntime). One arrangement is known: onnxruntime 1.24 refuses a TopK whose K is
        ``Gather(Shape(t), [a])`` when dimension ``a`` of ``t`` and the TopK's axis are
        static (its data propagation records the gathered dimension as a scalar, and
        TopK's shape inference wants K of shape [1]).

    Why it matters:
        The session fails at load, at every optimization level and on every EP of that
        release ("[ShapeInferenceError] K input must be a one-dimensional tensor of size
        1"); a newer release loads the same model.

    Fix:
        Compute K as ``Slice(Shape(t), [a], [a + 1])`` (the same one-element tensor, which
        that release loads), write it as a constant when the dimension is fixed, or use a
        release that loads it.

    Execution providers:
        Whichever run in a release the data lists: OpenVINO, whose package ships
        onnxruntime 1.24, and any EP when ``--target-ort`` (or the installed onnxruntime)
        is such a release.
    """

    code = "OL208"
    name = "ort-release-refuses-node"
    category = Category.OPSET
    severity = Severity.ERROR
    status = "preview"
    since = "0.2.0"
    visits = ("TopK",)
    messages = {
        "default": "{reason}; {ep_name} runs in onnxruntime {ort}",
        "target": "{reason}",
    }
    example_eps = ("openvino",)
    example_bad = """\
<ir_version: 8, opset_import: ["" : 16]>
g (float[1,8,16] x) => (float[1,8,16] v, int64[1,8,16] i) {
    s = Shape(x)
    a = Constant <value = int64[1] {1}> ()
    k = Gather <axis = 0> (s, a)
    v, i = TopK <axis = 1> (x, k)
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 16]>
g (float[1,8,16] x) => (float[1,8,16] v, int64[1,8,16] i) {
    s = Shape(x)
    a = Constant <value = int64[1] {1}> ()
    b = Constant <value = int64[1] {2}> ()
    k = Slice(s, a, b)
    v, i = TopK <axis = 1> (x, k)
}
"""

    def check_node(self, ctx: LintContext, node: NodeRef) -> None:
        wanted = [r for r in load_refusals() if r.op == node.op_type]
        if not wanted or node.domain != DEFAULT_DOMAIN or not _gathered_from_shape(ctx, node):
            return
        fix = Fix(title="compute K as Slice(Shape(t), [a], [a + 1])")
        if not ctx.eps:
            target = _target_version(ctx)
            for r in wanted:
                if r.refused_by(target):
                    ctx.emit(self._make(node, r, target, None, fix))
            return
        seen: set[str] = set()
        for p in ctx.eps:
            version = ep_ort_version(p.runtime_onnxruntime, ctx.config.target_ort)
            for r in wanted:
                if p.ep not in seen and r.refused_by(version):
                    seen.add(p.ep)
                    ctx.emit(self._make(node, r, version, p.ep, fix))

    def _make(
        self, node: NodeRef, r: LoadRefusal, version: str | None, ep: str | None, fix: Fix
    ) -> Diagnostic:
        reason = r.reason.format(ort=version)
        if ep is None:
            return self.make(node.location(), "target", ep=ep, fix=fix, reason=reason)
        return self.make(node.location(), ep=ep, fix=fix, reason=reason, ep_name=ep, ort=version)


def _target_version(ctx: LintContext) -> str:
    """The target release with no EP named: ``--target-ort`` or the installed ORT."""
    from onnxlint.runtime.identity import cache_enabled

    return release(ctx.config.target_ort, cache=cache_enabled(ctx.config)).version
