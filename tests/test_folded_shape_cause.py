"""A shape ORT computes at run time from values known at export time is a ``folded-shape``
cause: with optimizations disabled ORT's own inference gives the nodes after it no static
shape, so QNN refuses them, but ORT's constant folding (basic level and above) makes the
shape static. The finding sits at the node that sets the shape, and its fix says to fold,
not to pin input dims the model does not have.

The form is the TorchScript exports' class token (``ConstantOfShape -> Mul -> Equal ->
Where -> Expand``, the ViT family) and the patch embedding's ``Reshape`` to a shape
sliced from ``Shape`` of a static tensor.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from onnxlint.causes import group
from onnxlint.config import Config
from onnxlint.engine import lint


def _class_token(batch: int | str = 1, shape_from_input: bool = False) -> onnx.ModelProto:
    """``x[batch, 4, 8]``; a class token ``[1, 1, 8]`` expanded to ``[batch, 1, 8]`` by a
    shape computed from constants (or, with ``shape_from_input``, from ``Shape(x)``),
    concatenated before ``x``, then LayerNormalization and Relu."""
    inits = [
        numpy_helper.from_array(np.ones((1, 1, 8), np.float32), "cls"),
        numpy_helper.from_array(np.array([3], np.int64), "three"),
        numpy_helper.from_array(np.array([1, 1, 8], np.int64), "target"),
        numpy_helper.from_array(np.ones(8, np.float32), "gamma"),
        numpy_helper.from_array(np.zeros(8, np.float32), "beta"),
        numpy_helper.from_array(np.array([0], np.int64), "zero"),
        numpy_helper.from_array(np.array([1], np.int64), "one"),
        numpy_helper.from_array(np.array([1, 8], np.int64), "tail"),
    ]
    if shape_from_input:
        shape_nodes = [
            helper.make_node("Shape", ["x"], ["xs"], name="shape_x"),
            helper.make_node("Slice", ["xs", "zero", "one"], ["b"], name="slice_batch"),
            helper.make_node("Concat", ["b", "tail"], ["where_out"], name="cls_shape", axis=0),
        ]
    else:
        shape_nodes = [
            helper.make_node(
                "ConstantOfShape",
                ["three"],
                ["ones"],
                name="cls_ones",
                value=numpy_helper.from_array(np.array([1], np.int64)),
            ),
            helper.make_node("Mul", ["ones", "ones"], ["m"], name="cls_mul"),
            helper.make_node("Equal", ["target", "m"], ["eq"], name="cls_equal"),
            helper.make_node("Where", ["eq", "m", "target"], ["where_out"], name="cls_where"),
        ]
    nodes = [
        *shape_nodes,
        helper.make_node("Expand", ["cls", "where_out"], ["tok"], name="cls_expand"),
        helper.make_node("Concat", ["tok", "x"], ["seq"], name="cat", axis=1),
        helper.make_node(
            "LayerNormalization", ["seq", "gamma", "beta"], ["ln"], name="norm", axis=-1
        ),
        helper.make_node("Relu", ["ln"], ["y"], name="act"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 4, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 5, 8])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _shape_causes(model: onnx.ModelProto) -> dict[str, tuple[str, ...]]:
    report = lint(model, eps=["qnn"], config=Config())
    return {
        g.cause.kind: g.cause.subject
        for g in group(report)
        if g.cause.kind in ("folded-shape", "data-dependent", "dynamic-dims", "unknown-shape")
    }


def test_a_shape_computed_from_constants_is_a_folded_shape_cause_at_its_node() -> None:
    report = lint(_class_token(), eps=["qnn"], config=Config())
    groups = [g for g in group(report) if g.cause.kind == "folded-shape"]
    assert len(groups) == 1, [(g.cause, g.title()) for g in group(report)]
    top = groups[0]
    assert top.cause.subject == ("cls_expand",)
    assert top.where.node_name == "cls_expand"
    refused = {loc.node_name for loc in top.nodes}
    assert {"cat", "norm"} <= refused, refused
    title = top.title()
    assert "from cls_expand on" in title and "only with its optimizations on" in title
    assert f"refuses {len(top.nodes)} node" in title
    fix = top.fix()
    assert fix is not None and "fold" in fix.title and "basic level" in fix.title
    assert "fixed values" not in fix.title  # the model has no dynamic dims to pin
    assert not any(g.cause.kind == "data-dependent" for g in group(report))


def test_a_reshape_to_a_shape_sliced_from_a_static_shape_is_a_folded_shape_cause() -> None:
    causes = _shape_causes(_class_token(shape_from_input=True))
    assert causes.get("folded-shape") == ("cls_expand",), causes


def test_a_shape_from_a_dynamic_input_dim_is_not_a_folded_shape_cause() -> None:
    # the batch dim is named: folding cannot make it static, pinning it can
    causes = _shape_causes(_class_token(batch="batch", shape_from_input=True))
    assert "folded-shape" not in causes, causes
    assert causes.get("dynamic-dims") == ("batch",), causes


def test_a_shape_ort_knows_gives_no_shape_cause() -> None:
    model = _class_token()
    # the class token's shape as an initializer: ORT infers the Expand without folding
    where = next(n for n in model.graph.node if n.name == "cls_expand")
    where.input[1] = "target"
    keep = [n for n in model.graph.node if not n.name.startswith("cls_") or n is where]
    del model.graph.node[:]
    model.graph.node.extend(keep)
    onnx.checker.check_model(model)
    assert _shape_causes(model) == {}
