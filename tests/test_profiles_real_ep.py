"""Real EP sessions confirm the shipped QNN HTP and OpenVINO CPU profiles on a few ops.

A short version of ``onnxlint probe``: the ONNX node test cases of a handful of ops
whose verdicts exercise each verdict kind (op refused, constant-input constraint,
attribute constraint, claimed), run on the real EP in an isolated worker, must
agree with the evaluator. Skipped, with the reason, where the EP is not installed.
"""

from __future__ import annotations

import pytest

OPS = ["ConstantOfShape", "NonZero", "Relu", "Clip", "CumSum", "ArgMax", "Gemm", "Slice"]


def _probe_or_skip(ep: str) -> tuple[float, list[object]]:
    from onnxlint import probe
    from onnxlint.probe.compare import compare_with_profile
    from onnxlint.runtime.discovery import discover
    from onnxlint.runtime.runners import EpSpec, resolve_runner

    spec = EpSpec.for_ep(ep)
    try:
        exe = resolve_runner(spec.provider)
        info = discover(exe)
    except Exception as exc:  # no runner for this EP here
        pytest.skip(f"{spec.provider} runner not available: {exc}")
    if not info.ok or spec.provider not in info.providers():
        pytest.skip(f"{spec.provider} is not installed here")
    report = probe.probe(spec, runner=exe, ops=OPS, variants=False, timeout_s=120)
    assert sum(m.claimed is not None for m in report.measurements) > 30
    result = compare_with_profile(report)
    assert result is not None
    return result


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_qnn_htp_profile_matches_real_sessions() -> None:
    ratio, disagreements = _probe_or_skip("qnn")
    assert ratio >= 0.95, disagreements


@pytest.mark.slow
@pytest.mark.ort_openvino
def test_openvino_cpu_profile_matches_real_sessions() -> None:
    ratio, disagreements = _probe_or_skip("openvino")
    assert ratio >= 0.95, disagreements
