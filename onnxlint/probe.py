"""Measure what a real, installed execution provider claims, one op at a time.

``onnxlint probe --ep qnn`` builds single-node models from ONNX's own node test
cases (``onnx.backend.test.case.node.collect_testcases()``) plus dtype variants
of one case per op, creates a real ORT session for each in an isolated worker
(:mod:`onnxlint.runtime.client`), and records per model whether the EP claimed
the node, the EP's own reason when it refused, and the session error when it
claimed the node and then failed. The measurements (``rules/measured/<ep>.json``)
are what the shipped EP profiles are checked and corrected against.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import statistics
import sys
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onnxlint.fsutil import atomic_write_text
from onnxlint.runtime.client import SessionRequest, run_sessions
from onnxlint.runtime.normalise import match_assignment
from onnxlint.runtime.results import STATUS_OK, SessionResult
from onnxlint.runtime.runners import EpSpec, resolve_runner

if TYPE_CHECKING:
    import onnx

MEASURED_SCHEMA = "onnxlint-measured/1"

# dtype variants generated from the first float32 case of each op.
VARIANT_DTYPES = ("float16", "double", "int32", "int64", "int8", "uint8")

# ORT rejected the model before any EP saw it: says nothing about the EP.
_LOAD_ERROR_MARKERS = (
    "Current official support for domain",
    "is under development",
    "is not a registered function/op",
    "Unsupported model IR version",
    "INVALID_GRAPH",
    "Type Error:",
    "ShapeInferenceError",
    "is not currently registered or supported",
)
# The node ended on CPU with no kernel there: the EP under test did not claim it.
_NO_KERNEL_MARKERS = ("Could not find an implementation for", "Failed to find kernel for")
# Source folder of each EP in ORT's tree: an exception thrown from there says
# which EP held the node when the session failed.
_EP_SOURCE_DIRS = {
    "CPUExecutionProvider": "/providers/cpu/",
    "QNNExecutionProvider": "/providers/qnn/",
    "OpenVINOExecutionProvider": "/providers/openvino/",
    "CUDAExecutionProvider": "/providers/cuda/",
    "TensorrtExecutionProvider": "/providers/tensorrt/",
    "DmlExecutionProvider": "/providers/dml/",
}
# "/onnxruntime_src/onnxruntime/core/providers/cpu/x.cc:12" -> "core/providers/cpu/x.cc:12"
_SRC_PATH_RE = re.compile(r"/\S*?/onnxruntime/(core/\S+)")
_TMP_MODEL_RE = re.compile(r"\S*onnxlint-models-[^/\s]+/model-\d+\.onnx")


@dataclass
class ProbeCase:
    """One single-node model to probe."""

    name: str
    op_type: str
    domain: str
    opset: int
    since_version: int | None
    input_dtypes: list[str]
    model: onnx.ModelProto
    variant: str | None = None  # dtype of a generated variant, None for the original
    opset_lowered_from: int | None = None
    signature: str | None = None  # from real models (--from-models): the node signature
    seen: int = 0  # ... how many nodes of those models had it
    seen_in: list[str] = field(default_factory=list)  # ... and the first models they were in


@dataclass
class Measurement:
    """What the EP did with one probe case."""

    name: str
    op: str
    domain: str
    opset: int
    since: int | None
    dtypes: list[str]
    claimed: bool | None  # None: unknown (the session failed before saying)
    status: str  # ok | session-error | load-error | crash | timeout | oom | runner-error
    reason: str | None = None  # the EP's own reason when it refused
    error: str | None = None  # session error (e.g. claimed, then failed)
    create_s: float | None = None
    variant: str | None = None
    opset_lowered_from: int | None = None
    nodes_on_ep: int = 0  # reported nodes on the EP, including inserted ones
    signature: str | None = None  # the real node signature (``--from-models``)
    seen: int = 0
    seen_in: list[str] | None = None


@dataclass
class ProbeReport:
    ep: str
    provider: str
    options: dict[str, str]
    date: str
    versions: dict[str, Any]
    optimization: str
    measurements: list[Measurement] = field(default_factory=list)
    #: where the probe models came from (None: ONNX's node test cases)
    source: str | None = None
    # The models behind the measurements (not serialised; used for comparison).
    cases: list[ProbeCase] = field(default_factory=list, repr=False)

    def summary(self) -> dict[str, Any]:
        ms = self.measurements
        statuses = Counter(m.status for m in ms)
        times = sorted(m.create_s for m in ms if m.create_s is not None)
        out: dict[str, Any] = {
            "models": len(ms),
            "ops": len({(m.domain, m.op) for m in ms}),
            "claimed": sum(1 for m in ms if m.claimed),
            "refused": sum(1 for m in ms if m.claimed is False),
            "unknown": sum(1 for m in ms if m.claimed is None),
            "claimed_then_failed": sum(1 for m in ms if m.claimed and m.status != STATUS_OK),
            "statuses": dict(sorted(statuses.items())),
        }
        if times:
            out["create_s"] = {
                "median": round(statistics.median(times), 4),
                "p95": round(times[int(0.95 * (len(times) - 1))], 4),
                "max": round(times[-1], 4),
                "total": round(sum(times), 2),
            }
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProbeReport:
        """Read back a measured file (``rules/measured/<ep>.json``)."""
        rows = []
        for row in data.get("cases", []):
            full = {"since": None, "claimed": None, "dtypes": [], "domain": "", **row}
            rows.append(Measurement(**full))
        return cls(
            ep=data["ep"],
            provider=data["provider"],
            options=dict(data.get("options", {})),
            date=data["date"],
            versions=dict(data.get("versions", {})),
            optimization=data.get("optimization", "disabled"),
            measurements=rows,
            source=data.get("source"),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": MEASURED_SCHEMA,
            "ep": self.ep,
            "provider": self.provider,
            "options": self.options,
            "date": self.date,
            "versions": self.versions,
            "optimization": self.optimization,
            "source": self.source
            or "onnx.backend.test.case.node.collect_testcases() single-node models "
            "+ dtype variants (onnxlint probe)",
            "summary": self.summary(),
            "cases": [_compact(asdict(m)) for m in self.measurements],
        }


def _compact(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if (v is not None and v != 0) or k == "claimed"}


def write_report(report: ProbeReport, path: str | os.PathLike[str]) -> None:
    """Compact JSON, one case per line, so a re-measurement is a readable diff."""
    data = report.to_json()
    cases = data.pop("cases")
    head = json.dumps(data, separators=(",", ":"), sort_keys=True)
    lines = [head[:-1] + ',"cases":[']
    lines += [json.dumps(c, separators=(",", ":")) + "," for c in cases]
    if cases:
        lines[-1] = lines[-1][:-1]
    lines.append("]}")
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    # a unique temp name, created exclusively: a planted OUT.tmp symlink is never followed
    atomic_write_text(p, "\n".join(lines) + "\n")


def load_measured(path: str | os.PathLike[str]) -> dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


# Statuses that say something about the machine at the time, not about the EP:
# worth measuring again.
RETRY_STATUSES = ("runner-error", "timeout")


def merge_remeasured(report: ProbeReport, again: ProbeReport) -> ProbeReport:
    """Replace the measurements of ``report`` that ``again`` re-measured."""
    redo = {m.name: m for m in again.measurements}
    report.measurements = [redo.get(m.name, m) for m in report.measurements]
    return report


# -- building the cases ---------------------------------------------------------


def _dtype_name(elem_type: int) -> str:
    import onnx

    return onnx.helper.tensor_dtype_to_string(elem_type).removeprefix("TensorProto.").lower()


def _type_str(tp: onnx.TypeProto) -> str:
    which = tp.WhichOneof("value")
    if which == "tensor_type":
        return _dtype_name(tp.tensor_type.elem_type)
    if which == "sequence_type":
        return f"seq({_type_str(tp.sequence_type.elem_type)})"
    if which == "optional_type":
        return f"optional({_type_str(tp.optional_type.elem_type)})"
    if which == "map_type":
        return f"map({_dtype_name(tp.map_type.key_type)},{_type_str(tp.map_type.value_type)})"
    if which == "sparse_tensor_type":
        return f"sparse({_dtype_name(tp.sparse_tensor_type.elem_type)})"
    return "?"


def _opset_of(model: onnx.ModelProto, domain: str) -> int:
    for oi in model.opset_import:
        if oi.domain == domain or (domain in ("", "ai.onnx") and oi.domain in ("", "ai.onnx")):
            return int(oi.version)
    return 0


def _since(op: str, opset: int, domain: str) -> int | None:
    import onnx.defs

    try:
        return int(onnx.defs.get_schema(op, opset, domain).since_version)
    except Exception:
        return None


def _lower_opset(model: onnx.ModelProto, max_opset: int, max_ir: int | None = None) -> int | None:
    """Restamp the model at ``max_opset`` (and ``max_ir``) when it is still valid there.

    Test cases are stamped with the newest opset, which an older ORT refuses
    outright, though the node usually means the same at the older opset (or
    at the previous revision of the op, with the same attributes and types).
    The restamped model is kept only if ``onnx.checker`` (full check, with
    shape inference) accepts it; the case then records the revision it
    resolves to and the opset it was lowered from. Modifies ``model`` in place
    (the caller passes a copy); returns the original opset, or None.
    """
    import onnx

    cur = _opset_of(model, "")
    if cur <= max_opset:
        return None
    saved_ir = model.ir_version
    for oi in model.opset_import:
        if oi.domain in ("", "ai.onnx"):
            oi.version = max_opset
    if max_ir and model.ir_version > max_ir:
        model.ir_version = max_ir
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception:
        for oi in model.opset_import:
            if oi.domain in ("", "ai.onnx"):
                oi.version = cur
        model.ir_version = saved_ir
        return None
    return cur


def _input_dtypes(model: onnx.ModelProto) -> list[str]:
    inits = {t.name for t in model.graph.initializer}
    return [_type_str(i.type) for i in model.graph.input if i.name not in inits]


def _variant(model: onnx.ModelProto, dtype: str) -> onnx.ModelProto | None:
    """Copy of a float32 model with every float32 tensor type switched to ``dtype``."""
    import onnx

    elem = getattr(onnx.TensorProto, dtype.upper())
    m = onnx.ModelProto()
    m.CopyFrom(model)
    changed = False
    for vi in [*m.graph.input, *m.graph.output, *m.graph.value_info]:
        tt = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
        if tt is not None and tt.elem_type == onnx.TensorProto.FLOAT:
            tt.elem_type = elem
            changed = True
    if not changed or m.graph.initializer:
        return None
    try:
        onnx.checker.check_model(m, full_check=True)
    except Exception:
        return None
    return m


def build_cases(
    *,
    max_opset: int | None = None,
    max_ir: int | None = None,
    opset: int | None = None,
    ops: Sequence[str] | None = None,
    names: Sequence[str] | None = None,
    limit: int | None = None,
    variants: bool = True,
) -> list[ProbeCase]:
    """Single-node models from ONNX's node test cases, plus dtype variants.

    ``max_opset`` and ``max_ir`` are the runner's ORT limits (models above them
    are lowered when the op's revision allows; the IR version is lowered too,
    and a dtype that needs the newer IR then fails to load, which is recorded); ``opset`` keeps only cases at or below that
    opset; ``ops`` restricts to these op types and ``names`` to these case
    names (e.g. to re-measure the cases a loaded machine timed out on).
    """
    import onnx
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        testcases = collect_testcases()
    cases: list[ProbeCase] = []
    first_float: dict[tuple[str, str], ProbeCase] = {}
    wanted = {o.lower() for o in ops} if ops else None
    for tc in sorted(testcases, key=lambda t: t.name):
        model = tc.model
        assert model is not None, "node test cases are built from a model, not a URL"
        if len(model.graph.node) != 1:
            continue  # function-expanded (multi-node) cases say nothing per op
        node = model.graph.node[0]
        if wanted is not None and node.op_type.lower() not in wanted:
            continue
        domain = "" if node.domain == "ai.onnx" else node.domain
        m = onnx.ModelProto()
        m.CopyFrom(model)
        lowered = _lower_opset(m, max_opset, max_ir) if max_opset and domain == "" else None
        if max_ir and m.ir_version > max_ir:
            m.ir_version = max_ir
        op_opset = _opset_of(m, domain)
        if opset is not None and domain == "" and op_opset > opset:
            continue
        case = ProbeCase(
            name=tc.name,
            op_type=node.op_type,
            domain=domain,
            opset=op_opset,
            since_version=_since(node.op_type, op_opset, domain),
            input_dtypes=_input_dtypes(m),
            model=m,
            opset_lowered_from=lowered,
        )
        cases.append(case)
        key = (domain, node.op_type)
        if key not in first_float and case.input_dtypes and set(case.input_dtypes) == {"float"}:
            first_float[key] = case
    if variants:
        for (_, _), base in sorted(first_float.items()):
            for dtype in VARIANT_DTYPES:
                vm = _variant(base.model, dtype)
                if vm is None:
                    continue
                cases.append(
                    ProbeCase(
                        name=f"{base.name}__{dtype}",
                        op_type=base.op_type,
                        domain=base.domain,
                        opset=base.opset,
                        since_version=base.since_version,
                        input_dtypes=_input_dtypes(vm),
                        model=vm,
                        variant=dtype,
                        opset_lowered_from=base.opset_lowered_from,
                    )
                )
    if names is not None:
        wanted_names = set(names)
        cases = [c for c in cases if c.name in wanted_names]
    if limit is not None:
        cases = cases[:limit]
    return cases


# -- measuring ---------------------------------------------------------------------


def _measure(case: ProbeCase, res: SessionResult, provider: str) -> Measurement:
    m = Measurement(
        name=case.name,
        op=case.op_type,
        domain=case.domain,
        opset=case.opset,
        since=case.since_version,
        dtypes=case.input_dtypes,
        claimed=None,
        status=res.status,
        create_s=res.create_s,
        variant=case.variant,
        opset_lowered_from=case.opset_lowered_from,
        signature=case.signature,
        seen=case.seen,
        seen_in=list(case.seen_in) or None,
    )
    if res.status == "error":
        err = res.error or ""
        m.status = "load-error" if any(k in err for k in _LOAD_ERROR_MARKERS) else "session-error"
    if res.status != STATUS_OK:
        m.error = _short(res.error)
    mine = [v for v in res.verdicts if v.op_type == case.op_type]
    if res.ok:
        match = match_assignment(case.model, res.assignment)
        ep = match.ep_by_index.get(0)
        m.nodes_on_ep = sum(1 for n in res.assignment if n.ep == provider)
        if ep is not None:
            m.claimed = ep == provider
        elif res.assignment:
            m.claimed = any(n.ep == provider and n.op_type == case.op_type for n in res.assignment)
        else:
            # The model had nothing left to place (e.g. folded away): ask the log.
            m.claimed = any(v.passed for v in mine) if mine else None
    elif mine:
        m.claimed = any(v.passed for v in mine) and not any(not v.passed for v in mine)
    elif m.status == "session-error":
        m.claimed = _claim_from_error(res.error or "", provider)
        if m.claimed is False:
            m.reason = _short(res.error)
    if provider == "CPUExecutionProvider" and res.ok:
        m.claimed = True
    if m.claimed is False:
        reasons = [v.reason for v in mine if not v.passed and v.reason]
        if reasons:
            m.reason = _short(reasons[-1])
    return m


def _claim_from_error(err: str, provider: str) -> bool | None:
    """Who held the node when the session failed, from the error text alone."""
    if any(k in err for k in _NO_KERNEL_MARKERS):
        return False
    own = _EP_SOURCE_DIRS.get(provider)
    if own and own in err:
        return True  # claimed, then failed in the EP's own code
    cpu = _EP_SOURCE_DIRS["CPUExecutionProvider"]
    if provider != "CPUExecutionProvider" and cpu in err:
        return False  # a CPU kernel was being built for the node
    return None


def _short(text: str | None, limit: int = 600) -> str | None:
    if text is None:
        return None
    text = _TMP_MODEL_RE.sub("<model>", " ".join(text.split()))
    text = _SRC_PATH_RE.sub(r"\1", text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def ort_limits(ort_version: str | None) -> tuple[int | None, int | None]:
    """(max ai.onnx opset, max IR version) the runner's ORT loads (rules/ort_versions.json)."""
    if not ort_version:
        return None, None
    try:
        from onnxlint.data import load_json

        table = load_json("ort_versions.json")["releases"]
    except Exception:
        return None, None
    mm = ".".join(ort_version.split(".")[:2])
    for row in table:
        if row.get("ort") == mm:
            ir = row.get("max_ir")
            return int(row["max_opset"]), (int(ir) if ir is not None else None)
    return None, None


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
            report.measurements.append(_measure(case, res, spec.provider))
            if res.versions and not report.versions:
                report.versions = _public_versions(res.versions)
            if "qnn_sdk" in res.versions:
                report.versions["qnn_sdk"] = res.versions["qnn_sdk"]
        done = start + len(part)
        claimed = sum(1 for m in report.measurements if m.claimed)
        say(f"  {done}/{len(cases)} models, {claimed} claimed")
    return report


