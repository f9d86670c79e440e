"""QNN HTP claims neither DynamicQuantizeLinear nor MatMulInteger nor ConvInteger alone
("Operators of type ... are not supported by QNN EP"), but takes a DynamicQuantizeLinear
together with the MatMulInteger or ConvInteger reading its output when the weights are
constants (uint8 or int8) and every shape is static: the pattern of ORT's dynamic
quantization (issue #16, the quantized classifier of an OCR model shipped in a wheel, with
its width fixed, at the default level, where constant folding makes the shapes static;
the dynamically quantized MobileNetV2 and ResNet of the third held-out batch). The scale
used without the weight scale's Mul, a DynamicQuantizeLinear alone, an Add of a computed
tensor as the rescaling's only reader (a residual; the bias Reshape quantize_dynamic
writes for a ConvInteger, folded only at the default level), or a dynamic shape keeps
both on CPU; an Add that shares the rescaled tensor with another reader does not.

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``).
"""

from __future__ import annotations

import dataclasses
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint.analyses.partition import Partitions
from onnxlint.ep_names import CPU_EP

from .conftest import check_real, context, partitions

QNN = "QNNExecutionProvider"


def dynamic_matmul(kind: str = "uint8", rows: int | str = 4) -> onnx.ModelProto:
    """Relu -> DynamicQuantizeLinear -> MatMulInteger(uint8 constant weights) -> Cast ->
    Mul by Mul(scale, weight scale), as ORT's dynamic quantization writes it. ``kind``:
    ``int8`` weights, ``scale`` used without the weight scale's Mul, ``alone``
    (DynamicQuantizeLinear -> Cast, no MatMulInteger), or ``shared`` (then an Add of a
    Sigmoid of the result: the Add is not the result's only reader)."""
    rng = np.random.default_rng(0)
    dt = np.int8 if kind == "int8" else np.uint8
    inits = [
        numpy_helper.from_array(rng.integers(0, 100, (8, 16)).astype(dt), "W"),
        numpy_helper.from_array(np.array(0 if dt is np.int8 else 128, dt), "wz"),
        numpy_helper.from_array(np.array(0.01, np.float32), "ws"),
    ]
    nodes = [
        helper.make_node("Relu", ["x0"], ["x"], "pre"),
        helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "s", "z"], "dql"),
    ]
    if kind == "alone":
        nodes.append(helper.make_node("Cast", ["q"], ["c"], "cast", to=TensorProto.FLOAT))
        nodes.append(helper.make_node("Mul", ["c", "s"], ["y"], "mul"))
    else:
        scale = "s" if kind == "scale" else "sc"
        if kind != "scale":
            nodes.append(helper.make_node("Mul", ["s", "ws"], ["sc"], "scale_mul"))
        nodes += [
            helper.make_node("MatMulInteger", ["q", "W", "z", "wz"], ["mi"], "mmi"),
            helper.make_node("Cast", ["mi"], ["c"], "cast", to=TensorProto.FLOAT),
            helper.make_node("Mul", ["c", scale], ["y" if kind != "shared" else "m"], "mul"),
        ]
        if kind == "shared":
            nodes.append(helper.make_node("Sigmoid", ["m"], ["r"], "other_reader"))
            nodes.append(helper.make_node("Add", ["m", "r"], ["y"], "add"))
    graph = helper.make_graph(
        nodes,
        "dynamic_matmul",
        [helper.make_tensor_value_info("x0", TensorProto.FLOAT, [rows, 8])],
        [
            helper.make_tensor_value_info(
                "y", TensorProto.FLOAT, [rows, 8 if kind == "alone" else 16]
            )
        ],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def dynamic_conv(bias: str = "constant") -> onnx.ModelProto:
    """Relu -> DynamicQuantizeLinear -> ConvInteger(int8 constant weights) -> Cast -> Mul by
    Mul(scale, weight scale) -> ``bias``: ``constant`` (an Add of an initializer),
    ``none`` (no Add), ``reshape`` (an Add of a Reshape of an initializer, as
    quantize_dynamic writes it) or ``residual`` (an Add of a tensor computed from the
    graph input)."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.integers(0, 50, (2, 2, 3, 3)).astype(np.int8), "W"),
        numpy_helper.from_array(np.array(0, np.int8), "wz"),
        numpy_helper.from_array(np.array(0.01, np.float32), "ws"),
        numpy_helper.from_array(np.arange(2).astype(np.float32).reshape(1, 2, 1, 1), "b4"),
        numpy_helper.from_array(np.arange(2).astype(np.float32), "b1"),
        numpy_helper.from_array(np.array([1, 2, 1, 1], np.int64), "bshape"),
    ]
    nodes = [
        helper.make_node("Relu", ["x0"], ["x"], "pre"),
        helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "s", "z"], "dql"),
        helper.make_node("Mul", ["s", "ws"], ["sc"], "scale_mul"),
        helper.make_node(
            "ConvInteger", ["q", "W", "z", "wz"], ["ci"], "convint", pads=[1, 1, 1, 1]
        ),
        helper.make_node("Cast", ["ci"], ["c"], "cast", to=TensorProto.FLOAT),
        helper.make_node("Mul", ["c", "sc"], ["m"], "mul"),
    ]
    out = "m"
    if bias != "none":
        b = "b4"
        if bias == "reshape":
            nodes.append(helper.make_node("Reshape", ["b1", "bshape"], ["br"], "bias_reshape"))
            b = "br"
        elif bias == "residual":
            nodes.append(helper.make_node("Sigmoid", ["x0"], ["br"], "residual"))
            b = "br"
        nodes.append(helper.make_node("Add", [out, b], ["a"], "bias_add"))
        out = "a"
    nodes.append(helper.make_node("Relu", [out], ["y"], "post"))
    graph = helper.make_graph(
        nodes,
        f"dynamic_conv_{bias}",
        [helper.make_tensor_value_info("x0", TensorProto.FLOAT, [1, 2, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 8, 8])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _eps(model: onnx.ModelProto, level: str = "exported", **config: object) -> dict[str, str]:
    plan = partitions(model, ["qnn"], **config).plan(level)
    assert plan is not None
    return plan.node_ep


@pytest.mark.parametrize("kind", ["uint8", "int8", "shared"])
def test_the_pair_is_claimed_with_constant_weights_and_static_shapes(kind: str) -> None:
    eps = _eps(dynamic_matmul(kind))
    assert eps["main/dql"] == QNN
    assert eps["main/mmi"] == QNN


@pytest.mark.parametrize(
    ("kind", "rows"),
    [("scale", 4), ("uint8", "n"), ("alone", 4)],
    ids=["scale", "dynamic", "alone"],
)
def test_the_pair_stays_on_cpu_otherwise(kind: str, rows: int | str) -> None:
    eps = _eps(dynamic_matmul(kind, rows))
    assert eps["main/dql"] == CPU_EP
    assert eps.get("main/mmi", CPU_EP) == CPU_EP


@pytest.mark.parametrize("bias", ["constant", "none"])
def test_the_conv_pair_is_claimed(bias: str) -> None:
    eps = _eps(dynamic_conv(bias))
    assert eps["main/dql"] == QNN
    assert eps["main/convint"] == QNN


def test_a_reshaped_bias_refuses_the_conv_pair_until_the_default_level_folds_it() -> None:
    exported = _eps(dynamic_conv("reshape"))
    assert exported["main/dql"] == CPU_EP
    assert exported["main/convint"] == CPU_EP
    optimized = _eps(dynamic_conv("reshape"), "optimized")
    assert optimized["main/convint"] == QNN


def test_a_residual_add_refuses_the_conv_pair() -> None:
    eps = _eps(dynamic_conv("residual"))
    assert eps["main/dql"] == CPU_EP
    assert eps["main/convint"] == CPU_EP


def test_the_fusion_comes_from_the_profile() -> None:
    ctx = context(dynamic_matmul("uint8"), ["qnn"])
    ctx.eps = [
        dataclasses.replace(p, fusions=p.fusions - {"dynamic_quantize_matmul_integer"})
        if p.ep == QNN
        else p
        for p in ctx.eps
    ]
    plan = ctx.analysis(Partitions).plan("exported")
    assert plan is not None
    assert plan.node_ep["main/dql"] == CPU_EP


def test_fixing_the_named_dim_claims_the_pair() -> None:
    assert _eps(dynamic_matmul(rows="n"), assume_dims={"n": 4})["main/dql"] == QNN


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_dynamic_quantization_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    models = {k: dynamic_matmul(k) for k in ("uint8", "int8", "scale", "alone", "shared")}
    models |= {f"conv_{b}": dynamic_conv(b) for b in ("constant", "none", "reshape", "residual")}
    check_real("qnn", sys.executable, models)
