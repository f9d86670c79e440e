"""``onnxlint probe --from-models``: distinct node signatures of real models as probe cases."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

from onnxlint import signatures
from onnxlint.probe.cases import signature_cases

ROOT = Path(__file__).resolve().parents[2]

# Two Adds with one signature (dynamic batch, runtime inputs), one Add with a constant
# input, an int64 Cast, a Constant (folded by ORT, never probed) and an If (control flow).
MODEL = """
<ir_version: 8, opset_import: ["" : 17]>
g (float[N, 4] x, float[N, 4] y, bool c) => (float[N, 4] a2, float[N, 4] b, int64[N, 4] i, float[N, 4] z) <float[4] w = {1.0, 2.0, 3.0, 4.0}> {
    a1 = Add(x, y)
    a2 = Add(a1, y)
    b = Add(x, w)
    i = Cast<to = 7>(b)
    k = Constant<value = float[1] {2.0}>()
    m = Mul(b, k)
    z = If(c) <then_branch = g1 () => (float[N, 4] t) { t = Identity(m) },
               else_branch = g2 () => (float[N, 4] e) { e = Neg(m) }>
}
"""


@pytest.fixture(scope="module")
def sigs() -> signatures.SignatureSet:
    return signatures.collect([onnx.parser.parse_model(MODEL)])


def test_equal_nodes_share_one_signature(sigs: signatures.SignatureSet) -> None:
    by_op: dict[str, list[signatures.NodeSignature]] = {}
    for s in sigs.signatures.values():
        by_op.setdefault(s.op_type, []).append(s)
    assert sorted(by_op) == ["Add", "Cast", "Mul"]
    adds = sorted(by_op["Add"], key=lambda s: s.seen)
    # a1 and a2 alike; b differs by the constness of its second input
    assert [s.seen for s in adds] == [1, 2]
    assert "float[s]c" in adds[0].key and "float[ds]v" in adds[1].key
    assert sigs.nodes == 7 and sigs.models == 1


def test_skipped_nodes_are_counted_by_reason(sigs: signatures.SignatureSet) -> None:
    assert sigs.skipped == {"Constant (folded by ORT)": 1, "control flow (graph attribute)": 1}


def test_single_node_models_keep_types_constants_and_attributes(
    sigs: signatures.SignatureSet,
) -> None:
    for s in sigs.signatures.values():
        onnx.checker.check_model(s.model, full_check=True)
        assert len(s.model.graph.node) == 1
    cast = next(s for s in sigs.signatures.values() if s.op_type == "Cast")
    assert "to=7" in cast.key
    mul = next(s for s in sigs.signatures.values() if s.op_type == "Mul")
    # the Constant's value travels as an initializer; the runtime input keeps its named dim
    assert [i.name for i in mul.model.graph.initializer] == ["k"]
    (inp,) = mul.model.graph.input
    assert inp.type.tensor_type.shape.dim[0].dim_param == "N"
    assert mul.input_dtypes == ["float", "float"]


def test_signature_cases_carry_provenance(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(onnx.parser.parse_model(MODEL), str(path))
    cases, source = signature_cases([tmp_path], ops=["add"])
    assert [c.op_type for c in cases] == ["Add", "Add"]
    assert all(c.signature and c.seen_in == ["m"] for c in cases)
    assert "1 models (7 nodes, 4 signatures" in source
    limited, _ = signature_cases([path], limit=1)
    assert len(limited) == 1


def test_unreadable_files_are_skipped_not_raised(tmp_path: Path) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x00not a model")
    got = signatures.collect([bad])
    assert got.models == 0 and got.skipped == {"unreadable model": 1}


@pytest.mark.slow
def test_probe_from_models_on_cpu(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(onnx.parser.parse_model(MODEL), str(path))
    out = tmp_path / "cpu.json"
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "onnxlint", "probe", "--ep", "cpu"),
            *("--from-models", str(path), "-o", str(out), "--json"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)["summary"]
    assert summary["models"] == summary["claimed"] == 4
    data = json.loads(out.read_text())
    assert data["source"].startswith("distinct node signatures of 1 models")
    assert all(c["signature"] and c["seen_in"] == ["m"] for c in data["cases"])
