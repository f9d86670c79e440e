"""ONNX Runtime resolves the graph, with its own type and shape inference, before any EP
sees it: a declared shape that the session's fixed dims contradict fails every session
(issue #16: onnx-asr's wespeaker feature extractor, whose Scan state is declared [batch,
240] while a waveform of N = 1 samples gives it one column; "Can't merge shape info").
The level-1 worker meets the same refusal, and OL606 reports it.

Measured with onnxruntime 1.32.0 (CPU) and onnxruntime-qnn 2.7.0 (QAIRT 2.51 HTP
simulator, ``soc_model=60``), both optimization levels: N = 1 fails, N = 300 and the
symbolic N load.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import onnx
import pytest

from onnxlint import lint
from onnxlint.config import Config
from onnxlint.ep_names import CPU_EP

from .conftest import agreement

SCAN = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1, N] x) => (float[1, 240] last, float[1, 3, 400] frames) {
    z = Constant <value = int64[1] {0}> ()
    e = Constant <value = int64[1] {240}> ()
    one = Constant <value = int64[1] {1}> ()
    x0 = Slice(x, z, e, one, one)
    xsh = Constant <value = int64[3] {1, 3, 160}> ()
    xs = ConstantOfShape(xsh)
    last, frames = Scan (x0, xs) <
        num_scan_inputs = 1, scan_input_axes = [1], scan_output_axes = [1],
        body = body (float[1, 240] prev, float[1, 160] curr)
            => (float[1, 240] next, float[1, 400] frame) {
            frame = Concat <axis = 1> (prev, curr)
            s = Constant <value = int64[1] {160}> ()
            big = Constant <value = int64[1] {100000}> ()
            ax = Constant <value = int64[1] {1}> ()
            next = Slice(frame, s, big, ax)
        }
    >
}
"""

#: the value of N (None: left symbolic) -> whether every session fails
CASES: dict[str, tuple[int | None, bool]] = {
    "n1": (1, True),
    "n300": (300, False),
    "symbolic": (None, False),
}


@pytest.mark.parametrize("case", CASES)
def test_a_shape_ort_rejects_under_the_fixed_dims_is_reported(case: str) -> None:
    n, fails = CASES[case]
    config = Config(eps=("qnn",), assume_dims={"N": n} if n is not None else {})
    report = lint(onnx.parser.parse_model(SCAN), eps=["qnn"], config=config, what_if=False)
    found = [d for d in report.diagnostics if d.code == "OL606"]
    assert len(found) == int(fails), [d.message for d in found]
    if fails:
        assert "Can't merge shape info" in found[0].message
        assert "Load model from" not in found[0].message  # the worker's copy is not named


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_fixed_dims_ort_rejects_on_real_sessions() -> None:
    pytest.importorskip("onnxruntime_qnn", reason="onnxruntime-qnn is not installed")
    jobs = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "scan.onnx"
        path.write_bytes(onnx.parser.parse_model(SCAN).SerializeToString())
        for ep in ("cpu", "qnn"):
            spec = agreement.EPS.get(ep) or {"provider": CPU_EP, "options": {}, "plugin": None}
            for case, (n, _) in CASES.items():
                for level in ("disabled", "basic"):
                    jobs.append(
                        {
                            "id": f"{ep}|{case}|{level}",
                            "path": str(path),
                            "level": level,
                            "provider": spec["provider"],
                            "options": spec["options"],
                            "plugin": spec["plugin"],
                            "free_dims": {"N": n} if n is not None else {},
                        }
                    )
        real = agreement.run_real(jobs, sys.executable, timeout_s=300)
    for job in jobs:
        fails = CASES[job["id"].split("|")[1]][1]
        r = real[job["id"]]
        assert (not r.get("ok")) is fails, (job["id"], r)
        if fails:
            assert "Can't merge shape info" in str(r.get("error")), r
