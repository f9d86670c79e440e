"""Structure rule OL101: ``onnx.checker``'s verdict (``analyses.checked``), as a diagnostic."""

from __future__ import annotations

import onnx

from onnxlint.analyses.checked import CheckerVerdict
from onnxlint.context import LintContext
from onnxlint.diagnostics import Category, Fix, Location, Severity
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
        Severity means consequence: when the only violation is one ONNX Runtime does not
        enforce (below IR version 4, initializers that are not also graph inputs; the
        checker accepts the model once they are listed), the session loads and the
        finding is a warning.

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
        ctx.emit(self.make(Location(), error=_trim(error)))


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
