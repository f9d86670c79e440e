"""ORT's graph resolution propagates an Add, Sub, Mul or Div of one-element shape values
(``core/graph/data_propagation``), so with named input dims fixed a Range up to
``Gather(Shape(x), 1) + Gather(Shape(y), 1)`` has a static output and QNN takes what
follows it. The dynamo exporter writes that for a key/value cache's total length
(``past_sequence + sequence``): the rank-5 int64 Concat after it then lands on QNN, whose
rank-5 cast at the partition's boundary crashes the session (OL513; held-out corpus:
the dynamo GPT-2 and Llama decoders with a cache). The lint had left that chain on the CPU
("dynamic dimension(s) computed at run time"), declared dims or not. A Slice ending at
the Unsqueeze of such a sum has a static output too. Only scalars count: a sum of
one-element vectors (``Gather(Shape(x), [-1]) + [2]``: TorchScript's rotary halves and
Swin's window shapes on the corpus) sizes nothing, nor does a sum with a constant operand
(``Shape(x)[1] * 2``; onnx-asr's resampler on the corpus).

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``), optimizations disabled, dims ``past`` and ``seq`` fixed to 8.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint.ep_names import CPU_EP

from .conftest import partitions

QNN = "QNNExecutionProvider"
DIMS = {"past": 8, "seq": 8}


def total_length(op: str, by_constant: bool = False) -> onnx.ModelProto:
    """Range(0, ``op``(Shape(x)[1], Shape(y)[1]), 1) -> Cast -> Unsqueeze -> Relu ->
    Sigmoid, x [1, past] and y [1, seq]; ``by_constant``: ``op``(Shape(x)[1], 2)."""
    f = TensorProto.FLOAT
    inits = [
        numpy_helper.from_array(np.array(1, np.int64), "one"),
        numpy_helper.from_array(np.array(0, np.int64), "zero"),
        numpy_helper.from_array(np.array([0], np.int64), "axis0"),
        numpy_helper.from_array(np.array(2, np.int64), "two"),
    ]
    mk = helper.make_node
    nodes = [
        mk("Shape", ["x"], ["sx"], "shape_x"),
        mk("Gather", ["sx", "one"], ["px"], "gather_x", axis=0),
        mk("Shape", ["y"], ["sy"], "shape_y"),
        mk("Gather", ["sy", "one"], ["py"], "gather_y", axis=0),
        mk(op, ["px", "two" if by_constant else "py"], ["total"], "total"),
        mk("Range", ["zero", "total", "one"], ["r"], "range"),
        mk("Cast", ["r"], ["rf"], "cast", to=f),
        mk("Unsqueeze", ["rf", "axis0"], ["u"], "unsq"),
        mk("Relu", ["u"], ["v"], "relu"),
        mk("Sigmoid", ["v"], ["z"], "sig"),
    ]
    graph = helper.make_graph(
        nodes,
        "total_length",
        [
            helper.make_tensor_value_info("x", f, [1, "past"]),
            helper.make_tensor_value_info("y", f, [1, "seq"]),
        ],
        [helper.make_tensor_value_info("z", f, None)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)


def sliced_to_total() -> onnx.ModelProto:
    """Slice(w [1, 32], 0, Unsqueeze(Shape(x)[1] + Shape(y)[1]), axis 1) -> Relu."""
    f = TensorProto.FLOAT
    inits = [
        numpy_helper.from_array(np.array(1, np.int64), "one"),
        numpy_helper.from_array(np.array([0], np.int64), "zeros"),
        numpy_helper.from_array(np.array([0], np.int64), "axis0"),
        numpy_helper.from_array(np.array([1], np.int64), "axis1"),
    ]
    mk = helper.make_node
    nodes = [
        mk("Shape", ["x"], ["sx"], "shape_x"),
        mk("Gather", ["sx", "one"], ["px"], "gather_x", axis=0),
        mk("Shape", ["y"], ["sy"], "shape_y"),
        mk("Gather", ["sy", "one"], ["py"], "gather_y", axis=0),
        mk("Add", ["px", "py"], ["total"], "total"),
        mk("Unsqueeze", ["total", "axis0"], ["end"], "end"),
        mk("Slice", ["w", "zeros", "end", "axis1"], ["s"], "slice"),
        mk("Relu", ["s"], ["z"], "relu"),
    ]
    graph = helper.make_graph(
        nodes,
        "sliced_to_total",
        [
            helper.make_tensor_value_info("x", f, [1, "past"]),
            helper.make_tensor_value_info("y", f, [1, "seq"]),
            helper.make_tensor_value_info("w", f, [1, 32]),
        ],
        [helper.make_tensor_value_info("z", f, None)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)


def test_the_sum_sizes_a_slice() -> None:
    plan = partitions(sliced_to_total(), ["qnn"], assume_dims=DIMS).plan("exported")
    assert plan is not None
    assert plan.node_ep["main/relu"] == QNN


OPS = ("Add", "Mul", "Div")
AFTER = ("cast", "unsq", "relu", "sig")


@pytest.mark.parametrize("op", OPS)
def test_a_range_to_a_sum_of_fixed_dims_is_static(op: str) -> None:
    plan = partitions(total_length(op), ["qnn"], assume_dims=DIMS).plan("exported")
    assert plan is not None
    assert plan.node_ep["main/range"] == CPU_EP
    assert all(plan.node_ep[f"main/{n}"] == QNN for n in AFTER), plan.node_ep


@pytest.mark.parametrize("op", OPS)
def test_a_constant_operand_is_not_propagated(op: str) -> None:
    plan = partitions(total_length(op, True), ["qnn"], assume_dims=DIMS).plan("exported")
    assert plan is not None
    assert all(plan.node_ep[f"main/{n}"] == CPU_EP for n in AFTER), plan.node_ep


def test_without_fixed_dims_it_stays_dynamic() -> None:
    plan = partitions(total_length("Add"), ["qnn"]).plan("exported")
    assert plan is not None
    assert all(plan.node_ep[f"main/{n}"] == CPU_EP for n in AFTER), plan.node_ep


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_propagated_arithmetic_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    from onnxlint.runtime.client import SessionRequest, run_sessions
    from onnxlint.runtime.runners import EpSpec, resolve_runner

    spec = EpSpec.for_ep("qnn")
    runner = resolve_runner(spec.provider, None, root=Path.cwd())
    with tempfile.TemporaryDirectory() as tmp:
        for op in OPS:
            for by_constant in (False, True):
                path = Path(tmp) / f"{op}{int(by_constant)}.onnx"
                onnx.save(total_length(op, by_constant), path)
                req = SessionRequest(str(path), id=op, optimization="disabled", free_dims=DIMS)
                [res] = run_sessions(
                    [req], spec, runner=runner, timeout_s=120, max_items_per_worker=1
                )
                assert res.ok, res.error
                eps = {n.name: n.ep for n in res.assignment}
                assert eps["range"] == CPU_EP, (op, eps)
                want = CPU_EP if by_constant else QNN
                assert all(eps[n] == want for n in AFTER), (op, by_constant, eps)
        path = Path(tmp) / "slice.onnx"
        onnx.save(sliced_to_total(), path)
        req = SessionRequest(str(path), id="slice", optimization="disabled", free_dims=DIMS)
        [res] = run_sessions([req], spec, runner=runner, timeout_s=120, max_items_per_worker=1)
        assert res.ok, res.error
        assert {n.name: n.ep for n in res.assignment}["relu"] == QNN
