"""OpenVINO CPU classes of the fourth held-out batch, each on a hand-built model with a
fast prediction test and an ``ort_openvino`` test against the real runner
(onnxruntime-openvino 1.24.1, CPU; onnx 1.23.2).

- A single-node cluster joins only a later cluster in ORT's order that it has an edge
  with; one with edges to earlier clusters only goes back to CPU (OLMo2's
  ``Add(h, RMSNormalization(MatMul(h)))``, where the earlier join made a cycle that OL510
  flagged, although the session loads).
- OpenVINO's refusal of some ops in graphs of at most 3 nodes reads the first node of
  ORT's order only (onnx-asr's WeSpeaker Scan body ``Concat -> Slice``: both on OpenVINO).
"""

from __future__ import annotations

import onnx
import pytest

from onnxlint.analyses.partition import Partitions
from onnxlint.ep_names import CPU_EP
from onnxlint.rules.ep_partitions import EpCyclicPartition

from .conftest import check_real, context, openvino_runner, partitions

OV = "OpenVINOExecutionProvider"

# Add(c, RMSNormalization(c)) after the cluster that computes c: Add's only OpenVINO
# neighbour is that earlier cluster; it stays on CPU and the session loads (measured)
RETURNING_ADD = """\
<ir_version: 10, opset_import: ["" : 23]>
g (float[1,4,8] x) => (float[1,4,8] y) {
    w = Constant <value = float[8] {1,1,1,1,1,1,1,1}> ()
    a = Relu(x)
    b = Sigmoid(a)
    c = Relu(b)
    n = RMSNormalization(c, w)
    d = Add(c, n)
    e = RMSNormalization(d, w)
    y = Relu(e)
}
"""

# Neg reads the cluster [Relu, Sigmoid] before it and feeds a refused node; the next
# cluster in ORT's order (Abs) has no edge with it: Neg goes back to CPU (measured)
EARLIER_ONLY = """\
<ir_version: 10, opset_import: ["" : 23]>
g (float[1,4,8] x) => (float[1,4,8] y, float[1,4,8] z) {
    w = Constant <value = float[8] {1,1,1,1,1,1,1,1}> ()
    a = Relu(x)
    b = Sigmoid(a)
    r = RMSNormalization(b, w)
    m = Neg(a)
    n = RMSNormalization(m, w)
    z = Abs(n)
    y = Relu(r)
}
"""

# two nodes, Slice second: OpenVINO takes the whole graph (measured)
CONCAT_THEN_SLICE = """\
<ir_version: 10, opset_import: ["" : 17]>
g (float[1,240] p, float[1,160] q) => (float[1,240] y) {
    st = Constant <value = int64[1] {160}> ()
    en = Constant <value = int64[1] {9223372036854775807}> ()
    ax = Constant <value = int64[1] {1}> ()
    c = Concat <axis = -1> (p, q)
    y = Slice(c, st, en, ax)
}
"""


def _node_eps(text: str) -> dict[str, str]:
    plan = partitions(text, ["openvino"]).plan("exported")
    assert plan is not None
    return {p.rsplit("/", 1)[-1].split("_")[0]: ep for p, ep in plan.node_ep.items()}


def test_a_single_node_linked_only_to_an_earlier_cluster_goes_back_to_cpu() -> None:
    assert _node_eps(RETURNING_ADD)["Add"] == CPU_EP
    assert _node_eps(EARLIER_ONLY)["Neg"] == CPU_EP
    assert _node_eps(EARLIER_ONLY)["Abs"] == OV  # the last cluster stays


def test_a_node_left_to_cpu_makes_no_cyclic_partition() -> None:
    ctx = context(RETURNING_ADD, ["openvino"])
    ctx.analysis(Partitions)
    EpCyclicPartition().check_model(ctx)
    assert [d.code for d in ctx.diagnostics if d.code == "OL510"] == []


def test_lone_op_refusal_reads_the_first_node_only() -> None:
    assert _node_eps(CONCAT_THEN_SLICE) == {"Concat": OV, "Slice": OV}


@pytest.mark.slow
@pytest.mark.ort_openvino
def test_batch4_classes_on_real_openvino() -> None:
    models = {
        "returning_add": onnx.parser.parse_model(RETURNING_ADD),
        "earlier_only": onnx.parser.parse_model(EARLIER_ONLY),
        "concat_then_slice": onnx.parser.parse_model(CONCAT_THEN_SLICE),
    }
    check_real("openvino", str(openvino_runner()), models)
