"""Contrib-schema rules (OL207, OL209): does the ONNX Runtime that loads the model accept
its ``com.microsoft`` nodes as they are written?

ORT checks every node against its schema when it loads a model and refuses the whole model
on a mismatch, before any EP sees it. ONNX's checker knows no contrib schema, so only ORT's
own tables can tell: the installed ORT's (read from it), and those of the ORT builds that
some EPs ship in (``rules/ort_contrib_schemas.json``).
"""

from __future__ import annotations

from typing import Literal

from onnxlint.analyses.ort_contrib_schemas import CONTRIB_DOMAIN
from onnxlint.context import LintContext
from onnxlint.diagnostics import Category, Severity
from onnxlint.index import NodeRef
from onnxlint.rule import Rule, register


@register
class ContribInputType(Rule):
    """An input of an ORT contrib operator has a type its ORT schema does not allow.

    What it does:
        Checks the element type of each input of a ``com.microsoft`` node against the
        types the installed onnxruntime's schema of that operator allows for it (read
        from ORT once per build and cached). Inputs of unknown type are not checked.

    Why it matters:
        ORT checks every node against its schema when it loads the model and refuses the
        whole model on a mismatch ("Type Error: Type 'tensor(uint8)' of input parameter
        (...) of operator (QGemm) ... is invalid"), on every EP. ONNX's checker knows no
        contrib schema, so nothing else catches it before ORT does. A quantization tool
        that writes a bias of the wrong type into a QOperator op (``QGemm``) is the usual
        cause.

    Fix:
        Give the input one of the types the message lists: re-quantize (an int32 bias
        for the QOperator ops), or insert a ``Cast``.

    Execution providers:
        All: ORT refuses the model before any EP sees it.
    """

    code = "OL207"
    node_local = True  # its inputs' types and the installed ORT's schema
    name = "contrib-input-type"
    category = Category.OPSET
    severity = Severity.ERROR
    messages = {
        "default": "input {index} of {op} ('{tensor}') is {dtype}, which ONNX Runtime's "
        "com.microsoft {op} schema does not allow there ({allowed}): ORT refuses to load "
        "the model",
    }
    visits = ("*",)
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17, "com.microsoft" : 1]>
g (int32[2,4] x) => (int32[2,4] y) {
    y = com.microsoft.FastGelu(x)
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17, "com.microsoft" : 1]>
g (float[2,4] x) => (float[2,4] y) {
    y = com.microsoft.FastGelu(x)
}
"""

    def check_node(self, ctx: LintContext, node: NodeRef) -> None:
        if node.domain != CONTRIB_DOMAIN:
            return
        from onnxlint.analyses.ort_contrib_schemas import allowed_input_types
        from onnxlint.analyses.shapes import Shapes

        shapes = ctx.analysis(Shapes)
        opset = node.opset or 1  # ORT imports a used contrib domain at 1
        for i, name in enumerate(node.input_names):
            vt = shapes.value_type(name) if name else None
            if vt is None or vt.kind != "tensor" or not vt.dtype:
                continue
            allowed = allowed_input_types(node.op_type, opset, i)
            if allowed is None or f"tensor({vt.dtype})" in allowed:
                continue
            ctx.emit(
                self.make(
                    node.location(tensor=name, slot="input"),
                    op=node.op_type,
                    index=i,
                    tensor=name,
                    dtype=vt.dtype,
                    allowed=", ".join(sorted(t[7:-1] for t in allowed)),
                )
            )


@register
class RuntimeContribSchema(Rule):
    """A ``com.microsoft`` node, or an attribute or input of it, that the ONNX Runtime an EP ships in does not define.

    What it does:
        For each EP of the list that comes as its own ONNX Runtime package (the profile's
        ``runtime_onnxruntime``: onnxruntime-openvino 1.24.1 is a build of ORT 1.24.1),
        checks every ``com.microsoft`` node against that release's schema of the operator
        (``rules/ort_contrib_schemas.json``, read from the package): an operator that release
        does not define at all (``SwiGLU``, ``ScaledSiLU`` and the other operators added
        after 1.24), an attribute its schema does not define, more inputs than it takes.

    Why it matters:
        That ORT checks each node against its own schema when it loads the model and refuses
        the whole model ("This is an invalid model. In Node, (...)", or "com.microsoft:SwiGLU(-1)
        is not a registered function/op" for an operator it lacks), whatever the EP would
        take: the model loads with the installed ORT and fails with the EP's. Model builders
        that target newer runtimes write such nodes (onnxruntime-genai's GroupQueryAttention
        with ``sliding_window_cache`` or its query and key norm inputs, MatMulNBits with
        ``weight_prepacked``).

    Fix:
        Export for that runtime (leave the newer option out), or use a build of the EP on a
        newer ONNX Runtime.

    Execution providers:
        Those that ship in their own ONNX Runtime (OpenVINO).
    """

    code = "OL209"
    fails_load = frozenset({"operator", "attribute", "inputs"})
    node_local = True  # its operator, attributes and inputs, and the EPs of the configuration
    name = "runtime-contrib-schema"
    category = Category.OPSET
    severity = Severity.ERROR
    messages = {
        "operator": "ONNX Runtime {ort} ({package} ships in it) does not define the "
        "com.microsoft operator {op}: that ORT refuses to load the model",
        "attribute": "{op} has the attribute {attribute}, which the com.microsoft {op} "
        "schema of ONNX Runtime {ort} ({package} ships in it) does not define: that ORT "
        "refuses to load the model",
        "inputs": "{op} has {count} inputs, and the com.microsoft {op} schema of ONNX "
        "Runtime {ort} ({package} ships in it) takes at most {max}: that ORT refuses to load "
        "the model",
    }
    visits = ("*",)
    example_eps = ("openvino",)
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17, "com.microsoft" : 1]>
g (float[1,4,64] x, uint8[32,2,16] w, float[64] s) => (float[1,4,32] y) {
    y = com.microsoft.MatMulNBits<K: int = 64, N: int = 32, bits: int = 4, block_size: int = 32, weight_prepacked: int = 0>(x, w, s)
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17, "com.microsoft" : 1]>
g (float[1,4,64] x, uint8[32,2,16] w, float[64] s) => (float[1,4,32] y) {
    y = com.microsoft.MatMulNBits<K: int = 64, N: int = 32, bits: int = 4, block_size: int = 32>(x, w, s)
}
"""

    def check_node(self, ctx: LintContext, node: NodeRef) -> None:
        if node.domain != CONTRIB_DOMAIN:
            return
        seen: set[str] = set()
        for profile in ctx.eps:
            ort = profile.runtime_onnxruntime
            if ort is None or ort in seen:
                continue
            seen.add(ort)
            schema = _runtime_contrib_schema(ort, node.op_type, node.opset or 1)
            if schema is None:
                continue  # a release the table lacks: nothing to say
            common = {"op": node.op_type, "ort": ort, "package": profile.display_name}
            if schema is False:
                ctx.emit(self.make(node.location(), "operator", ep=profile.id, **common))
                continue
            max_inputs, attributes = schema
            for a in node.node.attribute:
                if a.name not in attributes:
                    ctx.emit(
                        self.make(
                            node.location(), "attribute", ep=profile.id, attribute=a.name, **common
                        )
                    )
            count = len(node.input_names)
            while count and not node.input_names[count - 1]:
                count -= 1  # trailing empty names are absent optional inputs
            if count > max_inputs:
                ctx.emit(
                    self.make(
                        node.location(),
                        "inputs",
                        ep=profile.id,
                        count=count,
                        max=max_inputs,
                        **common,
                    )
                )


def _runtime_contrib_schema(
    ort: str, op_type: str, opset: int
) -> tuple[int, frozenset[str]] | Literal[False] | None:
    """(largest input count, attribute names) of ``op_type``'s com.microsoft schema at
    ``opset`` in ONNX Runtime ``ort`` (``rules/ort_contrib_schemas.json``, which lists every
    operator of each release it has); False when that release does not define the operator
    at ``opset``; None when the table has no such release."""
    from onnxlint.data import load_json

    release = load_json("ort_contrib_schemas.json")["releases"].get(ort)
    if release is None:
        return None
    usable = [r for r in release.get(op_type) or [] if r["since"] <= opset]
    if not usable:
        return False
    r = max(usable, key=lambda r: r["since"])
    return int(r["max_inputs"]), frozenset(r["attributes"])
