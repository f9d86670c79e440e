"""QNN HTP leaves a DequantizeLinear of int32 constants that belongs to no node unit to the
CPU (``refused_qdq_units`` of qnn-htp, with ``partition_units.lone_qdq_nodes``).

An int32 DequantizeLinear runs on HTP as the bias of a Conv, Gemm or normalization unit.
On its own (read by a QuantizeLinear, as in the corpus's 8-bit QDQ BERT, ViT and
SegFormer, whose quantizer turned the exporter's shared zero biases into one int32
DequantizeLinear that ORT then duplicates per reader; or by a float Mul) it stays on the
CPU, while a uint8 or int8 one in the same place runs on HTP.

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``), both graph levels.
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
NP = {"int32": np.int32, "uint8": np.uint8, "int8": np.int8}


def lone_dq_model(dtype: str, reader: str, readers: int = 1) -> onnx.ModelProto:
    """A DequantizeLinear ``dq_src`` of ``dtype`` constants read by ``readers`` QuantizeLinear
    nodes (``reader="q"``: each then dequantized again and added to the quantized input) or
    by a float Mul (``reader="mul"``)."""
    inits = [
        numpy_helper.from_array(np.array(0.02, np.float32), "s"),
        numpy_helper.from_array(np.array(128, np.uint8), "zp"),
        numpy_helper.from_array(np.arange(8).astype(NP[dtype]).reshape(1, 8), "bq"),
        numpy_helper.from_array(np.array(0.0004, np.float32), "bs"),
        numpy_helper.from_array(np.array(0, NP[dtype]), "bzp"),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["xq"], "q_x"),
        helper.make_node("DequantizeLinear", ["xq", "s", "zp"], ["xd"], "dq_x"),
        helper.make_node("DequantizeLinear", ["bq", "bs", "bzp"], ["bf"], "dq_src"),
    ]
    if reader == "mul":
        nodes.append(helper.make_node("Mul", ["xd", "bf"], ["y"], "mul"))
    else:
        cur = "xd"
        for k in range(readers):
            nodes += [
                helper.make_node("QuantizeLinear", ["bf", "s", "zp"], [f"bq{k}"], f"q_b{k}"),
                helper.make_node("DequantizeLinear", [f"bq{k}", "s", "zp"], [f"bd{k}"], f"dq_b{k}"),
                helper.make_node("Add", [cur, f"bd{k}"], [f"a{k}"], f"add{k}"),
                helper.make_node("QuantizeLinear", [f"a{k}", "s", "zp"], [f"aq{k}"], f"q_a{k}"),
                helper.make_node("DequantizeLinear", [f"aq{k}", "s", "zp"], [f"ad{k}"], f"dq_a{k}"),
            ]
            cur = f"ad{k}"
        nodes.append(helper.make_node("Relu", [cur], ["y"], "relu_out"))
    graph = helper.make_graph(
        nodes,
        f"lone_{dtype}_{reader}{readers}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    return model


CASES = [(d, r, k) for d in ("int32", "uint8", "int8") for r, k in (("q", 1), ("q", 2), ("mul", 1))]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}{c[2]}")
def test_a_lone_int32_dequantize_stays_on_cpu(case: tuple[str, str, int]) -> None:
    dtype, reader, readers = case
    parts = partitions(lone_dq_model(dtype, reader, readers), ["qnn"])
    for level in ("exported", "optimized"):
        plan = parts.plan(level)
        assert plan is not None
        # at the optimized level ORT gave each reader a copy ("dq_src/duplicated")
        copies = {p: ep for p, ep in plan.node_ep.items() if "dq_src" in p}
        assert copies, level
        expected = CPU_EP if dtype == "int32" else QNN
        assert set(copies.values()) == {expected}, (level, copies)
        if dtype == "int32":
            assert all("int32" in plan.released[p] for p in copies), plan.released


def test_an_int32_bias_in_a_conv_unit_still_runs_on_qnn() -> None:
    from .test_qnn_layout_pass import qdq_conv

    plan = partitions(qdq_conv("dq"), ["qnn"]).plan("exported")
    assert plan is not None
    assert plan.node_ep["main/dq_b"] == QNN


def shared_bias_model(conv_last: bool, lone_readers: int) -> onnx.ModelProto:
    """A QDQ Conv whose int32 bias DequantizeLinear ``dq_b`` is also read by
    ``lone_readers`` QuantizeLinear nodes (the shared zero bias of the corpus's 8-bit QDQ
    ViT, BERT and SegFormer): ORT gives each reader a copy, the first reader in node order
    keeping ``dq_b``, so with ``conv_last`` the Conv's copy is the last
    ``dq_b/duplicated...``."""
    inits = [
        numpy_helper.from_array(np.array(0.02, np.float32), "s"),
        numpy_helper.from_array(np.array(128, np.uint8), "zp"),
        numpy_helper.from_array((np.arange(144) % 7 - 3).astype(np.int8).reshape(4, 4, 3, 3), "wq"),
        numpy_helper.from_array(np.array(0.01, np.float32), "ws"),
        numpy_helper.from_array(np.array(0, np.int8), "wzp"),
        numpy_helper.from_array(np.arange(4).astype(np.int32), "bq"),
        numpy_helper.from_array(np.array(0.0002, np.float32), "bs"),
        numpy_helper.from_array(np.array(0, np.int32), "bzp"),
    ]
    head = [
        helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["xq"], "q_x"),
        helper.make_node("DequantizeLinear", ["xq", "s", "zp"], ["xd"], "dq_x"),
        helper.make_node("DequantizeLinear", ["wq", "ws", "wzp"], ["wd"], "dq_w"),
        helper.make_node("DequantizeLinear", ["bq", "bs", "bzp"], ["bf"], "dq_b"),
    ]
    conv = [
        helper.make_node("Conv", ["xd", "wd", "bf"], ["c"], "conv", pads=[1, 1, 1, 1]),
        helper.make_node("QuantizeLinear", ["c", "s", "zp"], ["cq"], "q_c"),
        helper.make_node("DequantizeLinear", ["cq", "s", "zp"], ["cd"], "dq_c"),
    ]
    lone = []
    cur = "cd"
    for k in range(lone_readers):
        lone += [
            helper.make_node("QuantizeLinear", ["bf", "s", "zp"], [f"bq{k}"], f"q_b{k}"),
            helper.make_node("DequantizeLinear", [f"bq{k}", "s", "zp"], [f"bd{k}"], f"dq_b{k}"),
        ]
    tail = []
    for k in range(lone_readers):
        tail += [
            helper.make_node("Add", [cur, f"bd{k}"], [f"a{k}"], f"add{k}"),
            helper.make_node("QuantizeLinear", [f"a{k}", "s", "zp"], [f"aq{k}"], f"q_a{k}"),
            helper.make_node("DequantizeLinear", [f"aq{k}", "s", "zp"], [f"ad{k}"], f"dq_a{k}"),
        ]
        cur = f"ad{k}"
    tail.append(helper.make_node("Relu", [cur], ["y"], "relu_out"))
    nodes = head + (lone + conv if conv_last else conv + lone) + tail
    graph = helper.make_graph(
        nodes,
        "shared_bias",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 4, 4])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    return model


SHARED = [(c, r) for c in (True, False) for r in (1, 2, 3)]


@pytest.mark.parametrize("case", SHARED, ids=lambda c: f"conv_last{c[0]}-{c[1]}")
def test_the_conv_copy_of_a_shared_bias_runs_on_qnn(case: tuple[bool, int]) -> None:
    # the copies exist in ORT's level-1 graph (the exported graph holds dq_b alone)
    conv_last, readers = case
    plan = partitions(shared_bias_model(conv_last, readers), ["qnn"]).plan("optimized")
    assert plan is not None
    tokens = [f"dq_b/duplicated_token_{2 * k + 1}" for k in range(readers - 1)]
    copies = ["dq_b", "dq_b/duplicated", *tokens]
    conv_copy = copies[-1] if conv_last else copies[0]
    got = {
        p.split("/", 1)[1].strip('"'): ep
        for p, ep in plan.node_ep.items()
        if "dq_b/" in p or p.endswith("/dq_b")
    }
    assert got == {c: QNN if c == conv_copy else CPU_EP for c in copies}, got


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_shared_bias_copies_on_real_qnn() -> None:
    """Each copy is matched to the session's node of the same name (ORT's generated names
    all strip to one stem; the comparison used to pair the first one reported, the Conv's
    on QNN, with ``dq_b/duplicated``)."""
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    models = {f"shared_{c}_{r}": shared_bias_model(c, r) for c, r in SHARED}
    check_real("qnn", sys.executable, models)


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_lone_dequantize_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    models = {f"{d}_{r}{k}": lone_dq_model(d, r, k) for d, r, k in CASES}
    check_real("qnn", sys.executable, models)