def signature_cases(
    models: Sequence[str | os.PathLike[str]],
    *,
    ops: Sequence[str] | None = None,
    limit: int | None = None,
) -> tuple[list[ProbeCase], str]:
    """Probe cases from the distinct node signatures of ``models``, and their provenance."""
    from onnxlint import signatures

    files = signatures.model_files(models)
    sigs = signatures.collect(files)
    wanted = {o.lower() for o in ops} if ops else None
    cases = [
        ProbeCase(
            name=s.name,
            op_type=s.op_type,
            domain=s.domain,
            opset=s.opset,
            since_version=_since(s.op_type, s.opset, s.domain),
            input_dtypes=s.input_dtypes,
            model=s.model,
            signature=s.key,
            seen=s.seen,
            seen_in=list(s.models),
        )
        for s in sorted(sigs.signatures.values(), key=lambda s: s.key)
        if wanted is None or s.op_type.lower() in wanted
    ]
    if limit is not None:
        cases = cases[:limit]
    skipped = ", ".join(f"{n} {why}" for why, n in sorted(sigs.skipped.items())) or "none"
    source = (
        f"distinct node signatures of {sigs.models} models ({sigs.nodes} nodes, "
        f"{len(sigs.signatures)} signatures; skipped: {skipped}) as single-node models "
        "(onnxlint probe --from-models)"
    )
    return cases, source


