"""What the installed onnxruntime's CPU EP has kernels for.

ORT's kernel registry is read once per ORT build and kept in the cache folder
(``ort-kernels/``, keyed like the ORT limits by the build: version, location, size and
mtime of its native libraries), so that a lint does not import onnxruntime (about
0.15 s) to look up one operator. ``ONNXLINT_NO_CACHE`` turns the file off; an entry
that is unreadable, of another schema or another build is read from ORT again and
rewritten.
"""

from __future__ import annotations

import functools
from typing import Any

from onnxlint.ep_names import CPU_EP

KERNELS_SCHEMA = "onnxlint-ort-cpu-kernels/1"
#: a kernel table is a few KB; anything larger in its place is not one
MAX_ENTRY_BYTES = 1 << 20

Kernels = dict[str, list[tuple[int, int]]]


@functools.cache
def _cpu_kernels() -> Kernels | None:
    """ai.onnx op -> CPU kernel version ranges of the installed onnxruntime (None if unknown)."""
    from onnxlint.analyses.ort_tables import ort_table

    return ort_table("ort-kernels", KERNELS_SCHEMA, "kernels", _from_ort, _parse, MAX_ENTRY_BYTES)


def _from_ort() -> Kernels | None:
    try:
        from onnxruntime.capi import onnxruntime_pybind11_state as ort_state

        out: Kernels = {}
        for k in ort_state.get_all_opkernel_def():
            if k.provider == CPU_EP and k.domain in ("", "ai.onnx"):
                lo, hi = k.version_range
                out.setdefault(k.op_name, []).append((int(lo), int(hi)))
        return out
    except Exception:
        return None


def _parse(stored: Any) -> Kernels | None:
    """A stored kernel table, checked entry by entry (None when one is not a range list)."""
    out: Kernels = {}
    for op, ranges in stored.items():
        pairs = [(lo, hi) for lo, hi in ranges]
        if not isinstance(op, str) or not all(
            type(lo) is int and type(hi) is int for lo, hi in pairs
        ):
            return None
        out[op] = pairs
    return out


def ort_registers(op_type: str) -> bool | None:
    """Whether the installed onnxruntime's CPU EP has a kernel for ``op_type`` in the
    ai.onnx domain at some version, ONNX's operators or not (ORT registers some contrib
    kernels there, such as SimplifiedLayerNormalization); None when it cannot tell."""
    kernels = _cpu_kernels()
    return None if kernels is None else op_type in kernels


def ort_kernel_since(op_type: str, opset: int) -> int | None:
    """The first version of the installed onnxruntime's ai.onnx CPU kernels for ``op_type``
    that a model importing ``opset`` reaches (ORT's own older registrations included: its
    LayerNormalization contrib op was registered in ai.onnx from version 1, years before
    ONNX's opset 17); None when there is none or it cannot tell."""
    kernels = _cpu_kernels()
    starts = [lo for lo, _ in (kernels or {}).get(op_type, []) if lo <= opset]
    return min(starts) if starts else None


def cpu_has_kernel(op_type: str, since: int | None) -> bool:
    kernels = _cpu_kernels()
    if kernels is None:
        return True  # cannot tell: assume ORT runs the op as it is, not expanded
    ranges = kernels.get(op_type, [])
    return any(lo <= (since or lo) <= hi for lo, hi in ranges)


CONTRIB_TYPES_SCHEMA = "onnxlint-ort-cpu-contrib-types/1"

#: com.microsoft op -> each CPU kernel's type constraints (constraint name -> types)
ContribTypes = dict[str, list[dict[str, list[str]]]]


@functools.cache
def _cpu_contrib_types() -> ContribTypes | None:
    """The installed onnxruntime's com.microsoft CPU kernels and their type constraints."""
    from onnxlint.analyses.ort_tables import ort_table

    return ort_table(
        "ort-contrib-kernels",
        CONTRIB_TYPES_SCHEMA,
        "kernels",
        _contrib_types_from_ort,
        _parse_contrib_types,
        MAX_ENTRY_BYTES,
    )


def _contrib_types_from_ort() -> ContribTypes | None:
    try:
        from onnxruntime.capi import onnxruntime_pybind11_state as ort_state

        out: ContribTypes = {}
        for k in ort_state.get_all_opkernel_def():
            if k.provider == CPU_EP and k.domain == "com.microsoft":
                constraints = {str(n): [str(t) for t in ts] for n, ts in k.type_constraints.items()}
                out.setdefault(k.op_name, []).append(constraints)
        return out
    except Exception:
        return None


def _parse_contrib_types(stored: Any) -> ContribTypes | None:
    out: ContribTypes = {}
    for op, kernels in stored.items():
        if not isinstance(op, str) or not isinstance(kernels, list):
            return None
        parsed = []
        for k in kernels:
            if not isinstance(k, dict) or not all(
                isinstance(n, str) and isinstance(ts, list) and all(isinstance(t, str) for t in ts)
                for n, ts in k.items()
            ):
                return None
            parsed.append({n: list(ts) for n, ts in k.items()})
        out[op] = parsed
    return out


def cpu_contrib_kernel_for(op_type: str, constraint: str, dtype: str) -> bool | None:
    """Whether the installed onnxruntime's CPU EP has a ``com.microsoft`` ``op_type`` kernel
    whose type constraint ``constraint`` admits ``tensor(dtype)``; None when it cannot tell."""
    table = _cpu_contrib_types()
    if table is None:
        return None
    wanted = f"tensor({dtype})"
    return any(wanted in k.get(constraint, ()) for k in table.get(op_type, []))
