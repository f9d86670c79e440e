"""How QNN registers an 8-bit tensor outside QDQ node units, and the nodes it then fails
to add ("Failed to add node.").

QNN validates its node units one by one in one model wrapper, where a tensor is added once,
by the first unit that reads or writes it, and later units reuse it as added. A
QuantizeLinear it builds, and the QOperator ops (QLinearConv, QLinearMatMul), add their
8-bit output with its quantization; a Gather, Reshape or Transpose outside any QDQ unit
adds it as a plain integer tensor (a Transpose carries its input's quantization over). The
HTP backend then refuses:

- a DequantizeLinear outside any unit whose input such a plain tensor is (it cannot read
  it as quantized): the 8-bit ``Gather`` of a dynamically quantized embedding table, a
  ``Reshape``/``Transpose`` the QOperator format writes between QLinear ops;
- a Reshape or Squeeze outside any unit whose input is quantized (it writes a plain
  output);
- every node of a QDQ unit one of whose DequantizeLinears reads what such a refused
  Reshape or Squeeze writes (``unit_reason``: "Failed to add fused Matmul node." for a
  MatMul's; tf2onnx's int8 TFLite classifiers squeeze their pooled features between
  QuantizeLinear and the head's DequantizeLinear). A Conv's unit reading a Reshape QNN
  takes (of an 8-bit graph input) is taken in the first pass: the layout pass then fails
  (``layout_pass_failures``, ``reshaped_input_in_qdq_unit``);

and takes an 8-bit Transpose (which its op builder's types leave out) whose input is
quantized: a QuantizeLinear -> Transpose -> DequantizeLinear that ORT's level-1 transpose
optimizer writes in QDQ ConvNeXt exports, a Transpose of a QLinearMatMul output.

A MatMulNBits (``weight_ops``) adds its weight as the packed weight of the Conv2d it
builds: when another node QNN takes reads the same initializer (the Reshape of a tied
embedding table), the one validated first adds it and QNN fails to add the other ("Failed
to add Conv2d node." for the MatMulNBits).

A Conv (``layout_weight_ops``) adds its float weight initializer in QNN's own layout: QNN
fails to add any other node that reads that initializer (the Identity the TorchScript
exporter writes for a second reader of an equal weight, a Mul), whichever comes first.

Measured on real QNN HTP sessions (``rules/facts/profiles/qnn-htp.json``,
``qnn-integer-tensor-registration``, ``qnn-plain-tensor-unit``, ``qnn-nbits-shared-weight``,
``qnn-conv-weight-reader``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from onnxlint.analyses.level_assignment import LevelAssignment
    from onnxlint.analyses.level_graph import LevelGraph
    from onnxlint.index import NodeRef
    from onnxlint.profiles.model import IntegerTensorRule

_EIGHT_BIT = frozenset({"uint8", "int8"})
_QDQ_DOMAINS = frozenset({"ai.onnx", "com.microsoft"})


def integer_tensor_refusals(
    order: Sequence[NodeRef],
    claimed: set[str],
    units: Mapping[str, list[str]],
    dtypes: Mapping[str, str | None],
    rule: IntegerTensorRule,
) -> dict[str, str]:
    """The claimed nodes QNN fails to add for how an 8-bit tensor outside QDQ units was
    registered: node path -> why."""
    member_of = {p: target for target, unit in units.items() for p in unit}
    members = set(member_of)
    out = _layout_weight_readers(order, claimed, rule)
    quantized: set[str] = set()  # 8-bit tensors added with a quantization
    plain: set[str] = set()  # 8-bit tensors added as plain integers
    refused: set[str] = set()  # plain ones that a node refused for its quantized input wrote
    weights: set[str] = set()  # tensors added as a weight_ops weight
    read: set[str] = set()  # 8-bit tensors other claimed nodes read (and so added)
    for n in order:
        if n.path in out:
            continue
        if rule.weight_ops and n.path in claimed:
            slots = rule.weight_ops.get(n.op_type, ()) if n.domain == "com.microsoft" else ()
            mine = {n.inputs[i] for i in slots if i < len(n.inputs) and n.inputs[i]}
            others = {x for x in n.inputs if x and x not in mine}
            if mine & read or others & weights:
                out[n.path] = rule.weight_reason
                continue
            weights |= mine
            read |= {x for x in others if dtypes.get(x) in _EIGHT_BIT}
        if (n.domain or "ai.onnx") not in _QDQ_DOMAINS or not n.outputs or not n.outputs[0]:
            continue
        op, y = n.op_type, n.outputs[0]
        x = n.inputs[0] if n.inputs else ""
        if dtypes.get(y) in _EIGHT_BIT and (
            (op == "QuantizeLinear" and n.path in claimed) or op in rule.quantizing_ops
        ):
            quantized.add(y)
            continue
        if n.path in members:
            if op == "DequantizeLinear" and rule.unit_reason and n.path in claimed and x in refused:
                for p in units[member_of[n.path]]:
                    if p in claimed:
                        out[p] = rule.unit_reason
            continue
        if dtypes.get(x) not in _EIGHT_BIT:
            continue
        if op == "DequantizeLinear":
            if n.path in claimed and x in plain:
                out[n.path] = rule.dequantize_reason
        elif op in rule.plain_ops:
            if x in quantized and op in rule.refused_on_quantized_input:
                if n.path in claimed:
                    out[n.path] = rule.quantized_input_reason
                    refused.add(y)
                plain.add(y)
            elif x in quantized and op in rule.carries_quantization:
                quantized.add(y)
            else:
                plain.add(y)
    return out


def _layout_weight_readers(
    order: Sequence[NodeRef], claimed: set[str], rule: IntegerTensorRule
) -> dict[str, str]:
    """The claimed nodes that read an initializer a claimed ``layout_weight_ops`` node adds
    in the EP's layout (a Conv's weight), other than at such a slot: node path -> why."""
    ops = rule.layout_weight_ops
    if not ops:
        return {}

    def weight_slots(n: NodeRef) -> set[int]:
        return set(ops.get(n.op_type, ())) if (n.domain or "ai.onnx") == "ai.onnx" else set()

    weights = {
        n.inputs[i]
        for n in order
        if n.path in claimed
        for i in weight_slots(n)
        if i < len(n.inputs) and n.inputs[i] in n.graph.initializers
    }
    out: dict[str, str] = {}
    for n in order:
        mine = weight_slots(n)
        if n.path in claimed and any(
            x in weights and i not in mine for i, x in enumerate(n.inputs)
        ):
            out[n.path] = rule.layout_weight_reason
    return out


def apply_quantized_input_claims(lg: LevelGraph, result: LevelAssignment) -> None:
    """Claim, for each EP with an ``integer_tensor_registration``, the 8-bit
    ``carries_quantization`` nodes refused only for their element type whose input is
    quantized (a QuantizeLinear it claims, a ``quantizing_ops`` node, or such a node)."""
    for profile in result.profiles:
        rule = profile.partitioning.integer_tensor_registration
        if rule is None or not rule.carries_quantization:
            continue
        ep = profile.ep
        for g in lg.graphs():
            quantized: set[str] = set()
            for n in lg.order(g):
                na = result.get(n)
                if na is None or not n.outputs or not n.outputs[0]:
                    continue
                dtypes = na.facts.output_dtypes
                if not dtypes or dtypes[0] not in _EIGHT_BIT:
                    continue
                op = n.op_type
                if (op == "QuantizeLinear" and na.claims(ep)) or op in rule.quantizing_ops:
                    quantized.add(n.outputs[0])
                    continue
                if op not in rule.carries_quantization or not n.inputs:
                    continue
                if n.inputs[0] not in quantized or (n.domain or "ai.onnx") != "ai.onnx":
                    continue
                v = na.verdict_for(ep)
                if v is None:
                    continue
                if not v.claimed:
                    if v.kind != "dtype" or v.slot not in (None, 0):
                        continue
                    why = (
                        f"{ep} takes it: its 8-bit input carries the quantization of the node "
                        "that wrote it, and the Transpose carries it over"
                    )
                    claimed = replace(
                        v, claimed=True, kind="supported", reason=why, provenance=rule.provenance
                    )
                    result.nodes[n.path] = replace(
                        na, verdicts=tuple(claimed if x.ep == ep else x for x in na.verdicts)
                    )
                quantized.add(n.outputs[0])
