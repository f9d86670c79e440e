"""Operator revisions: which revision of an op an opset resolves to, and at which opsets a
profile's supported revisions apply (onnx.defs is imported lazily: it is only needed for
nodes whose revision the caller did not resolve, and for "would work at")."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from onnxlint.profiles import OpSupport, Profile


@lru_cache(maxsize=4096)
def revision_of(op_type: str, domain: str, opset: int) -> int | None:
    """The since_version of ``op_type`` in ``domain`` at ``opset``; None if unknown."""
    import onnx.defs

    from onnxlint.schema_registry import SCHEMAS_LOCK

    d = "" if domain == "ai.onnx" else domain
    try:
        with SCHEMAS_LOCK:  # never a schema lent to an inference in another thread
            return int(onnx.defs.get_schema(op_type, opset, d).since_version)
    except Exception:
        return None


@lru_cache(maxsize=1)
def _latest_onnx_opset() -> int:
    import onnx.defs

    return int(onnx.defs.onnx_opset_version())


def opsets_for(profile: Profile, support: OpSupport) -> tuple[int, ...]:
    """Model opsets at which ``support`` covers the op's revision (within the EP's opset limits)."""
    limit = profile.opsets.get(support.domain)
    if support.domain == "ai.onnx":
        hi = limit.max if limit and limit.max else _latest_onnx_opset()
    else:
        hi = limit.max if limit and limit.max else 0
    lo = limit.min if limit and limit.min else 1
    out: list[int] = []
    for opset in range(lo, hi + 1):
        rev = revision_of(support.op, support.domain, opset)
        if rev is not None and support.range_for(rev) is not None:
            out.append(opset)
    return tuple(out)


def compress_opsets(opsets: Sequence[int]) -> str:
    """(7, 8, 9, 13) -> '7-9, 13'."""
    spans: list[list[int]] = []
    for o in opsets:
        if spans and o == spans[-1][1] + 1:
            spans[-1][1] = o
        else:
            spans.append([o, o])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)
