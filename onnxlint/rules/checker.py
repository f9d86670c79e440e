"""Structure rule OL101: ``onnx.checker``'s verdict (``analyses.checked``), as a diagnostic."""

from __future__ import annotations

import onnx

from onnxlint.analyses.checked import CheckerVerdict
from onnxlint.context import LintContext
from onnxlint.diagnostics import Category, Fix, Location, Severity
from onnxlint.index import iter_graphs
from onnxlint.node_order import sort_graphs
from onnxlint.rule import Rule, register
from onnxlint.rules.structure import VALID_MODEL


@register
class CheckerError(Rule):
    """``onnx.checker`` rejects the model.

    What it does:
        Runs ``onnx.checker.check_model`` and reports its finding as a diagnostic instead of
        an exception; the checker stops at its first error. The other half of the checker's
        ``full_check`` (strict shape inference) runs once in the shared shape analysis and is
        reported as OL300, so together they are the full check without inferring twice.
        An operator that does not exist at the imported opset is OL204's finding, reported
        there once: the checker is given a copy in which such nodes sit in a private
        domain, so it reports what else is wrong, if anything.
        Severity means consequence: when the only violations are ones ONNX Runtime does not
        enforce (below IR version 4, initializers that are not also graph inputs; nodes
        out of topological order, which ORT sorts; a node of a domain the model does not
        import, which ORT imports at its own version), the checker accepts a copy mended
        that way, the session loads and the finding is a warning.

    Why it matters:
        A model the checker rejects may still load in some runtimes, but it is malformed:
        exporters and optimizers disagree about what it means, and EPs fail in odd ways.

    Fix:
        Read the checker's message; the usual causes are a wrong attribute type, an
        operator used at an opset where it does not exist, or inconsistent shapes.

    Execution providers:
        All.
    """

    code = "OL101"
    name = "checker-error"
    category = Category.STRUCTURE
    severity = Severity.ERROR
    messages = {
        "default": "onnx.checker rejects the model: {error}",
        "ir3_initializers": "onnx.checker rejects the model: below IR version 4 every "
        "initializer must also be a graph input, and {count} are not (first: '{first}'); "
        "ONNX Runtime loads it anyway",
        "ort_tolerates": "onnx.checker rejects the model ({what}); ONNX Runtime loads it "
        "anyway, other tools may not: {error}",
    }
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] y) {
    y = Relu <alpha: float = 0.5> (x)
}
"""
    example_good = VALID_MODEL

    def check_model(self, ctx: LintContext) -> None:
        verdict = ctx.analysis(CheckerVerdict)
        if verdict.failure is None:
            return
        validation, error = verdict.failure
        model = verdict.checked
        if validation and model is not None:
            missing = _ir3_initializers_not_inputs(model)
            if missing and _passes_with_inputs(model, missing):
                # the only violation is one ORT does not enforce: the session loads
                ctx.emit(
                    self.make(
                        Location(),
                        "ir3_initializers",
                        severity=Severity.WARNING,
                        count=len(missing),
                        first=missing[0].name,
                        fix=Fix(
                            title="list the initializers as graph inputs, or re-save the "
                            "model with ir_version 4 or later"
                        ),
                    )
                )
                return
            what = _mended_by_ort(model)
            if what:
                ctx.emit(
                    self.make(
                        Location(),
                        "ort_tolerates",
                        severity=Severity.WARNING,
                        what="; ".join(what),
                        error=_trim(error),
                        fix=Fix(
                            title="re-save the model after " + " and ".join(_FIXES[w] for w in what)
                        ),
                    )
                )
                return
        ctx.emit(self.make(Location(), error=_trim(error)))


_UNSORTED = "nodes out of topological order"
_UNIMPORTED = "a node domain without an opset import"
_FIXES = {
    _UNSORTED: "sorting its nodes topologically",
    _UNIMPORTED: "adding the missing opset imports",
}


def _mended_by_ort(model: onnx.ModelProto) -> list[str]:
    """What ORT mends on loading that the checker rejects, when the checker accepts a copy
    mended that way (empty when it does not, or nothing needed mending): ORT sorts the
    nodes of every graph and imports a used domain the model does not import."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    what: list[str] = []
    if sort_graphs(copy):
        what.append(_UNSORTED)
    imported = {o.domain for o in copy.opset_import}
    used = {n.domain for g in iter_graphs(copy.graph) for n in g.node} - {"", "ai.onnx"}
    missing = sorted(d for d in used - imported if d not in {f.domain for f in copy.functions})
    if missing:
        for d in missing:
            copy.opset_import.append(onnx.helper.make_opsetid(d, 1))
        what.append(_UNIMPORTED)
    if not what:
        return []
    missing_inputs = _ir3_initializers_not_inputs(copy)
    for t in missing_inputs:
        copy.graph.input.append(onnx.helper.make_tensor_value_info(t.name, t.data_type, t.dims))
    try:
        onnx.checker.check_model(copy)
    except Exception:
        return []
    return what


def _ir3_initializers_not_inputs(model: onnx.ModelProto) -> list[onnx.TensorProto]:
    """Initializers of the main graph that IR < 4 wants listed as graph inputs, and aren't."""
    if model.ir_version >= 4:
        return []
    inputs = {i.name for i in model.graph.input}
    return [t for t in model.graph.initializer if t.name not in inputs]


def _passes_with_inputs(model: onnx.ModelProto, missing: list[onnx.TensorProto]) -> bool:
    """Whether the checker accepts a copy with ``missing`` added as graph inputs."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for t in missing:
        copy.graph.input.append(onnx.helper.make_tensor_value_info(t.name, t.data_type, t.dims))
    try:
        onnx.checker.check_model(copy)
    except Exception:
        return False
    return True


def _trim(text: str, limit: int = 400) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
