"""Distinct node signatures of real models, and a single-node model for each.

``onnxlint probe --from-models`` measures an EP on the nodes real models contain
instead of ONNX's node test cases: every node of the given models' main graphs is
reduced to a signature (op, domain, opset, the dtype, rank, static/dynamic dims and
constness of each input, output dtypes and ranks, the attributes with a short
value) and, for each distinct signature, the first node that had it becomes a
single-node model: runtime inputs become graph inputs of the same type and shape
(named dims kept), constant inputs keep their values (initializers and
``Constant`` outputs are copied), outputs keep their inferred types.

Nodes that cannot stand alone are left out and counted by reason: control flow
(a graph attribute), model-local functions, inputs whose type is unknown, and
constant inputs stored as external data.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import onnx

#: attribute values longer than this (as text) are left out of the signature
MAX_ATTR_CHARS = 64
#: a constant input larger than this is not copied: the node is skipped
MAX_CONST_BYTES = 4 * 1024 * 1024


@dataclass
class NodeSignature:
    """One distinct node signature and the single-node model built for it."""

    key: str  # the signature as text (stable, comparable across runs)
    op_type: str
    domain: str
    opset: int
    input_dtypes: list[str]
    model: onnx.ModelProto
    seen: int = 1  # nodes with this signature over all models
    models: list[str] = field(default_factory=list)  # models it was seen in (first few)

    @property
    def name(self) -> str:
        digest = hashlib.sha256(self.key.encode()).hexdigest()[:10]
        return f"sig-{self.op_type}-{digest}"


@dataclass
class SignatureSet:
    """The distinct signatures of some models, and the nodes that were skipped, by reason."""

    signatures: dict[str, NodeSignature] = field(default_factory=dict)
    skipped: Counter[str] = field(default_factory=Counter)
    models: int = 0
    nodes: int = 0


def _dtype(elem: int) -> str:
    """ONNX's element-type name, lower case (``float``, ``int64``), as profiles name them."""
    import onnx

    if not elem:
        return "?"
    try:
        return str(onnx.TensorProto.DataType.Name(elem)).lower()
    except ValueError:
        return str(elem)


def _type_sig(tp: onnx.TypeProto | None) -> tuple[str, str]:
    """(dtype, dims) of a tensor type; dims as ``s`` (static) / ``d`` (dynamic) per axis."""
    if tp is None or not tp.HasField("tensor_type"):
        return "?", "?"
    tt = tp.tensor_type
    dtype = _dtype(tt.elem_type)
    if not tt.HasField("shape"):
        return dtype, "?"
    dims = "".join("s" if d.HasField("dim_value") else "d" for d in tt.shape.dim)
    return dtype, f"[{dims}]"


def _attr_sig(attr: onnx.AttributeProto) -> str | None:
    import onnx

    value = onnx.helper.get_attribute_value(attr)
    if attr.type in (onnx.AttributeProto.TENSOR, onnx.AttributeProto.SPARSE_TENSOR):
        return f"{attr.name}=<tensor>"
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    elif isinstance(value, list):
        value = [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in value]
    text = f"{attr.name}={value!r}"
    return text if len(text) <= MAX_ATTR_CHARS else f"{attr.name}=<long>"


def _has_graph(node: onnx.NodeProto) -> bool:
    from onnxlint.index import GRAPH_ATTRIBUTE_TYPES

    return any(a.type in GRAPH_ATTRIBUTE_TYPES for a in node.attribute)


def _constants(model: onnx.ModelProto) -> dict[str, onnx.TensorProto]:
    """Value name -> tensor for initializers and ``Constant`` outputs (with a ``value``)."""
    out = {i.name: i for i in model.graph.initializer}
    for n in model.graph.node:
        if n.op_type == "Constant" and n.domain in ("", "ai.onnx") and n.output:
            for a in n.attribute:
                if a.name == "value" and a.HasField("t"):
                    t = type(a.t)()
                    t.CopyFrom(a.t)
                    t.name = n.output[0]
                    out[n.output[0]] = t
    return out


def _infer(model: onnx.ModelProto) -> dict[str, onnx.TypeProto]:
    """Value name -> type after ONNX shape inference (best effort)."""
    import onnx

    types: dict[str, onnx.TypeProto] = {}
    try:
        inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception:
        inferred = model
    g = inferred.graph
    for vi in (*g.input, *g.value_info, *g.output):
        types[vi.name] = vi.type
    for init in model.graph.initializer:
        if init.name not in types:
            types[init.name] = onnx.helper.make_tensor_type_proto(init.data_type, list(init.dims))
    return types


def _opset(model: onnx.ModelProto, domain: str) -> int:
    for imp in model.opset_import:
        if (imp.domain or "") == domain or (domain == "" and imp.domain == "ai.onnx"):
            return int(imp.version)
    return 0


