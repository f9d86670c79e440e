"""Nodes out of topological order, as ORT takes them: it sorts every graph when it loads
a model, while ONNX's shape inference walks the nodes as listed and leaves the outputs of
a node that reads a later node's output untyped (and everything computed from them).

:func:`sort_graphs` sorts a model's graphs in place; :func:`infer_sorted` runs an
inference on a sorted copy and hands back the answer in the model's own node order (the
lint's index pairs the inferred copy's nodes with its own by position)."""

from __future__ import annotations

import heapq
from collections.abc import Callable

import onnx

from onnxlint.index import ModelIndex, iter_graphs, subgraphs


def _in_order(g: onnx.GraphProto) -> bool:
    producer = {o: i for i, n in enumerate(g.node) for o in n.output if o}
    return all(producer.get(x, -1) < i for i, n in enumerate(g.node) for x in n.input if x)


def out_of_order(model: onnx.ModelProto) -> bool:
    """Whether a graph of ``model`` (the main graph or a body) lists a node before the
    producer of one of its inputs."""
    return not all(_in_order(g) for g in iter_graphs(model.graph))


def index_out_of_order(index: ModelIndex) -> bool:
    """:func:`out_of_order` from the lint's index entries, without reading the protobuf again."""
    for g in index.graphs:
        if g.proto is None:
            continue  # a function: ORT does not sort it
        producers = g.producers
        for ref in g.nodes:
            for name in ref.input_names:
                producer = producers.get(name)
                if producer is not None and producer.index >= ref.index:
                    return True
    return False


def sort_graphs(model: onnx.ModelProto) -> bool:
    """Sort the nodes of every graph of ``model`` topologically in place (Kahn, stable);
    whether any graph was out of order. A graph with a cycle is left as it is."""
    changed = False
    for g in iter_graphs(model.graph):
        if _in_order(g):
            continue
        producer = {o: i for i, n in enumerate(g.node) for o in n.output if o}
        needs = [
            {producer[x] for x in n.input if x in producer} - {i} for i, n in enumerate(g.node)
        ]
        readers: dict[int, list[int]] = {}
        for i, ds in enumerate(needs):
            for d in ds:
                readers.setdefault(d, []).append(i)
        left = [len(ds) for ds in needs]
        # the lowest listed position first among the nodes ready (stable, as ORT's sort is)
        ready = [i for i, k in enumerate(left) if k == 0]
        heapq.heapify(ready)
        order: list[int] = []
        while ready:
            i = heapq.heappop(ready)
            order.append(i)
            for r in readers.get(i, []):
                left[r] -= 1
                if left[r] == 0:
                    heapq.heappush(ready, r)
        if len(order) != len(g.node):
            continue  # a cycle: not ORT's to mend
        nodes = [g.node[i] for i in order]
        del g.node[:]
        g.node.extend(nodes)
        changed = True
    return changed


def _key(n: onnx.NodeProto) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    return n.op_type, tuple(n.output), tuple(n.input)


def _restore(original: onnx.GraphProto, answer: onnx.GraphProto) -> None:
    """Put ``answer``'s nodes (``original``'s, sorted) back in ``original``'s order, in its
    bodies too."""
    keys = [_key(n) for n in original.node]
    if keys != [_key(n) for n in answer.node]:
        if sorted(keys) != sorted(_key(n) for n in answer.node):
            return  # not the same nodes: nothing to pair
        queues: dict[tuple[str, tuple[str, ...], tuple[str, ...]], list[onnx.NodeProto]] = {}
        for n in answer.node:
            queues.setdefault(_key(n), []).append(n)
        nodes = [queues[_key(n)].pop(0) for n in original.node]
        del answer.node[:]
        answer.node.extend(nodes)
    for mine, theirs in zip(original.node, answer.node, strict=True):
        if mine.attribute:
            bodies = dict(subgraphs(theirs))
            for name, sub in subgraphs(mine):
                if name in bodies:
                    _restore(sub, bodies[name])


def infer_sorted(
    model: onnx.ModelProto, infer: Callable[[onnx.ModelProto], onnx.ModelProto]
) -> onnx.ModelProto:
    """``infer(model)``, run on a topologically sorted copy when a graph of ``model`` is out
    of order (ORT's view of it), the answer's nodes then put back in ``model``'s order."""
    if not out_of_order(model):
        return infer(model)
    work = onnx.ModelProto()
    work.CopyFrom(model)
    sort_graphs(work)
    answer = infer(work)
    _restore(model.graph, answer.graph)
    return answer
