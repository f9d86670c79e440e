"""OpenVINO CPU partitioning classes found on the real-world corpus (issue #16).

Each class has a fast test on a hand-built model (no EP) and, marked ``ort_openvino``,
the same model against the real OpenVINO runner (onnxruntime-openvino 1.24.1, CPU).
"""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

from ..conftest import REPO
from .conftest import check_real, partitions

OV = "OpenVINOExecutionProvider"

# ORT's topological order visits the highest-index input of a node first. The refused
# scalar ConstantOfShape between the two producers of Mul cuts OpenVINO's order:
# [Tanh, Abs] before the cut, [Mul, Add, Sigmoid, Relu, Relu] after it (measured).
ORDER_CUT = """\
<ir_version: 8, opset_import: ["" : 14]>
g (float[1,8] x) => (float[1,8] y) {
    a1 = Relu(x)
    a2 = Sigmoid(a1)
    e = Constant <value = int64[0] {}> ()
    s = ConstantOfShape <value = float[1] {0.5}> (e)
    b1 = Tanh(x)
    b2 = Abs(b1)
    m = Mul(s, b2)
    z = Add(m, a2)
    y = Relu(z)
}
"""

# A cluster fed only by initializers (Add + Relu of constants) is still an OpenVINO
# subgraph: its initializers are subgraph inputs too (measured).
CONSTANT_CLUSTER = """\
<ir_version: 8, opset_import: ["" : 14]>
g (float[1,2,8,8] x) => (float[1,2,8,8] y) {
    e = Constant <value = int64[0] {}> ()
    s = ConstantOfShape <value = float[1] {1}> (e)
    c1 = Constant <value = float[1,1,8,1] {0,1,2,3,4,5,6,7}> ()
    c2 = Constant <value = float {0}> ()
    ge = Add(c1, c2)
    cb = Relu(ge)
    a = Mul(s, cb)
    b = Add(x, a)
    y = Relu(b)
}
"""


def _ov_partitions(text: str) -> list[list[str]]:
    plan = partitions(text, ["openvino"]).plan("exported")
    assert plan is not None
    return [
        sorted(n.rsplit("/", 1)[-1].split("_")[0] for n in p.nodes) for p in plan.partitions_on(OV)
    ]


def test_cut_follows_orts_order_highest_index_input_first() -> None:
    assert sorted(_ov_partitions(ORDER_CUT)) == [
        ["Abs", "Tanh"],
        ["Add", "Mul", "Relu", "Relu", "Sigmoid"],
    ]


def test_cluster_of_constants_stays_on_openvino() -> None:
    assert sorted(_ov_partitions(CONSTANT_CLUSTER)) == [["Add", "Mul", "Relu"], ["Add", "Relu"]]


def _openvino_runner() -> Path:
    runner = REPO / ".venv-openvino" / "bin" / "python"
    if not runner.exists():
        pytest.skip("the OpenVINO runner venv (.venv-openvino, .ci/setup-openvino.sh) is missing")
    return runner


@pytest.mark.slow
@pytest.mark.ort_openvino
def test_partitioning_on_real_openvino() -> None:
    models = {
        "order": onnx.parser.parse_model(ORDER_CUT),
        "constants": onnx.parser.parse_model(CONSTANT_CLUSTER),
    }
    check_real("openvino", str(_openvino_runner()), models)
