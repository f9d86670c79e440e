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
    _restore_names(graph, prefix)
    return out


def _restore_names(graph: onnx.GraphProto, prefix: str) -> None:
    """Give back their own names to the values ORT renamed ``<prefix><name>`` inside a run
    of nodes it moved to float (a float16 region on the CPU: no Cast between its nodes, so
    none was dropped), where nothing else bears the name: the model's nodes then read and
    write the values they do in the model (a function op ORT inlined there is recognised by
    its values, ``function_inlining.collapse_ort_inlined``)."""
    used = {i.name for i in graph.input} | {o.name for o in graph.output}
    used |= {t.name for t in graph.initializer}
    for n in graph.node:
        used.update(n.input)
        used.update(n.output)
    back: dict[str, str] = {}
    taken: set[str] = set()
    for name in sorted(used):
        own = name
        while own.startswith(prefix):
            own = own[len(prefix) :]
        if own != name and own and own not in used and own not in taken:
            back[name] = own
            taken.add(own)
    if not back:
        return
    for n in graph.node:
        n.input[:] = [back.get(v, v) for v in n.input]
        n.output[:] = [back.get(v, v) for v in n.output]
    for vi in graph.value_info:
        vi.name = back.get(vi.name, vi.name)
