"""Static shapes through what onnxruntime-genai's model builder writes (issue #16, ninth
held-out batch), so that QNN HTP, which takes only nodes whose tensors all have static
shapes, is predicted to take what it takes once the input dims are fixed.

Two things left the builder's decoders with symbolic dims where ORT has static ones:

- the builder declares the output of ``Constant`` ``[1]`` (the ReduceSum axes of its
  attention-mask subgraph) as a scalar. ONNX's strict inference fails on the conflict
  ("Inferred shape and existing shape differ in rank: (1) vs (0)") and its lenient pass
  leaves the Constant's value out, so the ReduceSum reading it keeps its declared
  ``(batch_size)``. ORT turns every ``Constant`` node into an initializer when it loads a
  graph (``Graph::Graph``, ``onnxruntime/core/graph/graph.cc``), whose type is its tensor's:
  the subgraph's shapes are static. The inference now retries without the declarations of
  Constant outputs when strict inference fails.
- ``com.microsoft.GroupQueryAttention`` had no inference rule: its output kept the
  declared ``(batch_size, sequence_length, 64)``, and every node after it with them. Its
  rule is ORT's (``BaseGroupQueryAttentionTypeAndShapeInference``,
  ``onnxruntime/core/graph/contrib_ops/bert_defs.cc``).

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``): QNN takes the ReduceSum, Sub and Cast of the first model and the MatMul
after the GroupQueryAttention of the second (which stays on the CPU) at both levels.
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint.ep_names import CPU_EP

from .conftest import check_real, partitions

QNN = "QNNExecutionProvider"
SYMBOLIC = ["batch_size", "sequence_length"]


def _model(graph: onnx.GraphProto) -> onnx.ModelProto:
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)],
    )
    model.ir_version = 10
    return model


def mask_subgraph(declared_rank: int) -> onnx.ModelProto:
    """The builder's attention-mask subgraph: ReduceSum(mask, Constant [1]) - [1], cast to
    int32, with the Constant's output declared of rank ``declared_rank`` and the others of
    the symbolic ``(batch_size)`` the builder writes."""
    one = numpy_helper.from_array(np.array([1], np.int64), "one")
    graph = helper.make_graph(
        [
            helper.make_node("Constant", [], ["c"], "const", value=one),
            helper.make_node("ReduceSum", ["mask", "c"], ["rs"], "reduce", keepdims=0),
            helper.make_node("Sub", ["rs", "c"], ["sub"], "sub"),
            helper.make_node("Cast", ["sub"], ["y"], "cast", to=TensorProto.INT32),
        ],
        "genai_mask",
        [helper.make_tensor_value_info("mask", TensorProto.INT64, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [1])],
        value_info=[
            helper.make_tensor_value_info("c", TensorProto.INT64, [1] * declared_rank),
            helper.make_tensor_value_info("rs", TensorProto.INT64, SYMBOLIC[:1]),
            helper.make_tensor_value_info("sub", TensorProto.INT64, SYMBOLIC[:1]),
        ],
    )
    return _model(graph)


def gqa_then_matmul() -> onnx.ModelProto:
    """Packed-QKV GroupQueryAttention (4 query heads, 2 key/value heads of 16) with a
    key/value cache, then a MatMul of its output; the attention output declared with the
    builder's symbolic ``(batch_size, sequence_length, 64)``."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((64, 64)).astype(np.float32), "w")
    graph = helper.make_graph(
        [
            helper.make_node(
                "GroupQueryAttention",
                ["qkv", "", "", "past_k", "past_v", "seqlens_k", "total_len"],
                ["attn", "present_k", "present_v"],
                "gqa",
                domain="com.microsoft",
                num_heads=4,
                kv_num_heads=2,
            ),
            helper.make_node("MatMul", ["attn", "w"], ["y"], "proj"),
        ],
        "genai_gqa",
        [
            helper.make_tensor_value_info("qkv", TensorProto.FLOAT, [1, 8, 128]),
            helper.make_tensor_value_info("past_k", TensorProto.FLOAT, [1, 2, 8, 16]),
            helper.make_tensor_value_info("past_v", TensorProto.FLOAT, [1, 2, 8, 16]),
            helper.make_tensor_value_info("seqlens_k", TensorProto.INT32, [1]),
            helper.make_tensor_value_info("total_len", TensorProto.INT32, []),
        ],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 64]),
            helper.make_tensor_value_info("present_k", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("present_v", TensorProto.FLOAT, None),
        ],
        [w],
        value_info=[helper.make_tensor_value_info("attn", TensorProto.FLOAT, [*SYMBOLIC, 64])],
    )
    return _model(graph)


MODELS = {
    "mask_declared_scalar": mask_subgraph(0),
    "mask_declared_vector": mask_subgraph(1),
    "gqa_then_matmul": gqa_then_matmul(),
}
#: model -> {node: the EP QNN's session gives it}
EXPECTED = {
    "mask_declared_scalar": {"main/reduce": QNN, "main/sub": QNN, "main/cast": QNN},
    "mask_declared_vector": {"main/reduce": QNN, "main/sub": QNN, "main/cast": QNN},
    "gqa_then_matmul": {"main/gqa": CPU_EP, "main/proj": QNN},
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_genai_decoder_shapes_are_static_for_qnn(name: str) -> None:
    plan = partitions(MODELS[name], ["qnn"]).plan("exported")
    assert plan is not None
    assert {n: plan.node_ep[n] for n in EXPECTED[name]} == EXPECTED[name]


def test_group_query_attention_output_is_inferred() -> None:
    """The rule gives ORT's shape to the output of a packed query: (batch, sequence, heads
    x head size) (``tests/analyses/test_contrib_types.py`` compares every output with a CPU
    session's, the present key/value included)."""
    from onnxlint.analyses.shapes import Shapes

    assert Shapes.of_model(gqa_then_matmul()).shape("attn") == (1, 8, 64)


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_genai_decoder_shapes_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    check_real("qnn", sys.executable, MODELS)