def _public_versions(v: dict[str, Any]) -> dict[str, Any]:
    """Versions without machine-specific paths."""
    import onnx

    out = {k: val for k, val in v.items() if k != "executable"}
    out["onnx_models_from"] = onnx.__version__
    return out


# -- comparing with the shipped profile -----------------------------------------


@dataclass
class Disagreement:
    name: str
    op: str
    domain: str
    opset: int
    dtypes: list[str]
    measured: bool
    predicted: bool
    reason: str | None  # the EP's reason (measured) when refused
    profile_reason: str | None  # the profile's reason when it predicts a refusal


def compare_with_profile(
    report: ProbeReport | dict[str, Any],
    cases: Sequence[ProbeCase] | None = None,
) -> tuple[float, list[Disagreement]] | None:
    """Agreement of the shipped profile with the measurement (claimed vs not claimed).

    Returns None when the profile machinery or a profile for the EP is missing.
    Cases the EP could not be measured on (claimed unknown) are left out.
    """
    try:
        from onnxlint import profiles
        from onnxlint.analyses import capability
    except ImportError:
        return None
    data = report.to_json() if isinstance(report, ProbeReport) else report
    try:
        profile = profiles.load_profile(data["ep"])
    except Exception:
        try:
            profile = profiles.load_profile(data["provider"])
        except Exception:
            return None
    # judged with the ORT-release limits of the ORT that was measured
    profile = profiles.for_ort(profile, data.get("versions", {}).get("onnxruntime"))
    if not cases and isinstance(report, ProbeReport):
        cases = report.cases
    if not cases:
        max_opset, max_ir = ort_limits(data.get("versions", {}).get("onnxruntime"))
        cases = build_cases(max_opset=max_opset, max_ir=max_ir, variants=True)
    by_name = {c.name: c for c in cases}
    agree = total = 0
    out: list[Disagreement] = []
    for row in data["cases"]:
        measured = row.get("claimed")
        case = by_name.get(row["name"])
        if measured is None or case is None or row.get("status") == "load-error":
            continue
        try:
            facts = capability.facts_from_model(case.model, 0)
            verdict = capability.evaluate(profile, facts)
        except Exception:
            continue
        predicted = _claims(verdict)
        if predicted is None:
            continue
        total += 1
        if predicted == measured:
            agree += 1
            continue
        out.append(
            Disagreement(
                name=row["name"],
                op=row["op"],
                domain=row.get("domain", ""),
                opset=row["opset"],
                dtypes=row.get("dtypes", []),
                measured=bool(measured),
                predicted=predicted,
                reason=row.get("reason"),
                profile_reason=getattr(verdict, "reason", None) or _verdict_reason(verdict),
            )
        )
    return (agree / total if total else 1.0), out


def _claims(verdict: Any) -> bool | None:
    for attr in ("claimed", "supported", "claims"):
        if hasattr(verdict, attr):
            v = getattr(verdict, attr)
            return None if v is None else bool(v)
    return None


def _verdict_reason(verdict: Any) -> str | None:
    for attr in ("message", "reasons"):
        v = getattr(verdict, attr, None)
        if v:
            return v if isinstance(v, str) else "; ".join(map(str, v))
    return None


def main_progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)
