"""Structure rule OL101: ``onnx.checker``'s verdict, as a diagnostic.

The checker runs on a copy without external data, with unknown standard operators
(OL204's findings) set aside in a private domain, so that each problem is reported once,
by the rule that explains it.
"""

from __future__ import annotations

from collections.abc import Sequence

import onnx

from onnxlint.context import LintContext
from onnxlint.diagnostics import Category, Fix, Location, Severity
from onnxlint.index import is_unknown_standard_op, stored_graphs
from onnxlint.rule import Rule, register
from onnxlint.rules.structure import VALID_MODEL
from onnxlint.tensors import without_external_data


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
        # the loaded proto, never the path: a second open could meet another file (or a
        # FIFO swapped in since); external tensors get inline placeholders, so the
        # checker stats no location (the loader checks those, OL010-OL012)
        model = _unknown_ops_set_aside(ctx, without_external_data(ctx.model, ctx.loaded.external))
        # onnx.checker serialises a ModelProto to hand it to C++: on a model with hundreds
        # of MB of weights that is a second. The lint's own model, unchanged, is the parse
        # of the loader's bytes, so those bytes are the serialisation (the verdict is the
        # same: the C++ side parses either into the same message)
        wire = ctx.loaded.wire if model is ctx.model else None
        try:
            onnx.checker.check_model(wire if wire is not None else model)
        except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as exc:
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
            ctx.emit(self.make(Location(), error=_trim(" ".join(str(exc).split()))))
        except Exception as exc:
            ctx.emit(self.make(Location(), error=_trim(f"{type(exc).__name__}: {exc}")))


#: the domain unknown standard operators are moved to in the checker's copy
_SET_ASIDE_DOMAIN = "onnxlint.unknown-operator"


def _unknown_ops_set_aside(ctx: LintContext, model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with its nodes that have no schema in a standard domain (OL204's findings)
    in a private domain the checker does not validate.

    ``model`` is ``ctx.model`` (then a copy is changed, if any node moves) or the
    checker's own copy of it without external data (changed in place).
    """
    functions = ctx.index.functions
    protos = {
        id(n.node)
        for n in ctx.index.nodes
        if n.schema is None and is_unknown_standard_op(n, functions)
    }
    if not protos:
        return model
    # ``model`` is the lint's own model or the copy without external data made for the
    # checker (same node lists, same order): the nodes are found by identity in the
    # lint's model and moved at the same position in the checker's copy
    copy = model
    if model is ctx.model:
        copy = onnx.ModelProto()
        copy.CopyFrom(model)
    moved = _set_aside(_all_node_lists(ctx.model), _all_node_lists(copy), protos)
    if moved and not any(o.domain == _SET_ASIDE_DOMAIN for o in copy.opset_import):
        copy.opset_import.add(domain=_SET_ASIDE_DOMAIN, version=1)
        for fn in copy.functions:
            fn.opset_import.add(domain=_SET_ASIDE_DOMAIN, version=1)
    return copy if moved else model


def _all_node_lists(model: onnx.ModelProto) -> list[Sequence[onnx.NodeProto]]:
    """Every node list of the model (graph, bodies, functions), in a fixed order."""
    out: list[Sequence[onnx.NodeProto]] = []
    graphs = [model.graph]
    while graphs:
        g = graphs.pop()
        out.append(g.node)
        for node in g.node:
            graphs += [sub for _, _, sub in stored_graphs(node.attribute)]
    out.extend(fn.node for fn in model.functions)
    return out


def _set_aside(
    originals: list[Sequence[onnx.NodeProto]],
    copies: list[Sequence[onnx.NodeProto]],
    protos: set[int],
) -> int:
    moved = 0
    for orig, dup in zip(originals, copies, strict=True):
        for o, c in zip(orig, dup, strict=True):
            if id(o) in protos:
                c.domain = _SET_ASIDE_DOMAIN
                moved += 1
    return moved


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
