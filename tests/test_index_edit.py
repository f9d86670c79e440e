"""``ModelIndex.after_node_edit``: the index of a model with one main-graph node changed,
built from the previous index, equals a fresh index of that model in every entry, or is
declined (None) when the edit moves another entry."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import onnx
import pytest

from onnxlint.index import GraphRef, ModelIndex
from onnxlint.names import label_table, relabelled

MODEL = """\
<ir_version: 8, opset_import: ["" : 17, "local" : 1]>
g (float[1,4] x, bool c) => (float[1,4] y, float[1,4] z) <float[4] w = {1,2,3,4}, float[4] w2 = {1,1,1,1}> {
    a = Relu(x)
    b = Add(a, w)
    d = Sigmoid(b)
    e = Mul(d, w2)
    f = Relu(e)
    h = If(c) <then_branch: graph = t () => (float[1,4] o) { o = Add(f, w) },
               else_branch: graph = el () => (float[1,4] o) { o = Neg(f) }>
    k = local.Twice(h)
    y = Abs(k)
    z = Softmax <axis = 1> (e)
}
<domain: "local", opset_import: ["" : 17]>
Twice (p) => (q) {
    r = Add(p, p)
    q = Identity(r)
}
"""

#: names given to the main graph's nodes before each edit: unique, shared, empty, and
#: one that spells another node's synthetic label
NAMES = ["relu", "add", "", "dup", "dup", "if", "call", "Sigmoid_2", "soft"]


def _model() -> onnx.ModelProto:
    model = onnx.parser.parse_model(MODEL)
    for node, name in zip(model.graph.node, NAMES, strict=True):
        node.name = name
    return model


def _graph(g: GraphRef) -> dict[str, Any]:
    def path(ref: Any) -> str | None:
        return ref.path if ref is not None else None

    return {
        "path": g.path,
        "io": (g.inputs, g.outputs, g.opsets, g.depth, g.captured),
        "protos": (id(g.proto), id(g.function)),
        "around": (path(g.parent), path(g.outer)),
        "nodes": [
            (
                n.path,
                n.label,
                n.index,
                n.op_type,
                n.domain,
                n.schema,
                n.input_names,
                tuple(n.outputs),
                id(n.node),
                {k: s.path for k, s in n.subgraphs.items()},
            )
            for n in g.nodes
        ],
        "initializers": {k: id(v) for k, v in g.initializers.items()},
        "value_info": {k: id(v) for k, v in g.value_info.items()},
        # each entry is the graph's own record of that node, not an equal one
        "producers": {k: (v.path, v is g.nodes[v.index]) for k, v in g.producers.items()},
        "consumers": {
            k: [(v.path, v is g.nodes[v.index]) for v in vs] for k, vs in g.consumers.items()
        },
        "labels": (dict(g.name_counts), g.synthetic),
    }


def signature(index: ModelIndex) -> dict[str, Any]:
    return {
        "graphs": [_graph(g) for g in index.graphs],
        "nodes": [n.path for n in index.nodes],
        "functions": {k: g.path for k, g in index.functions.items()},
        "opsets": index.opsets,
        "main": index.main.path,
        "model": id(index.model),
    }


def _rename(name: str) -> Callable[[onnx.NodeProto], None]:
    def edit(node: onnx.NodeProto) -> None:
        node.name = name

    return edit


def _op(op: str) -> Callable[[onnx.NodeProto], None]:
    def edit(node: onnx.NodeProto) -> None:
        node.op_type = op

    return edit


def _attribute(node: onnx.NodeProto) -> None:
    node.attribute.append(onnx.helper.make_attribute("axis", 0))


EDITS: dict[str, Callable[[onnx.NodeProto], None]] = {
    "rename unique": _rename("fresh"),
    "rename to a shared name": _rename("dup"),
    "rename to a unique name in use": _rename("relu"),
    "unname": _rename(""),
    "rename to a synthetic label": _rename("Sigmoid_2"),
    "rename to a quoted name": _rename("/model/layer.0/Add"),
    "op changed": _op("Tanh"),
    "attribute added": _attribute,
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_every_edit_of_every_node_indexes_as_a_fresh_index(edit: str) -> None:
    prior = ModelIndex(_model())
    patched = 0
    for k in range(len(prior.main.nodes)):
        model = _model()
        EDITS[edit](model.graph.node[k])
        got = ModelIndex.after_node_edit(prior, model, k)
        if prior.main.nodes[k].subgraphs:
            assert got is None  # a node holding a body is indexed afresh
            continue
        fresh = ModelIndex(model)
        if got is None:
            # declined only when another node's label does change
            moved = [
                a.label != b.label for a, b in zip(prior.main.nodes, fresh.main.nodes, strict=True)
            ]
            assert any(m for i, m in enumerate(moved) if i != k), (edit, k)
            continue
        patched += 1
        assert signature(got) == signature(fresh), (edit, k)
        assert got.node_by_path(got.main.nodes[k].path) is got.main.nodes[k]
    assert patched >= 1, edit


def test_an_edit_that_moves_a_value_is_declined() -> None:
    prior = ModelIndex(_model())
    for field in ("input", "output"):
        model = _model()
        getattr(model.graph.node[1], field)[0] = "other"
        assert ModelIndex.after_node_edit(prior, model, 1) is None


def test_another_node_count_or_a_missing_node_is_declined() -> None:
    prior = ModelIndex(_model())
    model = _model()
    del model.graph.node[-1]
    assert ModelIndex.after_node_edit(prior, model, 0) is None
    assert ModelIndex.after_node_edit(prior, _model(), len(prior.main.nodes)) is None


def test_repeated_initializers_and_values_are_read_by_name() -> None:
    model = _model()
    model.graph.initializer.append(model.graph.initializer[0])  # "w" twice: the last counts
    model.graph.value_info.append(onnx.helper.make_tensor_value_info("x", 1, [2]))
    prior = ModelIndex(model)
    edited = onnx.ModelProto()
    edited.CopyFrom(model)
    edited.graph.node[0].name = "renamed"
    got = ModelIndex.after_node_edit(prior, edited, 0)
    assert got is not None
    assert signature(got) == signature(ModelIndex(edited))


@pytest.mark.parametrize(
    ("names", "k", "now"),
    [
        (["a", "b", "c"], 1, "z"),  # unique to unique
        (["a", "b", "b"], 0, "a"),  # a shared name stays shared
        (["", "", "c"], 0, ""),  # unnamed, op changed below
        (["a", "Relu_1", ""], 0, "x"),  # a real name spells node 2's synthetic label
        (["a", "b", "a"], 1, "q"),  # others share a name: this node's rename leaves them
    ],
)
def test_relabelled_agrees_with_labelling_the_graph_again(
    names: list[str], k: int, now: str
) -> None:
    ops = ["Relu"] * len(names)
    labels, counts, taken = label_table(list(zip(names, ops, strict=True)))
    for op in ("Relu", "Sigmoid"):
        after = list(zip(names, ops, strict=True))
        after[k] = (now, op)
        label = relabelled(counts, taken, k, (names[k], ops[k]), (now, op))
        fresh = label_table(after)[0]
        if label is None:
            assert any(a != b for i, (a, b) in enumerate(zip(labels, fresh, strict=True)) if i != k)
        else:
            assert fresh[k] == label
            assert all(a == b for i, (a, b) in enumerate(zip(labels, fresh, strict=True)) if i != k)


def test_relabelled_on_random_graphs() -> None:
    """Small graphs from a pool of names that collide in every way (shared, empty, spelling
    a synthetic label): a label given is the fresh one, and every other label stays."""
    import random

    rng = random.Random(7)
    pool = ["", "a", "b", "Relu_0", "Relu_1", "Sigmoid_1", "Relu_2"]
    given = 0
    for _ in range(3000):
        size = rng.randint(1, 4)
        nodes = [(rng.choice(pool), rng.choice(["Relu", "Sigmoid"])) for _ in range(size)]
        k = rng.randrange(size)
        now = (rng.choice(pool), rng.choice(["Relu", "Sigmoid"]))
        labels, counts, taken = label_table(nodes)
        label = relabelled(counts, taken, k, nodes[k], now)
        after = list(nodes)
        after[k] = now
        fresh = label_table(after)[0]
        if label is not None:
            given += 1
            assert fresh[k] == label, (nodes, k, now)
            assert [x for i, x in enumerate(labels) if i != k] == [
                x for i, x in enumerate(fresh) if i != k
            ], (nodes, k, now)
    assert given > 1500
