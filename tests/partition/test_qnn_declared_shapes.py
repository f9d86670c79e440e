"""With named input dims fixed (``add_free_dimension_override_by_name``) ORT keeps the
exporter's ``value_info`` and merges what its inference computes into it: a dim only the
declaration gives stays known, a declared symbolic dim that inference now computes takes
the value. So QNN takes a node whose inputs are known only through such a merge (held-out
corpus: the CLIP vision embeddings of a dynamo export, where the class token is
``Expand``ed to a computed shape, concatenated with the patches and added to the position
embedding; the Add went to QNN, the lint had left it to CPU because it dropped the
declarations when it fixed the dims).

Measured with onnxruntime 1.32.0 + onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP simulator,
``soc_model=60``), optimizations disabled, dim ``N`` fixed to 1.
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


def class_token(declared: bool) -> onnx.ModelProto:
    """Expand(token [4], Concat(Shape(x)[0:1], [1], [4])) concatenated with x [N, 16, 4]
    on axis 1, plus a position embedding [1, 17, 4]; ``declared``: the exporter's
    value_info for the Expand's output, ``[N, 1, 4]``."""
    inits = [
        numpy_helper.from_array(np.ones(4, np.float32), "token"),
        numpy_helper.from_array(np.array([1], np.int64), "one"),
        numpy_helper.from_array(np.array([4], np.int64), "four"),
        numpy_helper.from_array(np.ones((1, 17, 4), np.float32), "pos"),
    ]
    nodes = [
        helper.make_node("Shape", ["x"], ["n"], "shape", start=0, end=1),
        helper.make_node("Concat", ["n", "one", "four"], ["target"], "target", axis=0),
        helper.make_node("Expand", ["token", "target"], ["cls"], "expand"),
        helper.make_node("Concat", ["cls", "x"], ["cat"], "cat", axis=1),
        helper.make_node("Add", ["cat", "pos"], ["y"], "add"),
    ]
    graph = helper.make_graph(
        nodes,
        "class_token",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 17, 4])],
        inits,
        value_info=[helper.make_tensor_value_info("cls", TensorProto.FLOAT, ["N", 1, 4])]
        if declared
        else [],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


#: declared value_info -> the EP of (expand, cat, add) with N fixed, optimizations disabled
CASES = {True: (CPU_EP, CPU_EP, QNN), False: (CPU_EP, CPU_EP, CPU_EP)}


@pytest.mark.parametrize("declared", sorted(CASES))
def test_declared_shapes_stay_when_dims_are_fixed(declared: bool) -> None:
    plan = partitions(class_token(declared), ["qnn"], assume_dims={"N": 1}).plan("exported")
    assert plan is not None
    got = tuple(plan.node_ep[f"main/{n}"] for n in ("expand", "cat", "add"))
    assert got == CASES[declared]


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_declared_shapes_on_real_qnn() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    from onnxlint.runtime.client import SessionRequest, run_sessions
    from onnxlint.runtime.runners import EpSpec, resolve_runner

    spec = EpSpec.for_ep("qnn")
    runner = resolve_runner(spec.provider, None, root=Path.cwd())
    with tempfile.TemporaryDirectory() as tmp:
        for declared, want in CASES.items():
            path = Path(tmp) / f"m{int(declared)}.onnx"
            onnx.save(class_token(declared), path)
            req = SessionRequest(str(path), id="x", optimization="disabled", free_dims={"N": 1})
            [res] = run_sessions([req], spec, runner=runner, timeout_s=120, max_items_per_worker=1)
            assert res.ok, res.error
            eps = {n.name: n.ep for n in res.assignment}
            assert tuple(eps[n] for n in ("expand", "cat", "add")) == want, (declared, eps)
