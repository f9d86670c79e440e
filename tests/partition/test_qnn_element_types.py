"""QNN HTP refuses a GatherND of bool data ("Failed to create GatherND node"; issue #16,
the dynamo exports' attention-mask GatherND) and takes float, int32 and int64 data (int64 only inside a graph).

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``).
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from .conftest import check_real, qnn_cpu_nodes

ELEM = {"bool": TensorProto.BOOL, "float": TensorProto.FLOAT}


def gather_nd(dtype: str) -> onnx.ModelProto:
    """Identity -> GatherND(constant indices) -> Identity on ``dtype`` data."""
    et = ELEM[dtype]
    graph = helper.make_graph(
        [
            helper.make_node("Identity", ["d"], ["d2"], "pre"),
            helper.make_node("GatherND", ["d2", "idx"], ["g"], "gnd"),
            helper.make_node("Identity", ["g"], ["y"], "post"),
        ],
        "gather_nd",
        [helper.make_tensor_value_info("d", et, [4, 8])],
        [helper.make_tensor_value_info("y", et, [2, 8])],
        [numpy_helper.from_array(np.array([[1], [3]], np.int64), "idx")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


#: data type -> nodes on CPU
CASES = {"bool": {"main/gnd"}, "float": set()}


@pytest.mark.parametrize("dtype", sorted(CASES))
def test_gather_nd_data_types_on_qnn(dtype: str) -> None:
    assert qnn_cpu_nodes(gather_nd(dtype)) == CASES[dtype]


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_gather_nd_data_types_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    check_real("qnn", sys.executable, {d: gather_nd(d) for d in CASES})
