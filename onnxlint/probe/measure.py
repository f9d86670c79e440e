"""One session result read as a measurement: whether the EP claimed the node, its own
reason when it refused, and a session error blamed on the EP only when its code threw it."""

from __future__ import annotations

import re

from onnxlint.ep_names import CPU_EP
from onnxlint.probe.report import Measurement, ProbeCase
from onnxlint.runtime.normalise import match_assignment
from onnxlint.runtime.results import STATUS_OK, SessionResult

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
    CPU_EP: "/providers/cpu/",
    "QNNExecutionProvider": "/providers/qnn/",
    "OpenVINOExecutionProvider": "/providers/openvino/",
    "CUDAExecutionProvider": "/providers/cuda/",
    "TensorrtExecutionProvider": "/providers/tensorrt/",
    "DmlExecutionProvider": "/providers/dml/",
}


# "/onnxruntime_src/onnxruntime/core/providers/cpu/x.cc:12" -> "core/providers/cpu/x.cc:12"
_SRC_PATH_RE = re.compile(r"/\S*?/onnxruntime/(core/\S+)")


_TMP_MODEL_RE = re.compile(r"\S*onnxlint-models-[^/\s]+/model-\d+\.onnx")


def measure(case: ProbeCase, res: SessionResult, provider: str) -> Measurement:
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
    if provider == CPU_EP and res.ok:
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
    cpu = _EP_SOURCE_DIRS[CPU_EP]
    if provider != CPU_EP and cpu in err:
        return False  # a CPU kernel was being built for the node
    return None


def _short(text: str | None, limit: int = 600) -> str | None:
    if text is None:
        return None
    text = _TMP_MODEL_RE.sub("<model>", " ".join(text.split()))
    text = _SRC_PATH_RE.sub(r"\1", text)
    return text if len(text) <= limit else text[: limit - 3] + "..."
