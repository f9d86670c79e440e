"""QNN HTP takes a ``com.microsoft`` MatMulNBits only when its ``K`` is a multiple of its
``block_size`` ("K must be divisible by block_size.") and its input A has rank 3 (issue
#16, third held-out batch: the nbits models' MLP down projection reads an intermediate
size of 37, so at ``qnn-fixed/default`` QNN was predicted to take two MatMulNBits that
stay on the CPU). The profile says so with a ``multiple_of`` constraint and a rank
constraint on input 0.

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

from .conftest import check_real, partitions

QNN = "QNNExecutionProvider"
N = 32

#: name -> (K, block_size, rank of input A, whether QNN takes the MatMulNBits)
CASES = {
    "k64_b32": (64, 32, 3, True),
    "k48_b16": (48, 16, 3, True),
    "k37_b32": (37, 32, 3, False),
    "k48_b32": (48, 32, 3, False),
    "rank2": (64, 32, 2, False),
    "rank4": (64, 32, 4, False),
}


def matmul_nbits(k: int, block: int, rank: int) -> onnx.ModelProto:
    """Relu -> MatMulNBits (4 bits, constant weight and scales) -> Relu."""
    blocks = -(-k // block)
    rng = np.random.default_rng(0)
    weight = rng.integers(0, 255, (N, blocks, block // 2)).astype(np.uint8)
    scales = np.full((N * blocks,), 0.01, np.float32)
    lead = {2: [4], 3: [1, 4], 4: [1, 2, 4]}[rank]
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x0"], ["x"], "pre"),
            helper.make_node(
                "MatMulNBits",
                ["x", "w", "s"],
                ["m"],
                "mnb",
                domain="com.microsoft",
                K=k,
                N=N,
                bits=4,
                block_size=block,
            ),
            helper.make_node("Relu", ["m"], ["y"], "post"),
        ],
        f"matmul_nbits_k{k}_b{block}_r{rank}",
        [helper.make_tensor_value_info("x0", TensorProto.FLOAT, [*lead, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [*lead, N])],
        [numpy_helper.from_array(weight, "w"), numpy_helper.from_array(scales, "s")],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
    )
    model.ir_version = 8
    return model


@pytest.mark.parametrize(
    ("case", "k", "block", "rank", "taken"), [(c, *v) for c, v in CASES.items()]
)
def test_matmulnbits_needs_k_a_multiple_of_block_size_and_rank_3(
    case: str, k: int, block: int, rank: int, taken: bool
) -> None:
    plan = partitions(matmul_nbits(k, block, rank), ["qnn"]).plan("exported")
    assert plan is not None
    assert plan.node_ep["main/mnb"] == (QNN if taken else CPU_EP), case


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_matmulnbits_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    check_real("qnn", sys.executable, {c: matmul_nbits(*v[:3]) for c, v in CASES.items()})
