"""OL208: a node the onnxruntime release an EP runs in refuses at load.

onnxruntime 1.24 (the release onnxruntime-openvino 1.24.1 ships) refuses a TopK whose K is
``Gather(Shape(t), [a])`` with dimension ``a`` and the TopK's axis static ('K input must be
a one-dimensional tensor of size 1'); onnxruntime 1.32 loads it. The corpus's TorchScript
ViTMAE (its random masking) fails so on OpenVINO at both levels. The cases below were
measured with onnxruntime 1.24.1 and 1.32.0 (the real-session test runs them again).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxlint import lint

from ..partition.conftest import openvino_runner, real_sessions


def topk(
    k: str = "gather",
    index: int = 1,
    axis: int = 1,
    dims: tuple[int | str, ...] = (1, 8, 16),
    indices: str = "constant",
    opset: int = 16,
) -> onnx.ModelProto:
    """TopK(x, K) on x: float[dims], K: "gather" ``Gather(Shape(x), [index])`` (the
    indices ``indices``: "constant" a Constant of shape [1], "initializer" one, "scalar" a
    scalar Constant then Unsqueeze), "slice" ``Slice(Shape(x), [index], [index + 1])``,
    "constant" a Constant [8]."""
    nodes = [helper.make_node("Shape", ["x"], ["s"], "shape")]
    inits: list[onnx.TensorProto] = []

    def const(name: str, value: Any) -> str:
        tensor = numpy_helper.from_array(np.asarray(value, np.int64))
        nodes.append(helper.make_node("Constant", [], [name], name, value=tensor))
        return name

    if k == "gather":
        if indices == "initializer":
            inits.append(numpy_helper.from_array(np.array([index], np.int64), "i"))
            nodes.append(helper.make_node("Gather", ["s", "i"], ["k"], "gather", axis=0))
        elif indices == "scalar":
            nodes.append(helper.make_node("Gather", ["s", const("i", index)], ["k0"], "gather"))
            nodes.append(helper.make_node("Unsqueeze", ["k0", const("ax", [0])], ["k"], "unsq"))
        else:
            nodes.append(helper.make_node("Gather", ["s", const("i", [index])], ["k"], "gather"))
    elif k == "slice":
        ins = ["s", const("st", [index]), const("en", [index + 1])]
        nodes.append(helper.make_node("Slice", ins, ["k"], "slice"))
    else:
        const("k", [8])
    nodes.append(helper.make_node("TopK", ["x", "k"], ["v", "ix"], "topk", axis=axis))
    graph = helper.make_graph(
        nodes,
        "topk_k",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(dims))],
        [
            helper.make_tensor_value_info("v", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("ix", TensorProto.INT64, None),
        ],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


#: name -> (model, whether onnxruntime 1.24 refuses it at load; 1.32 loads every one)
CASES: dict[str, tuple[onnx.ModelProto, bool]] = {
    "gather_constant": (topk(), True),
    "gather_initializer": (topk(indices="initializer"), True),
    "gather_opset21": (topk(opset=21), True),
    "gather_other_axis": (topk(index=2, axis=2), True),
    "gather_negative_axis": (topk(index=2, axis=-1), True),
    # what loads: a dynamic gathered dim or TopK axis, scalar indices, a Slice, a constant
    "gather_dynamic_dim": (topk(dims=(1, "n", 16)), False),
    "gather_dynamic_axis": (topk(index=2, dims=(1, "n", 16)), False),
    "gather_dynamic_k": (topk(index=1, axis=2, dims=(1, "n", 16)), False),
    "gather_scalar_indices": (topk(indices="scalar"), False),
    "slice": (topk(k="slice"), False),
    "constant": (topk(k="constant"), False),
}


def _ol208(model: onnx.ModelProto, eps: list[str], target_ort: str | None = None) -> list[Any]:
    from onnxlint.config import Config

    config = Config(eps=tuple(eps), target_ort=target_ort)
    report = lint(model, eps=eps, what_if=False, config=config)
    return [d for d in report.diagnostics if d.code == "OL208"]


@pytest.mark.parametrize("name", list(CASES))
def test_openvino_runs_in_onnxruntime_1_24(name: str) -> None:
    model, refused = CASES[name]
    found = _ol208(model, ["openvino"])
    assert len(found) == (1 if refused else 0), [d.message for d in found]
    if refused:
        (d,) = found
        assert d.location.node_name == "topk"
        assert d.severity.name == "ERROR"
        assert "OpenVINOExecutionProvider runs in onnxruntime 1.24" in d.message, d.message


@pytest.mark.parametrize("name", [n for n, (_, refused) in CASES.items() if refused])
def test_the_target_release_decides_for_an_ep_built_into_ort(name: str) -> None:
    model, _ = CASES[name]
    assert _ol208(model, ["cpu"], target_ort="1.32") == []
    (d,) = _ol208(model, ["cpu"], target_ort="1.24")
    assert "onnxruntime 1.24" in d.message, d.message


def test_the_openvino_package_release_is_its_profiles() -> None:
    from onnxlint.ort_versions import ep_ort_version
    from onnxlint.profiles import load_profile

    profile = load_profile("openvino-cpu")
    assert profile.runtime_onnxruntime is not None
    assert profile.runtime_onnxruntime.startswith("1.24.")
    assert ep_ort_version(profile.runtime_onnxruntime, "1.32") == profile.runtime_onnxruntime


@pytest.mark.parametrize("ep", ["cuda", "qnn"])
def test_an_ep_without_its_own_ort_runs_in_the_target_release(ep: str) -> None:
    """CUDA and QNN run in the ORT they are loaded into, not in the release their profile
    was read from (1.25 and 1.31 sources): ``--target-ort`` decides."""
    model, _ = next(case for case in CASES.values() if case[1])
    (d,) = _ol208(model, [ep], target_ort="1.24")
    assert "runs in onnxruntime 1.24" in d.message, d.message
    assert _ol208(model, [ep], target_ort="1.32") == []


@pytest.mark.slow
@pytest.mark.ort_openvino
def test_onnxruntime_1_24_refuses_and_1_32_loads() -> None:
    ort = pytest.importorskip("onnxruntime")
    models = {name: model for name, (model, _) in CASES.items()}
    if ort.__version__.startswith("1.32."):
        # the installed onnxruntime (1.32 when this was measured) loads every case
        for model in models.values():
            ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    real = real_sessions("openvino", str(openvino_runner()), models)
    for name, (_, refused) in CASES.items():
        for level in ("disabled", "basic"):
            r = real[f"{name}|{level}"]
            assert (not r.get("ok")) is refused, (name, level, r)
            if refused:
                assert "TopK" in str(r.get("error")), (name, level, r)


def test_the_arrangement_is_read_from_the_data(monkeypatch: pytest.MonkeyPatch) -> None:
    """The matcher follows the entry's fields: without the static-axis condition the
    measured entry also matches a TopK along a dynamic dim (which 1.24 loads), and a
    condition onnxlint does not know matches nothing."""
    import dataclasses

    from onnxlint.ort_versions import load_refusals
    from onnxlint.rules import ort_release

    (measured,) = [r for r in load_refusals() if r.op == "TopK"]
    model, refused = CASES["gather_dynamic_axis"]
    assert not refused and _ol208(model, ["openvino"]) == []
    loose = dataclasses.replace(measured, static=("gathered",))
    monkeypatch.setattr(ort_release, "load_refusals", lambda: (loose,))
    (d,) = _ol208(model, ["openvino"])
    assert d.location.node_name == "topk"
    unknown = dataclasses.replace(measured, static=("gathered", "no-such-condition"))
    monkeypatch.setattr(ort_release, "load_refusals", lambda: (unknown,))
    assert _ol208(CASES["gather_constant"][0], ["openvino"]) == []
