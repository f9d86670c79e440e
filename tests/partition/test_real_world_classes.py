"""Classes of disagreement between the prediction and real sessions on real-world models
(issue #16), each with a small model that shows the class.

Every class has a prediction test (no EP needed) and, marked ``ort_qnn`` /
``ort_openvino``, the same model checked against the real EP. The expectations were
measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``) and onnxruntime-openvino 1.24.1 (CPU device).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint import profiles
from onnxlint.analyses.capability import NodeFacts, evaluate
from onnxlint.ep_names import CPU_EP

from ..conftest import REPO
from .conftest import check_real, partitions

QNN = "QNNExecutionProvider"
OV = "OpenVINOExecutionProvider"
_ELEM = {
    "uint8": TensorProto.UINT8,
    "int8": TensorProto.INT8,
    "uint16": TensorProto.UINT16,
    "int16": TensorProto.INT16,
}


# ---------------------------------------------------------------------------
# Class 1: QDQ in the com.microsoft domain (16-bit activations as onnxruntime.quantization
# writes them for QNN), and ai.onnx QDQ with 16-bit activations


def qdq_conv_model(domain: str, activations: str, weights: str = "uint8") -> onnx.ModelProto:
    """Conv -> Relu -> Conv -> Add -> GlobalAveragePool -> Flatten -> Gemm, every tensor
    between them quantized and dequantized the way onnxruntime.quantization's QNN config
    writes it (Q/DQ named ``<value>_QuantizeLinear``; ``domain`` ``com.microsoft`` is what
    it writes for 16-bit activations below opset 21 and with ``UseQDQContribOps``)."""
    rng = np.random.default_rng(0)
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []

    def qparams(name: str, dtype: str) -> tuple[str, str]:
        inits.append(numpy_helper.from_array(np.array(0.01, np.float32), f"{name}_scale"))
        zp = helper.make_tensor(f"{name}_zero_point", _ELEM[dtype], [], [0])
        inits.append(zp)
        return f"{name}_scale", f"{name}_zero_point"

    def qdq(value: str) -> str:
        s, z = qparams(value, activations)
        q, dq = f"{value}_QuantizeLinear", f"{value}_DequantizeLinear"
        nodes.append(
            helper.make_node("QuantizeLinear", [value, s, z], [f"{q}_Output"], q, domain=domain)
        )
        nodes.append(
            helper.make_node(
                "DequantizeLinear", [f"{q}_Output", s, z], [f"{dq}_Output"], dq, domain=domain
            )
        )
        return f"{dq}_Output"

    def weight(name: str, shape: list[int]) -> str:
        s, z = qparams(name, weights)
        data = rng.integers(0, 100, size=shape)
        inits.append(
            helper.make_tensor(f"{name}_quantized", _ELEM[weights], shape, data.ravel().tolist())
        )
        out = f"{name}_DequantizeLinear_Output"
        nodes.append(
            helper.make_node(
                "DequantizeLinear",
                [f"{name}_quantized", s, z],
                [out],
                f"{name}_DequantizeLinear",
                domain=domain,
            )
        )
        return out

    def bias(name: str, n: int) -> str:
        inits.append(helper.make_tensor(f"{name}_quantized", TensorProto.INT32, [n], [1] * n))
        inits.append(numpy_helper.from_array(np.array(0.0001, np.float32), f"{name}_scale"))
        inits.append(helper.make_tensor(f"{name}_zero_point", TensorProto.INT32, [], [0]))
        nodes.append(
            helper.make_node(
                "DequantizeLinear",
                [f"{name}_quantized", f"{name}_scale", f"{name}_zero_point"],
                [name],
                f"{name}_DequantizeLinear",
                domain=domain,
            )
        )
        return name

    x = qdq("x")
    w1, b1 = weight("w1", [8, 3, 3, 3]), bias("b1", 8)
    nodes.append(helper.make_node("Conv", [x, w1, b1], ["r1"], "conv1", pads=[1, 1, 1, 1]))
    r1 = qdq("r1")
    w2, b2 = weight("w2", [8, 8, 3, 3]), bias("b2", 8)
    nodes.append(helper.make_node("Conv", [r1, w2, b2], ["c2"], "conv2", pads=[1, 1, 1, 1]))
    nodes.append(helper.make_node("Add", [qdq("c2"), r1], ["a1"], "add1"))
    nodes.append(helper.make_node("GlobalAveragePool", [qdq("a1")], ["g"], "gap"))
    nodes.append(helper.make_node("Flatten", [qdq("g")], ["fl"], "flat"))
    wg, bg = weight("wg", [10, 8]), bias("bg", 10)
    nodes.append(helper.make_node("Gemm", [qdq("fl"), wg, bg], ["gemm_out"], "gemm", transB=1))
    s, z = qparams("y", activations)
    nodes.append(
        helper.make_node(
            "QuantizeLinear", ["gemm_out", s, z], ["y_q"], "y_QuantizeLinear", domain=domain
        )
    )
    nodes.append(
        helper.make_node(
            "DequantizeLinear", ["y_q", s, z], ["y"], "y_DequantizeLinear", domain=domain
        )
    )
    graph = helper.make_graph(
        nodes,
        "qdq_conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        inits,
    )
    opsets = [helper.make_opsetid("", 21)]
    if domain == "com.microsoft":
        opsets.append(helper.make_opsetid("com.microsoft", 1))
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 10
    return model


QDQ_CASES = {
    "ms_u16": ("com.microsoft", "uint16", "uint8"),
    "ms_u8": ("com.microsoft", "uint8", "uint8"),
    "ms_i16": ("com.microsoft", "int16", "int8"),
    "onnx_u16": ("", "uint16", "uint8"),
}
#: the graph-input Q and graph-output DQ stay on CPU ("QNN EP is configured to not take Q
#: nodes that consume a graph input"); everything else is one QNN partition
QNN_CPU_NODES = {"main/x_QuantizeLinear", "main/y_DequantizeLinear"}


@pytest.mark.parametrize("case", sorted(QDQ_CASES))
def test_qdq_graph_is_predicted_on_qnn(case: str) -> None:
    plan = partitions(qdq_conv_model(*QDQ_CASES[case]), ["qnn"]).plan("exported")
    assert plan is not None
    assert len(plan.partitions_on(QNN)) == 1
    cpu = {p for p, ep in plan.node_ep.items() if ep == CPU_EP}
    assert cpu == QNN_CPU_NODES


@pytest.mark.parametrize("case", sorted(QDQ_CASES))
def test_qdq_graph_is_predicted_on_openvino(case: str) -> None:
    plan = partitions(qdq_conv_model(*QDQ_CASES[case]), ["openvino"]).plan("exported")
    assert plan is not None
    assert len(plan.partitions_on(OV)) == 1
    assert set(plan.node_ep.values()) == {OV}


def test_contrib_qdq_outputs_get_static_shapes() -> None:
    """ONNX has no schema for com.microsoft Q/DQ; ORT's has, so QNN sees static shapes
    all the way down (the prediction used to refuse Flatten and Gemm for 'Cannot get shape')."""
    ctx_plan = partitions(qdq_conv_model("com.microsoft", "uint16"), ["qnn"]).plan("exported")
    assert ctx_plan is not None
    assert ctx_plan.node_ep["main/flat"] == QNN
    assert ctx_plan.node_ep["main/gemm"] == QNN


# ---------------------------------------------------------------------------
# The same models against the real EPs


def _openvino_runner() -> Path:
    runner = REPO / ".venv-openvino" / "bin" / "python"
    if not runner.exists():
        pytest.skip("the OpenVINO runner venv (.venv-openvino, .ci/setup-openvino.sh) is missing")
    return runner


def _qdq_models(cases: list[str]) -> dict[str, onnx.ModelProto]:
    return {c: qdq_conv_model(*QDQ_CASES[c]) for c in cases}


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_qdq_models_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    # ms_i16 is left out: QNN refuses the int16 GlobalAveragePool unit after the layout
    # transform and the session fails (an ORT layout-transformer error, not a placement)
    check_real("qnn", sys.executable, _qdq_models(["ms_u16", "ms_u8", "onnx_u16"]))


@pytest.mark.slow
@pytest.mark.ort_openvino
def test_qdq_models_on_real_openvino() -> None:
    runner = _openvino_runner()
    check_real("openvino", str(runner), _qdq_models(sorted(QDQ_CASES)))


# ---------------------------------------------------------------------------
# Class 2: int64 (and other integer) tensors on QNN: claimed between QNN nodes (QNN
# computes int64 as int32); an int64 graph output is refused by Transpose and Cast


def int_chain(dtype: str, boundary: bool) -> onnx.ModelProto:
    """Relu -> Cast(dtype) -> Transpose -> Gather -> Cast(float) -> Relu, or with
    ``boundary`` the same from a ``dtype`` graph input (no Relu and first Cast)."""
    elem = getattr(TensorProto, dtype.upper())
    nodes = [
        helper.make_node("Relu", ["x"], ["xr"], "pre"),
        helper.make_node("Cast", ["xr"], ["xi"], "cast_in", to=elem),
        helper.make_node("Transpose", ["xi"], ["t"], "transpose", perm=[0, 2, 1]),
        helper.make_node("Gather", ["t", "idx"], ["yi"], "gather", axis=1),
        helper.make_node("Cast", ["yi"], ["yf"], "cast_out", to=TensorProto.FLOAT),
        helper.make_node("Relu", ["yf"], ["y"], "post"),
    ]
    x = ("x", TensorProto.FLOAT)
    if boundary:
        nodes, x = nodes[2:], ("xi", elem)
    graph = helper.make_graph(
        nodes,
        "int_chain",
        [helper.make_tensor_value_info(*x, [2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2, 3])],
        [numpy_helper.from_array(np.array([0, 2], np.int64), "idx")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


INT_CASES = {
    # inside the graph int64 and int32 run on QNN, the whole chain one partition
    "int64_inner": (("int64", False), set()),
    "int32_inner": (("int32", False), set()),
    # a non-quantized uint8 tensor: QNN fails to add the Transpose and the Gather
    "uint8_inner": (("uint8", False), {"main/transpose", "main/gather"}),
    # an int64 graph input is fine too (an int64 graph output is not, for Transpose/Cast)
    "int64_boundary": (("int64", True), set()),
    "int32_boundary": (("int32", True), set()),
}


@pytest.mark.parametrize("case", sorted(INT_CASES))
def test_integer_tensors_on_qnn(case: str) -> None:
    args, cpu = INT_CASES[case]
    plan = partitions(int_chain(*args), ["qnn"]).plan("exported")
    assert plan is not None
    assert {p for p, ep in plan.node_ep.items() if ep == CPU_EP} == cpu


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_integer_tensors_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    check_real("qnn", sys.executable, {c: int_chain(*a) for c, (a, _) in INT_CASES.items()})


#: (source type, target type, the Cast writes a graph output) -> claimed; measured on
#: Relu -> Cast(source) -> Cast(target) -> Cast(float) -> Relu and on single-node graphs
CAST_CASES = {
    ("int64", "float", False): True,
    ("float", "int64", False): True,
    ("int32", "int64", False): True,
    ("uint8", "float", False): True,
    ("float", "int64", True): False,
    ("float", "int16", False): False,
    ("float", "uint16", False): False,
    ("int8", "float", False): False,
    ("uint64", "float", False): False,
}


@pytest.mark.parametrize(("case", "claimed"), sorted(CAST_CASES.items()))
def test_cast_element_types_on_qnn(case: tuple[str, str, bool], claimed: bool) -> None:
    src, dst, graph_output = case
    facts = NodeFacts(
        op_type="Cast",
        opset=17,
        input_dtypes=(src,),
        output_dtypes=(dst,),
        input_shapes=((2, 3),),
        output_shapes=((2, 3),),
        graph_outputs=frozenset({0}) if graph_output else frozenset(),
    )
    assert evaluate(profiles.load_profile("qnn"), facts).claimed is claimed


# ---------------------------------------------------------------------------
# Class 5: with optimizations disabled ORT knows the output of Reshape(x, Shape(x)) and of
# a Reshape to a Concat of Shapes, but not of a Reshape to a shape computed through
# Gather, Slice, arithmetic or a Concat with an initializer (it propagates only Shape and
# Concat values), so QNN refuses that Reshape and what follows it
# ("Cannot get shape") even on a static graph; a default session folds the chain first


def shape_chain(chain: str) -> onnx.ModelProto:
    """Relu -> Reshape(to a shape computed by ``chain`` from Shape) -> Relu, static input."""
    ints = {
        "i0": np.array(0, np.int64),
        "ax": np.array([0], np.int64),
        "tail": np.array([32, 16], np.int64),
        "st": np.array([0], np.int64),
        "en": np.array([1], np.int64),
    }
    shape = [helper.make_node("Shape", ["xr"], ["s"], "shape")]
    if chain == "direct":
        target, out = "s", [1, 32, 4, 4]
    elif chain == "gather":
        shape += [
            helper.make_node("Gather", ["s", "i0"], ["b"], "gather", axis=0),
            helper.make_node("Unsqueeze", ["b", "ax"], ["bu"], "unsqueeze"),
            helper.make_node("Concat", ["bu", "tail"], ["shp"], "concat", axis=0),
        ]
        target, out = "shp", [1, 32, 16]
    elif chain == "concat_shapes":  # Concat(Shape(x)[:2], Shape(x)[2:]): ORT knows it
        shape = [
            helper.make_node("Shape", ["xr"], ["s1"], "shape", end=2),
            helper.make_node("Shape", ["xr"], ["s2"], "shape_tail", start=2),
            helper.make_node("Concat", ["s1", "s2"], ["shp"], "concat", axis=0),
        ]
        target, out = "shp", [1, 32, 4, 4]
    else:  # slice
        shape += [
            helper.make_node("Slice", ["s", "st", "en"], ["b"], "slice"),
            helper.make_node("Concat", ["b", "tail"], ["shp"], "concat", axis=0),
        ]
        target, out = "shp", [1, 32, 16]
    nodes = [
        helper.make_node("Relu", ["x"], ["xr"], "pre"),
        *shape,
        helper.make_node("Reshape", ["xr", target], ["r"], "reshape"),
        helper.make_node("Relu", ["r"], ["y"], "post"),
    ]
    used = {i for n in nodes for i in n.input}
    graph = helper.make_graph(
        nodes,
        "shape_chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)],
        [numpy_helper.from_array(v, k) for k, v in ints.items() if k in used],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


#: QNN never takes Shape itself ("Failed to add node")
SHAPE_CASES = {
    "direct": {"main/shape"},
    "concat_shapes": {"main/shape", "main/shape_tail"},
    "gather": {"main/shape", "main/reshape", "main/post"},
    "slice": {"main/shape", "main/reshape", "main/post"},
}


@pytest.mark.parametrize("chain", sorted(SHAPE_CASES))
def test_computed_reshape_shapes_on_qnn(chain: str) -> None:
    plan = partitions(shape_chain(chain), ["qnn"]).plan("exported")
    assert plan is not None
    assert {p for p, ep in plan.node_ep.items() if ep == CPU_EP} == SHAPE_CASES[chain]


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_computed_reshape_shapes_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    check_real("qnn", sys.executable, {c: shape_chain(c) for c in SHAPE_CASES})


# ---------------------------------------------------------------------------
# A DequantizeLinear of constants is a constant to QNN (its QDQ node units take the
# quantized weight as a static tensor) and to OpenVINO (which folds it): a QDQ Pad whose
# constant_value is DQ(initializer) runs on the EP (156 Pads of the QDQ MobileNet-v2
# exports in the real-world corpus, default level)


@pytest.mark.parametrize("ep", ["qnn", "openvino"])
@pytest.mark.parametrize("dequantized", [True, False])
def test_dequantized_constant_counts_as_constant(ep: str, dequantized: bool) -> None:
    facts = NodeFacts(
        op_type="Pad",
        opset=21,
        input_dtypes=("float", "int64", "float"),
        output_dtypes=("float",),
        input_shapes=((1, 3, 8, 8), (8,), ()),
        output_shapes=((1, 3, 10, 10),),
        constant_inputs=frozenset({1}),
        dequantized_inputs=frozenset({2}) if dequantized else frozenset(),
        attributes={"mode": "constant"},
    )
    verdict = evaluate(profiles.load_profile(ep), facts)
    assert verdict.claimed is dequantized, verdict.reason


def qdq_pad_model(quantized_value: bool) -> onnx.ModelProto:
    """Q/DQ -> Pad(pads, constant_value) -> Q/DQ -> Relu; the pad value a DQ of an
    initializer, or (``quantized_value``) a DQ of a QuantizeLinear of a Constant, as
    onnxruntime.quantization writes it."""
    f = numpy_helper.from_array
    inits = [
        f(np.array(0.01, np.float32), "s"),
        f(np.array(0, np.uint8), "z"),
        f(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads"),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], "x_q"),
        helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], "x_dq"),
    ]
    if quantized_value:
        nodes += [
            helper.make_node("Constant", [], ["v"], "v_const", value=f(np.array(0.0, np.float32))),
            helper.make_node("QuantizeLinear", ["v", "s", "z"], ["vq"], "v_q"),
        ]
    else:
        inits.append(f(np.array(0, np.uint8), "vq"))
    nodes += [
        helper.make_node("DequantizeLinear", ["vq", "s", "z"], ["vd"], "v_dq"),
        helper.make_node("Pad", ["xd", "pads", "vd"], ["p"], "pad"),
        helper.make_node("QuantizeLinear", ["p", "s", "z"], ["pq"], "p_q"),
        helper.make_node("DequantizeLinear", ["pq", "s", "z"], ["pd"], "p_dq"),
        helper.make_node("Relu", ["pd"], ["y"], "relu"),
    ]
    graph = helper.make_graph(
        nodes,
        "qdq_pad",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 10, 10])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("quantized_value", [False, True])
def test_qdq_pad_runs_on_openvino(quantized_value: bool) -> None:
    plan = partitions(qdq_pad_model(quantized_value), ["openvino"]).plan("exported")
    assert plan is not None
    assert set(plan.node_ep.values()) == {OV}


@pytest.mark.slow
@pytest.mark.ort_openvino
def test_qdq_pad_on_real_openvino() -> None:
    runner = _openvino_runner()
    check_real("openvino", str(runner), {f"q{q}": qdq_pad_model(q) for q in (False, True)})
