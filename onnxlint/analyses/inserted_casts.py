"""Take ORT's post-partitioning float16 Casts out of its level-1 graph.

The level-1 graph is the model a CPU-only session saved. After partitioning, that session
ran ORT's InsertCastTransformer, which wraps each node the CPU EP has no float16 kernel
for in Casts to float32 and back, named ``InsertedPrecisionFreeCast_...``
(``rules/ort_level1.json``, ``inserted_casts``). No EP sees those Casts when it chooses
its nodes, and no session reports them; kept, a run of them on float16 weights became a
predicted QNN partition of its own. Each is removed and its readers read the tensor it
cast, as in the graph ORT partitions.
"""

from __future__ import annotations

from functools import cache

import onnx

from onnxlint.data import load_json


@cache
def inserted_prefix() -> str:
    return str(load_json("ort_level1.json")["inserted_casts"]["name_prefix"])


def drop_inserted_casts(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` without ORT's inserted Casts in its main graph (a copy; else ``model``)."""
    prefix = inserted_prefix()
    graph = model.graph
    casts = [n for n in graph.node if n.op_type == "Cast" and n.name.startswith(prefix)]
    if not casts:
        return model
    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    outputs = {o.name for o in graph.output}
    nodes = list(graph.node)
    drop = {
        i
        for i, n in enumerate(nodes)
        if n.op_type == "Cast" and n.name.startswith(prefix) and len(n.input) == 1
        and len(n.output) == 1
    }  # fmt: skip
    rename: dict[str, str] = {}  # a value -> the value that replaces it everywhere
    for i in sorted(drop):
        src, dst = nodes[i].input[0], nodes[i].output[0]
        if dst in outputs:
            rename[src] = dst  # the cast back to a graph output: its writer writes the output
        else:
            rename[dst] = src

    def final(name: str) -> str:
        seen = set()
        while name in rename and name not in seen:
            seen.add(name)
            name = rename[name]
        return name

    kept = []
    for i, node in enumerate(nodes):
        if i in drop:
            continue
        n = onnx.NodeProto()
        n.CopyFrom(node)
        kept.append(n)
        for j, v in enumerate(n.input):
            if v:
                n.input[j] = final(v)
        for j, v in enumerate(n.output):
            if v:
                n.output[j] = final(v)
    del graph.node[:]
    graph.node.extend(kept)
    gone = set(rename)
    infos = [vi for vi in graph.value_info if vi.name not in gone]
    del graph.value_info[:]
    graph.value_info.extend(infos)
    return out
