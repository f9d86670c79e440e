"""A GreaterOrEqual or LessOrEqual at opsets 12 to 15 (their revision 12) gets no
inferred output shape in ORT, and ORT's constant folding leaves it in place even on
constants: QNN refuses it and everything whose shape follows from it ("Cannot get shape"; issue #16, the
attention-mask chains of TorchScript transformer exports: And, Expand, Where, then the
attention Add, Softmax, MatMul, Transpose, Reshape at the default level). From opset 16
the output is inferred and a node of constants folds.

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``).
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint.ep_names import CPU_EP

from .conftest import check_real, partitions, qnn_cpu_nodes


def mask_chain(op: str, opset: int, constant: bool = True) -> onnx.ModelProto:
    """``op``(Constant [1,8], Constant scalar) -> And(graph input) -> Not, and a Relu
    on a second input (so QNN always has a partition with a real input). With
    ``constant=False`` the first operand is a graph input."""
    nodes = [
        helper.make_node(
            "Constant", [], ["b"], "b", value=numpy_helper.from_array(np.array(3, np.int64))
        ),
        helper.make_node(op, ["a", "b"], ["ge"], "cmp"),
        helper.make_node("And", ["ge", "m"], ["an"], "and"),
        helper.make_node("Not", ["an"], ["y"], "not"),
        helper.make_node("Relu", ["x"], ["x2"], "relu"),
    ]
    inputs = [
        helper.make_tensor_value_info("m", TensorProto.BOOL, [1, 8]),
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8]),
    ]
    if constant:
        value = numpy_helper.from_array(np.arange(8, dtype=np.int64).reshape(1, 8))
        nodes.insert(0, helper.make_node("Constant", [], ["a"], "a", value=value))
    else:
        inputs.append(helper.make_tensor_value_info("a", TensorProto.INT64, [1, 8]))
    graph = helper.make_graph(
        nodes,
        "mask_chain",
        inputs,
        [
            helper.make_tensor_value_info("y", TensorProto.BOOL, [1, 8]),
            helper.make_tensor_value_info("x2", TensorProto.FLOAT, [1, 8]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


#: (op, opset, constant inputs) -> nodes on CPU with optimizations disabled
CASES = {
    ("GreaterOrEqual", 14, True): {"main/cmp", "main/and", "main/not"},
    ("LessOrEqual", 12, True): {"main/cmp", "main/and", "main/not"},
    ("GreaterOrEqual", 16, True): set(),
    ("Greater", 14, True): set(),
    ("GreaterOrEqual", 14, False): {"main/cmp", "main/and", "main/not"},
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_comparison_without_a_shape(case: tuple[str, int, bool]) -> None:
    assert qnn_cpu_nodes(mask_chain(*case)) == CASES[case]


def test_unresolved_output_stays_unknown_after_level1() -> None:
    # ORT's own constant folding keeps the node: the level-1 graph still has it, unknown
    plan = partitions(mask_chain("GreaterOrEqual", 14), ["qnn"]).plan("optimized")
    if plan is None:
        pytest.skip("no level-1 graph (onnxruntime is not installed)")
    if "main/cmp" not in plan.node_ep:
        # measured with onnxruntime 1.32; older releases (1.24.1, the oldest supported)
        # fold the comparison away, and the graph predicted from is theirs
        import onnxruntime

        pytest.skip(f"onnxruntime {onnxruntime.__version__} folds the comparison at level 1")
    assert plan.node_ep.get("main/cmp") == CPU_EP
    assert plan.node_ep.get("main/and") == CPU_EP


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_comparison_without_a_shape_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    models = {f"{op}_{opset}_{int(c)}": mask_chain(op, opset, c) for op, opset, c in CASES}
    check_real("qnn", sys.executable, models)


# ---------------------------------------------------------------------------
# ORT propagates an element of a static Shape through Gather and Unsqueeze: a Slice
# bounded by it (the position ids of BERT-style exports whose dims are fixed) or a
# Reshape to it has a static output that QNN takes (qnn-fixed, optimizations disabled:
# the embeddings, LayerNorm and first attention MatMuls of DistilBERT/MobileBERT/
# Megatron-BERT exports)


def _const(name: str, value: np.ndarray) -> onnx.NodeProto:
    return helper.make_node(
        "Constant", [], [name], f"{name}_c", value=numpy_helper.from_array(value)
    )


def shape_element(use: str) -> onnx.ModelProto:
    """Relu(x) -> Unsqueeze(Gather(Shape, 1)) used as a Slice end (``slice``: then a
    Gather of an embedding and an Add) or as a Reshape target (``reshape``)."""

    const = _const
    nodes = [
        helper.make_node("Relu", ["x"], ["xr"], "relu"),
        helper.make_node("Shape", ["xr"], ["s"], "shape"),
        const("one", np.array(1, np.int64)),
        helper.make_node("Gather", ["s", "one"], ["n"], "g_n", axis=0),
        const("ax", np.array([0], np.int64)),
        helper.make_node("Unsqueeze", ["n", "ax"], ["nu"], "unsq"),
    ]
    if use == "slice":
        nodes += [
            const("buf", np.arange(64, dtype=np.int64).reshape(1, 64)),
            const("st", np.array([0], np.int64)),
            const("ax1", np.array([1], np.int64)),
            helper.make_node("Slice", ["buf", "st", "nu", "ax1"], ["pos"], "slice"),
            const("emb", np.ones((64, 8), np.float32)),
            helper.make_node("Gather", ["emb", "pos"], ["pe"], "g_emb"),
            helper.make_node("Add", ["pe", "xr"], ["y"], "add"),
        ]
        out = [1, 8, 8]
    else:
        nodes += [
            helper.make_node("Reshape", ["xr", "nu"], ["r"], "reshape"),
            helper.make_node("Relu", ["r"], ["y"], "post"),
        ]
        out = [8]
    graph = helper.make_graph(
        nodes,
        "shape_element",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


#: QNN takes neither Shape ("Failed to add node") nor a Slice with computed bounds
SHAPE_ELEMENT_CPU = {"slice": {"main/shape", "main/slice"}, "reshape": {"main/shape"}}


@pytest.mark.parametrize("use", sorted(SHAPE_ELEMENT_CPU))
def test_shape_element_through_gather_and_unsqueeze(use: str) -> None:
    assert qnn_cpu_nodes(shape_element(use)) == SHAPE_ELEMENT_CPU[use]


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_shape_element_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    check_real("qnn", sys.executable, {u: shape_element(u) for u in SHAPE_ELEMENT_CPU})


# ---------------------------------------------------------------------------
# ORT propagates a Concat of shape values through ONNX's data propagation, which Concat
# has from revision 13 on: at opsets 11 and 12 a Reshape to Concat(Shape(x)) has no
# inferred shape and QNN leaves it, and what follows, to CPU (held-out corpus: the
# attention-mask Reshape and Cast of a GPT-BigCode TorchScript export at opset 12).


def concat_of_shape(opset: int) -> onnx.ModelProto:
    """Relu(y [6]) reshaped to Concat(Shape(x [2, 3])), then a Relu."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], "shape"),
        helper.make_node("Concat", ["s"], ["c"], "concat", axis=0),
        helper.make_node("Relu", ["y"], ["yr"], "pre"),
        helper.make_node("Reshape", ["yr", "c"], ["r"], "reshape"),
        helper.make_node("Relu", ["r"], ["z"], "post"),
    ]
    graph = helper.make_graph(
        nodes,
        "concat_of_shape",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [6]),
        ],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    return model


