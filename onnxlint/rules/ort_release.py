"""Nodes an ONNX Runtime release refuses at load (OL208).

Some arrangements load in one ORT release and not in another; ``load_refusals`` in
``rules/ort_versions.json`` lists them with the releases measured. The release that
matters is the one each EP runs in (:func:`onnxlint.ort_versions.ep_ort_version`): the
release its package ships for an EP that comes as its own ORT (the profile's
``runtime_onnxruntime``: onnxruntime-openvino), else ``--target-ort`` or the installed ORT.
"""

from __future__ import annotations

from onnxlint.analyses.constants import constant_tensor
from onnxlint.analyses.shapes import Shapes
from onnxlint.context import LintContext
from onnxlint.diagnostics import Category, Diagnostic, Fix, Severity
from onnxlint.index import DEFAULT_DOMAIN, NodeRef
from onnxlint.ort_versions import LoadRefusal, ep_ort_version, load_refusals, release
from onnxlint.rule import Rule, register
from onnxlint.tensors import inline_scalar_int


def _attr_int(node: NodeRef, name: str) -> int | None:
    """The node's integer attribute ``name``, or the default its ONNX schema gives it."""
    a = node.attr(name)
    if a is not None:
        return int(a.i)
    schema = node.schema
    attr = schema.attributes.get(name) if schema is not None else None
    if attr is None or not attr.default_value.HasField("i"):
        return None
    return int(attr.default_value.i)


def _static_dim(ctx: LintContext, name: str, axis: int) -> bool:
    """Whether dimension ``axis`` of ``name`` has a known value."""
    shape = ctx.analysis(Shapes).shape(name)
    if shape is None or not -len(shape) <= axis < len(shape):
        return False
    return isinstance(shape[axis], int)


def _matches(ctx: LintContext, node: NodeRef, r: LoadRefusal) -> bool:
    """Whether ``node`` is in the arrangement ``r`` describes: its input ``r.input`` written
    by ``r.producers`` in turn (each link's op, attributes, absent attributes and constant
    input), with the dims ``r.static`` names static."""
    g = node.graph
    value = node.inputs[r.input] if r.input < len(node.inputs) else ""
    gathered: int | None = None
    last: NodeRef | None = None
    for link in r.producers:
        p = g.producers.get(value) if value else None
        if p is None or p.op_type != link["op"] or p.domain != DEFAULT_DOMAIN:
            return False
        if any(_attr_int(p, k) != v for k, v in link.get("attributes", {}).items()):
            return False
        if any(p.attr(k) is not None for k in link.get("absent", ())):
            return False  # not measured
        const = link.get("constant")
        if const is not None:
            slot = int(const["input"])
            name = p.inputs[slot] if slot < len(p.inputs) else ""
            t = constant_tensor(g, name) if name else None
            if t is None or list(t.dims) != list(const["dims"]):
                return False
            gathered = inline_scalar_int(t)
            if gathered is None:
                return False  # external or undecodable: not known
        if not p.inputs or not p.inputs[0]:
            return False
        last, value = p, p.inputs[0]
    for kind in r.static:
        if kind == "gathered":
            if last is None or gathered is None or not _static_dim(ctx, last.inputs[0], gathered):
                return False
        elif kind == "axis":
            axis = _attr_int(node, "axis")
            if axis is None or not _static_dim(ctx, node.inputs[0], axis):
                return False
        else:
            return False  # a condition this onnxlint does not know: not claimed
    return True


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
        the installed onnxruntime). Each arrangement is data: the op, the nodes that compute
        one of its inputs, the dims that must be static. One is known: onnxruntime 1.24
        refuses a TopK whose K is ``Gather(Shape(t), [a])`` when dimension ``a`` of ``t``
        and the TopK's axis are static (its data propagation records the gathered dimension as a scalar, and
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
    fails_load = frozenset({"default", "target"})
    name = "ort-release-refuses-node"
    category = Category.OPSET
    severity = Severity.ERROR
    status = "preview"
    since = "0.2.0"
    #: the ops the data names (``load_refusals``)
    visits = tuple(sorted({r.op for r in load_refusals()}))
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
        if node.domain != DEFAULT_DOMAIN:
            return
        wanted = [r for r in load_refusals() if r.op == node.op_type and _matches(ctx, node, r)]
        if not wanted:
            return
        if not ctx.eps:
            target = _target_version(ctx)
            for r in wanted:
                if r.refused_by(target):
                    ctx.emit(self._make(node, r, target, None))
            return
        seen: set[str] = set()
        for p in ctx.eps:
            version = ep_ort_version(p.runtime_onnxruntime, ctx.config.target_ort)
            for r in wanted:
                if p.ep not in seen and r.refused_by(version):
                    seen.add(p.ep)
                    ctx.emit(self._make(node, r, version, p.ep))

    def _make(
        self, node: NodeRef, r: LoadRefusal, version: str | None, ep: str | None
    ) -> Diagnostic:
        fix = Fix(title=r.fix) if r.fix else None
        reason = r.reason.format(ort=version)
        if ep is None:
            return self.make(node.location(), "target", ep=ep, fix=fix, reason=reason)
        return self.make(node.location(), ep=ep, fix=fix, reason=reason, ep_name=ep, ort=version)


def _target_version(ctx: LintContext) -> str:
    """The target release with no EP named: ``--target-ort`` or the installed ORT."""
    from onnxlint.runtime.identity import cache_enabled

    return release(ctx.config.target_ort, cache=cache_enabled(ctx.config)).version
