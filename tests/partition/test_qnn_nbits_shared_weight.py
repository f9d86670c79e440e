"""QNN HTP adds a ``com.microsoft`` MatMulNBits weight as the packed weight of the Conv2d it
builds; when another node it takes reads the same uint8 initializer, the one of the two it
validates first (in ORT's topological order) adds the tensor and the other fails ("Failed
to add Conv2d node." for the MatMulNBits) and stays on the CPU (issue #16, ninth held-out
batch: onnxruntime-genai's int4 Gemma ties its embedding to the LM head, and the embedding's
Reshape of the LM head's MatMulNBits weight, validated first, left that MatMulNBits on the
CPU at ``qnn-fixed/disabled``). At the basic level ORT folds the Reshape of the constant and
QNN takes every node.

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``); the profile's ``integer_tensor_registration.weight_ops``.
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


def shared_weight(side_first: bool, side_op: str = "Reshape") -> onnx.ModelProto:
    """Relu -> MatMulNBits (4 bits, K 64, N 32) -> Relu, its weight also read by a Reshape
    or Transpose whose output is a graph output; ``side_first``: that node comes first in
    the file (ORT's topological order then validates it last: a reverse DFS from the leaves,
    the last leaf first)."""
    rng = np.random.default_rng(0)
    if side_op == "Reshape":
        side = helper.make_node("Reshape", ["w", "shape"], ["r"], "side")
        r_shape = [32, 32]
    else:
        side = helper.make_node("Transpose", ["w"], ["r"], "side", perm=[1, 0, 2])
        r_shape = [2, 32, 16]
    main = [
        helper.make_node("Relu", ["x"], ["a"], "pre"),
        helper.make_node(
            "MatMulNBits", ["a", "w", "s"], ["m"], "mnb", domain="com.microsoft",
            K=64, N=32, bits=4, block_size=32,
        ),
        helper.make_node("Relu", ["m"], ["y"], "post"),
    ]  # fmt: skip
    graph = helper.make_graph(
        [side, *main] if side_first else [*main, side],
        f"shared_{side_op}_{side_first}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 64])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 32]),
            helper.make_tensor_value_info("r", TensorProto.UINT8, r_shape),
        ],
        [
            numpy_helper.from_array(rng.integers(0, 255, (32, 2, 16)).astype(np.uint8), "w"),
            numpy_helper.from_array(np.full((64,), 0.01, np.float32), "s"),
            numpy_helper.from_array(np.array([32, 32], np.int64), "shape"),
        ],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)],
    )
    model.ir_version = 10
    return model


#: name -> (model, the EP of the MatMulNBits and of the other reader at the disabled level)
CASES = {
    "reshape_validated_first": (shared_weight(False), CPU_EP, QNN),
    "reshape_validated_last": (shared_weight(True), QNN, CPU_EP),
    "transpose_validated_last": (shared_weight(True, "Transpose"), QNN, CPU_EP),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_first_reader_of_a_matmulnbits_weight_adds_it(name: str) -> None:
    model, nbits, side = CASES[name]
    plan = partitions(model, ["qnn"]).plan("exported")
    assert plan is not None
    assert (plan.node_ep["main/mnb"], plan.node_ep["main/side"]) == (nbits, side)


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_nbits_shared_weight_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    check_real("qnn", sys.executable, {n: c[0] for n, c in CASES.items()})
