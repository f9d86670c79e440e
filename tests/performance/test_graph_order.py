"""``index.topological_order`` walks node positions instead of paths (issue 19); the
order must stay ORT's: a reverse DFS from the leaves, the highest-index producer first.

A plain path-keyed statement of that rule, written here, is the reference; random
graphs with repeated inputs, values captured by bodies, node subsets and cycles are
compared with it.
"""

from __future__ import annotations

import random

import onnx
import pytest
from onnx import helper

from onnxlint.index import GraphRef, ModelIndex, NodeRef, node_edges, topological_order


def _reference_edges(
    g: GraphRef, nodes: list[NodeRef], captured: bool = True
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    paths = {n.path for n in nodes}
    preds: dict[str, list[str]] = {n.path: [] for n in nodes}
    succs: dict[str, list[str]] = {n.path: [] for n in nodes}
    for n in nodes:
        names = list(n.inputs)
        if captured:
            for sub in n.subgraphs.values():
                names += sorted(sub.captured)
        for name in names:
            p = g.producers.get(name) if name else None
            if p is not None and p.path in paths and p.path != n.path:
                preds[n.path].append(p.path)
                succs[p.path].append(n.path)
    return preds, succs


def _reference_order(g: GraphRef, nodes: list[NodeRef]) -> list[str]:
    index = {n.path: i for i, n in enumerate(nodes)}
    preds, succs = _reference_edges(g, nodes)
    order: list[str] = []
    visited: set[str] = set()
    stack: list[tuple[str, bool]] = [(n.path, False) for n in nodes if not succs[n.path]]
    while stack:
        path, leaving = stack.pop()
        if leaving:
            order.append(path)
        elif path not in visited:
            visited.add(path)
            stack.append((path, True))
            for p in sorted(set(preds[path]), key=index.__getitem__):
                if p not in visited:
                    stack.append((p, False))
    order += [n.path for n in nodes if n.path not in set(order)]  # a cycle: file order
    return order


def _random_model(seed: int, cycle: bool = False) -> onnx.ModelProto:
    rng = random.Random(seed)
    values = ["x"]
    nodes = []
    for i in range(rng.randint(1, 40)):
        ins = [rng.choice(values) for _ in range(rng.randint(1, 3))]  # repeats allowed
        out = f"v{i}"
        if rng.random() < 0.15:  # an If whose branches read values of this graph
            then = helper.make_graph(
                [helper.make_node("Identity", [rng.choice(values)], [f"t{i}"])],
                f"then{i}",
                [],
                [helper.make_tensor_value_info(f"t{i}", onnx.TensorProto.FLOAT, None)],
            )
            other = helper.make_graph(
                [helper.make_node("Identity", [rng.choice(values)], [f"e{i}"])],
                f"else{i}",
                [],
                [helper.make_tensor_value_info(f"e{i}", onnx.TensorProto.FLOAT, None)],
            )
            nodes.append(
                helper.make_node(
                    "If", ["cond"], [out], then_branch=then, else_branch=other, name=f"if{i}"
                )
            )
        else:
            nodes.append(helper.make_node("Sum", ins, [out], name=f"n{i}"))
        values.append(out)
    if cycle and len(nodes) > 2:
        nodes[0].input.append(nodes[-1].output[0])
    rng.shuffle(nodes)  # file order is not the data order
    g = helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1]),
            helper.make_tensor_value_info("cond", onnx.TensorProto.BOOL, []),
        ],
        [helper.make_tensor_value_info(values[-1], onnx.TensorProto.FLOAT, None)],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("seed", range(60))
def test_the_order_and_edges_are_the_reference_ones(seed: int) -> None:
    index = ModelIndex(_random_model(seed, cycle=seed % 7 == 0))
    for g in index.graphs:
        for nodes in (g.nodes, g.nodes[::2], g.nodes[1::3]):
            for captured in (True, False):
                assert node_edges(g, nodes, captured) == _reference_edges(g, nodes, captured)
            assert [n.path for n in topological_order(g, nodes)] == _reference_order(g, nodes)


def test_a_producer_before_its_consumer_and_every_node_once() -> None:
    index = ModelIndex(_random_model(3))
    order = topological_order(index.main, index.main.nodes)
    assert sorted(n.path for n in order) == sorted(n.path for n in index.main.nodes)
    position = {n.path: i for i, n in enumerate(order)}
    preds, _ = node_edges(index.main, index.main.nodes)
    assert all(position[p] < position[c] for c, ps in preds.items() for p in ps)