#: opset -> nodes on CPU with optimizations disabled (QNN never takes Shape)
CONCAT_OF_SHAPE_CPU = {
    11: {"main/shape", "main/reshape", "main/post"},
    12: {"main/shape", "main/reshape", "main/post"},
    13: {"main/shape"},
}


@pytest.mark.parametrize("opset", sorted(CONCAT_OF_SHAPE_CPU))
def test_concat_of_shape_values_resolves_from_opset_13(opset: int) -> None:
    assert qnn_cpu_nodes(concat_of_shape(opset)) == CONCAT_OF_SHAPE_CPU[opset]


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_concat_of_shape_values_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    models = {f"opset{o}": concat_of_shape(o) for o in CONCAT_OF_SHAPE_CPU}
    check_real("qnn", sys.executable, models)


# ---------------------------------------------------------------------------
# ORT passes a shape vector through Cast, whatever the target type, and not a scalar
# shape value: a Reshape to Cast(Cast(Shape(x), int32), int64) has a static output (the
# held-out basic-pitch wheel model's tf2onnx export with its batch dim fixed: 37 nodes
# QNN took and onnxlint predicted on the CPU); one sized by a Concat of a cast Gather
# does not.


def cast_of_shape(kind: str) -> onnx.ModelProto:
    """Relu(x [1, 8]) reshaped to a cast shape value, then a Sigmoid: ``vector``
    Cast(Cast(Shape, int32), int64); ``float`` the same through float; ``scalar``
    Concat(Unsqueeze(Cast(Cast(Gather(Shape, 0), int32), int64)), Gather(Shape, [1]))."""

    def const(name: str, value: list[int] | int) -> onnx.NodeProto:
        return _const(name, np.array(value, np.int64))

    nodes = [
        helper.make_node("Relu", ["x"], ["r"], "relu"),
        helper.make_node("Shape", ["r"], ["s"], "shape"),
    ]
    via = TensorProto.FLOAT if kind == "float" else TensorProto.INT32
    if kind == "scalar":
        nodes += [
            const("zero", 0),
            const("ax", [0]),
            const("onev", [1]),
            helper.make_node("Gather", ["s", "zero"], ["g"], "gather", axis=0),
            helper.make_node("Cast", ["g"], ["g32"], "to_via", to=via),
            helper.make_node("Cast", ["g32"], ["g64"], "to_i64", to=TensorProto.INT64),
            helper.make_node("Unsqueeze", ["g64", "ax"], ["gu"], "unsq"),
            helper.make_node("Gather", ["s", "onev"], ["g1"], "gather1", axis=0),
            helper.make_node("Concat", ["gu", "g1"], ["target"], "concat", axis=0),
        ]
    else:
        nodes += [
            helper.make_node("Cast", ["s"], ["c"], "to_via", to=via),
            helper.make_node("Cast", ["c"], ["target"], "to_i64", to=TensorProto.INT64),
        ]
    nodes += [
        helper.make_node("Reshape", ["r", "target"], ["y"], "reshape"),
        helper.make_node("Sigmoid", ["y"], ["z"], "sig"),
    ]
    graph = helper.make_graph(
        nodes,
        "cast_of_shape",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


#: kind -> nodes on CPU with optimizations disabled (QNN never takes Shape)
CAST_OF_SHAPE_CPU = {
    "vector": {"main/shape"},
    "float": {"main/shape"},
    "scalar": {"main/shape", "main/reshape", "main/sig"},
}


@pytest.mark.parametrize("kind", sorted(CAST_OF_SHAPE_CPU))
def test_a_cast_passes_a_shape_vector_not_a_scalar(kind: str) -> None:
    assert qnn_cpu_nodes(cast_of_shape(kind)) == CAST_OF_SHAPE_CPU[kind]


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_cast_of_shape_values_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    check_real("qnn", sys.executable, {k: cast_of_shape(k) for k in CAST_OF_SHAPE_CPU})
