"""Measure what a real, installed execution provider claims, one op at a time.

``onnxlint probe --ep qnn`` builds single-node models from ONNX's own node test
cases (``onnx.backend.test.case.node.collect_testcases()``) plus dtype variants
of one case per op, creates a real ORT session for each in an isolated worker
(:mod:`onnxlint.runtime.client`), and records per model whether the EP claimed
the node, the EP's own reason when it refused, and the session error when it
claimed the node and then failed. The measurements (``rules/measured/<ep>.json``)
are what the shipped EP profiles are checked and corrected against.

This module runs the probe; the cases are :mod:`onnxlint.probe.cases`, reading a result
:mod:`~onnxlint.probe.measure`, the report and its file :mod:`~onnxlint.probe.report`,
and the comparison with the profile :mod:`~onnxlint.probe.compare`.
"""

from __future__ import annotations

import datetime as _dt
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from onnxlint.probe.cases import build_cases, ort_limits, signature_cases
from onnxlint.probe.measure import measure
from onnxlint.probe.report import ProbeReport
from onnxlint.runtime.client import SessionRequest, run_sessions
from onnxlint.runtime.runners import EpSpec, resolve_runner


def probe(
    ep: str | EpSpec,
    *,
    runner: str | None = None,
    runners: dict[str, str] | None = None,
    root: str | os.PathLike[str] | None = None,
    opset: int | None = None,
    ops: Sequence[str] | None = None,
    names: Sequence[str] | None = None,
    limit: int | None = None,
    variants: bool = True,
    optimization: str = "disabled",
    timeout_s: float = 120.0,
    memory_cap_mb: int | None = 16384,
    batch: int = 200,
    progress: Callable[[str], None] | None = None,
    models: Sequence[str | os.PathLike[str]] | None = None,
) -> ProbeReport:
    """Probe ``ep`` with the node test cases; see the module docstring.

    With ``models`` (files or folders of ``.onnx`` files) the cases are the distinct
    node signatures of those models instead (:mod:`onnxlint.signatures`), each as
    its own single-node model at the model's own opset; ``ops`` and ``limit`` apply.
    """
    from onnxlint.runtime.discovery import discover

    spec = ep if isinstance(ep, EpSpec) else EpSpec.for_ep(ep)
    exe = runner or resolve_runner(spec.provider, runners, root=root)
    info = discover(exe)
    say = progress or (lambda _msg: None)
    if not info.ok:
        raise RuntimeError(f"runner {exe} cannot run onnxruntime: {info.error}")
    if spec.provider not in info.providers():
        raise RuntimeError(
            f"{spec.provider} is not available under {exe} "
            f"(has: {', '.join(info.providers()) or 'nothing'})"
        )
    # what the runner's ORT really loads; the table only when it cannot be asked
    from onnxlint.ort_versions import limits_of

    asked = limits_of(exe)
    if asked is not None:
        max_opset, max_ir = asked["max_opset"], asked["max_ir"]
    else:
        max_opset, max_ir = ort_limits(info.onnxruntime)
    source = None
    if models is not None:
        cases, source = signature_cases(models, ops=ops, limit=limit)
    else:
        cases = build_cases(
            max_opset=max_opset,
            max_ir=max_ir,
            opset=opset,
            ops=ops,
            names=names,
            limit=limit,
            variants=variants,
        )
    say(f"probing {spec.provider} with {len(cases)} models under {exe}")
    report = ProbeReport(
        ep=spec.short,
        provider=spec.provider,
        options=dict(spec.options),
        date=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d"),
        versions={},
        optimization=optimization,
        cases=cases,
        source=source,
    )
    for start in range(0, len(cases), batch):
        part = cases[start : start + batch]
        reqs = [SessionRequest(c.model, id=c.name, optimization=optimization) for c in part]
        results = run_sessions(
            reqs,
            spec,
            runner=exe,
            timeout_s=timeout_s,
            memory_cap_mb=memory_cap_mb,
            startup_timeout_s=300.0,
        )
        for case, res in zip(part, results, strict=True):
            report.measurements.append(measure(case, res, spec.provider))
            if res.versions and not report.versions:
                report.versions = _public_versions(res.versions)
            if "qnn_sdk" in res.versions:
                report.versions["qnn_sdk"] = res.versions["qnn_sdk"]
        done = start + len(part)
        claimed = sum(1 for m in report.measurements if m.claimed)
        say(f"  {done}/{len(cases)} models, {claimed} claimed")
    return report


def _public_versions(v: dict[str, Any]) -> dict[str, Any]:
    """Versions without machine-specific paths."""
    import onnx

    out = {k: val for k, val in v.items() if k != "executable"}
    out["onnx_models_from"] = onnx.__version__
    return out


def main_progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)
