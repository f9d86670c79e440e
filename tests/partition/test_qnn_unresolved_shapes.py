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

from onnxlint.analyses.partition import CPU_EP

from .conftest import check_real, partitions


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
    plan = partitions(mask_chain(*case), ["qnn"]).plan("exported")
    assert plan is not None
    assert {p for p, ep in plan.node_ep.items() if ep == CPU_EP} == CASES[case]


def test_unresolved_output_stays_unknown_after_level1() -> None:
    # ORT's own constant folding keeps the node: the level-1 graph still has it, unknown
    plan = partitions(mask_chain("GreaterOrEqual", 14), ["qnn"]).plan("optimized")
    if plan is None:
        pytest.skip("no level-1 graph (onnxruntime is not installed)")
    assert plan.node_ep.get("main/cmp") == CPU_EP
    assert plan.node_ep.get("main/and") == CPU_EP


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_comparison_without_a_shape_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    models = {f"{op}_{opset}_{int(c)}": mask_chain(op, opset, c) for op, opset, c in CASES}
    check_real("qnn", sys.executable, models)
