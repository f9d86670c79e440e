"""The one graph walk (``onnxlint.index.subgraphs``/``iter_graphs``) and who still has its own."""

from __future__ import annotations

import re
from pathlib import Path

import onnx
from onnx import helper

from onnxlint.index import ModelIndex, iter_graphs, stored_graphs, subgraphs

PACKAGE = Path(__file__).resolve().parent.parent / "onnxlint"

#: places outside ``index`` that find graph attributes themselves (an attribute type test or
#: ``HasField("g")``): none. Everything after the load walks ``subgraphs``/``iter_graphs``
#: (or the index's ``GraphRef``s); the walks over a raw model before it is checked (the
#: loader's limits, the tensor walk, the checker's copy) use ``stored_graphs``, which reads
#: the fields whatever the type says. ``modelfile/prescan`` walks protobuf wire bytes, not
#: messages, and names no attribute type. Issue #15: it was 19.
MAX_OWN_WALKS = 0


def _body(name: str, op: str = "Identity") -> onnx.GraphProto:
    x = helper.make_tensor_value_info(f"{name}_in", onnx.TensorProto.FLOAT, [1])
    y = helper.make_tensor_value_info(f"{name}_out", onnx.TensorProto.FLOAT, [1])
    node = helper.make_node(op, [f"{name}_in"], [f"{name}_out"], name=f"{name}_node")
    return helper.make_graph([node], name, [x], [y])


def _model() -> onnx.ModelProto:
    inner_if = helper.make_node(
        "If", ["c"], ["t"], name="inner", then_branch=_body("a"), else_branch=_body("b")
    )
    then = helper.make_graph(
        [inner_if], "then", [], [helper.make_tensor_value_info("t", onnx.TensorProto.FLOAT, [1])]
    )
    outer = helper.make_node(
        "If", ["c"], ["y"], name="outer", then_branch=then, else_branch=_body("e")
    )
    custom = helper.make_node(
        "Multi", ["y"], ["z"], name="multi", domain="my.ops", bodies=[_body("k0"), _body("k1")]
    )
    c = helper.make_tensor_value_info("c", onnx.TensorProto.BOOL, [])
    z = helper.make_tensor_value_info("z", onnx.TensorProto.FLOAT, [1])
    graph = helper.make_graph([outer, custom], "main", [c], [z])
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("my.ops", 1)]
    )


def test_subgraphs_names_bodies_as_the_index_paths_do() -> None:
    model = _model()
    outer, custom = model.graph.node
    # in attribute order (onnx.helper sorts attributes by name)
    assert [n for n, _ in subgraphs(outer)] == ["else_branch", "then_branch"]
    assert [n for n, _ in subgraphs(custom)] == ["bodies[0]", "bodies[1]"]
    index = ModelIndex(model)
    assert [g.path for g in index.graphs] == [
        "main",
        "main/outer:else_branch",
        "main/outer:then_branch",
        "main/outer:then_branch/inner:else_branch",
        "main/outer:then_branch/inner:then_branch",
        "main/multi:bodies[0]",
        "main/multi:bodies[1]",
    ]


def test_iter_graphs_walks_every_body_depth_first_in_the_index_order() -> None:
    model = _model()
    walked = [g.name for g in iter_graphs(model.graph)]
    assert walked == ["main", "e", "then", "b", "a", "k0", "k1"]
    assert [g.proto.name for g in ModelIndex(model).graphs] == walked


def test_no_new_module_finds_graph_attributes_itself() -> None:
    own = re.compile(r'AttributeProto\.GRAPHS?\b|\bA\.GRAPHS?\b|HasField\("g"\)')
    found = {
        rel: n
        for p in PACKAGE.rglob("*.py")
        if (rel := p.relative_to(PACKAGE).as_posix()) != "index.py"
        and (n := len(own.findall(p.read_text(encoding="utf-8"))))
    }
    assert sum(found.values()) <= MAX_OWN_WALKS, (
        f"walk bodies with onnxlint.index.subgraphs/iter_graphs: {found}"
    )


def test_stored_graphs_reads_the_fields_whatever_the_type_says() -> None:
    model = _model()
    outer, custom = model.graph.node
    assert [(name, k) for name, k, _ in stored_graphs(outer.attribute)] == [
        ("else_branch", None),
        ("then_branch", None),
    ]
    assert [(name, k, g.name) for name, k, g in stored_graphs(custom.attribute)] == [
        ("bodies", 0, "k0"),
        ("bodies", 1, "k1"),
    ]
    # a hostile model: a graph stored on an INT attribute is invisible to the index's walk
    # but not to the raw one (the loader's limits must see it)
    hidden = helper.make_attribute("n", 3)
    hidden.g.CopyFrom(_body("hidden"))
    node = helper.make_node("Relu", ["x"], ["y"])
    node.attribute.append(hidden)
    assert subgraphs(node) == []
    assert [(name, k, g.name) for name, k, g in stored_graphs(node.attribute)] == [
        ("n", None, "hidden")
    ]