def signature_of(
    node: onnx.NodeProto,
    opset: int,
    types: dict[str, onnx.TypeProto],
    consts: dict[str, onnx.TensorProto],
) -> str:
    """The node's signature as text."""
    domain = "" if node.domain == "ai.onnx" else node.domain
    ins = []
    for name in node.input:
        if not name:
            ins.append("_")
            continue
        dtype, dims = _type_sig(types.get(name))
        ins.append(f"{dtype}{dims}{'c' if name in consts else 'v'}")
    outs = ["_" if not name else "".join(_type_sig(types.get(name))) for name in node.output]
    attrs = sorted(s for s in (_attr_sig(a) for a in node.attribute) if s)
    return f"{domain or 'ai.onnx'}.{node.op_type}@{opset}({','.join(ins)})->({','.join(outs)}){{{';'.join(attrs)}}}"


def single_node_model(
    model: onnx.ModelProto,
    node: onnx.NodeProto,
    types: dict[str, onnx.TypeProto],
    consts: dict[str, onnx.TensorProto],
) -> onnx.ModelProto | str:
    """A model holding only ``node``; or the reason it cannot be built."""
    import onnx

    graph = onnx.GraphProto(name=f"probe_{node.op_type}")
    seen: set[str] = set()
    for name in node.input:
        if not name or name in seen:
            continue
        seen.add(name)
        if name in consts:
            t = consts[name]
            if t.data_location == onnx.TensorProto.EXTERNAL:
                return "external-data constant"
            if t.ByteSize() > MAX_CONST_BYTES:
                return "large constant"
            graph.initializer.append(t)
            continue
        tp = types.get(name)
        if tp is None or not tp.HasField("tensor_type") or not tp.tensor_type.elem_type:
            return "input type unknown"
        vi = onnx.ValueInfoProto(name=name)
        vi.type.CopyFrom(tp)
        graph.input.append(vi)
    for name in node.output:
        if not name:
            continue
        vi = onnx.ValueInfoProto(name=name)
        tp = types.get(name)
        if tp is not None:
            vi.type.CopyFrom(tp)
        graph.output.append(vi)
    if not graph.output:
        return "no outputs"
    copy = onnx.NodeProto()
    copy.CopyFrom(node)
    if not copy.name:
        copy.name = f"{node.op_type}_0"
    graph.node.append(copy)
    out = onnx.ModelProto(ir_version=model.ir_version, producer_name="onnxlint-probe")
    out.opset_import.extend(model.opset_import)
    out.graph.CopyFrom(graph)
    return out


def model_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The ``.onnx`` files named, folders searched (sorted, not recursively)."""
    out: list[Path] = []
    for p in map(Path, paths):
        out.extend(sorted(p.glob("*.onnx")) if p.is_dir() else [p])
    return out


def collect(
    models: Sequence[onnx.ModelProto | str | os.PathLike[str]], *, keep_models: int = 3
) -> SignatureSet:
    """Distinct signatures over ``models`` (protos or paths); unreadable files are skipped."""
    import onnx

    result = SignatureSet()
    for item in models:
        label = str(item) if not isinstance(item, onnx.ModelProto) else item.graph.name
        try:
            model = (
                item
                if isinstance(item, onnx.ModelProto)
                else onnx.load(str(item), load_external_data=False)
            )
        except Exception:
            result.skipped["unreadable model"] += 1
            continue
        label = Path(label).stem if not isinstance(item, onnx.ModelProto) else label
        result.models += 1
        local = {(f.domain, f.name) for f in model.functions}
        types = _infer(model)
        consts = _constants(model)
        for node in model.graph.node:
            result.nodes += 1
            domain = "" if node.domain == "ai.onnx" else node.domain
            if node.op_type == "Constant" and domain == "":
                result.skipped["Constant (folded by ORT)"] += 1
                continue
            if _has_graph(node):
                result.skipped["control flow (graph attribute)"] += 1
                continue
            if (node.domain, node.op_type) in local:
                result.skipped["model-local function"] += 1
                continue
            opset = _opset(model, domain)
            key = signature_of(node, opset, types, consts)
            known = result.signatures.get(key)
            if known is not None:
                known.seen += 1
                if label not in known.models and len(known.models) < keep_models:
                    known.models.append(label)
                continue
            built = single_node_model(model, node, types, consts)
            if isinstance(built, str):
                result.skipped[built] += 1
                continue
            in_dtypes = [_type_sig(types.get(n))[0] if n else "_" for n in node.input]
            result.signatures[key] = NodeSignature(
                key=key,
                op_type=node.op_type,
                domain=domain,
                opset=opset,
                input_dtypes=in_dtypes,
                model=built,
                models=[label],
            )
    return result
