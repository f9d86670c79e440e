"""``onnx.checker``'s verdict on the lint's model, computed once (OL101 reports it).

The checker runs on a copy without external data, with unknown standard operators
(OL204's findings) set aside in a private domain, so that each problem is reported once,
by the rule that explains it. The verdict depends on the model alone: a lint of an
edited document takes it over when the edit provably keeps it
(:func:`onnxlint.analyses.edits.checker_after_node_edit`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import onnx

from onnxlint.index import is_unknown_standard_op, stored_graphs
from onnxlint.tensors import without_external_data

if TYPE_CHECKING:
    from onnxlint.context import LintContext

#: the domain unknown standard operators are moved to in the checker's copy
SET_ASIDE_DOMAIN = "onnxlint.unknown-operator"


class CheckerVerdict:
    """``ctx.analysis(CheckerVerdict)``: whether ``onnx.checker.check_model`` accepts the
    model, and if not, what it said."""

    model_only = True  # the model alone: see context.SharedModel

    #: None: the checker accepts the model; else whether it raised a validation or
    #: inference error (False: another exception), and its message on one line
    failure: tuple[bool, str] | None
    #: the copy the checker was given, kept when it failed (OL101 checks it again)
    checked: onnx.ModelProto | None

    def __init__(self, ctx: LintContext) -> None:
        # the loaded proto, never the path: a second open could meet another file (or a
        # FIFO swapped in since); external tensors get inline placeholders, so the
        # checker stats no location (the loader checks those, OL010-OL012)
        model = _unknown_ops_set_aside(ctx, without_external_data(ctx.model, ctx.loaded.external))
        # onnx.checker serialises a ModelProto to hand it to C++: on a model with hundreds
        # of MB of weights that is a second. The lint's own model, unchanged, is the parse
        # of the loader's bytes, so those bytes are the serialisation (the verdict is the
        # same: the C++ side parses either into the same message)
        wire = ctx.loaded.wire if model is ctx.model else None
        self.failure, self.checked = None, None
        try:
            onnx.checker.check_model(wire if wire is not None else model)
        except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as exc:
            self.failure, self.checked = (True, " ".join(str(exc).split())), model
        except Exception as exc:
            self.failure, self.checked = (False, f"{type(exc).__name__}: {exc}"), model

    @classmethod
    def accepted(cls) -> CheckerVerdict:
        """The verdict of a model the checker accepts (taken over, not computed)."""
        self = cls.__new__(cls)
        self.failure, self.checked = None, None
        return self


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
    if moved and not any(o.domain == SET_ASIDE_DOMAIN for o in copy.opset_import):
        copy.opset_import.add(domain=SET_ASIDE_DOMAIN, version=1)
        for fn in copy.functions:
            fn.opset_import.add(domain=SET_ASIDE_DOMAIN, version=1)
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
                c.domain = SET_ASIDE_DOMAIN
                moved += 1
    return moved


def node_passes(node: onnx.NodeProto, model: onnx.ModelProto) -> bool:
    """Whether ``onnx.checker.check_node`` accepts ``node`` (one without bodies) as a node
    of ``model``'s main graph: its schema, attributes and their types."""
    ctx = onnx.checker.C.CheckerContext()
    ctx.ir_version = model.ir_version
    ctx.opset_imports = {imp.domain: imp.version for imp in model.opset_import}
    try:
        onnx.checker.check_node(node, ctx)
    except Exception:
        return False
    return True
