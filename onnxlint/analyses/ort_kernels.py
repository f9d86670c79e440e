"""What the installed onnxruntime's CPU EP has kernels for."""

from __future__ import annotations

import functools

from onnxlint.ep_names import CPU_EP


@functools.cache
def _cpu_kernels() -> dict[str, list[tuple[int, int]]] | None:
    """ai.onnx op -> CPU kernel version ranges of the installed onnxruntime (None if unknown)."""
    try:
        from onnxruntime.capi import onnxruntime_pybind11_state as ort_state

        out: dict[str, list[tuple[int, int]]] = {}
        for k in ort_state.get_all_opkernel_def():
            if k.provider == CPU_EP and k.domain in ("", "ai.onnx"):
                lo, hi = k.version_range
                out.setdefault(k.op_name, []).append((int(lo), int(hi)))
        return out
    except Exception:
        return None


def cpu_has_kernel(op_type: str, since: int | None) -> bool:
    kernels = _cpu_kernels()
    if kernels is None:
        return True  # cannot tell: assume ORT runs the op as it is, not expanded
    ranges = kernels.get(op_type, [])
    return any(lo <= (since or lo) <= hi for lo, hi in ranges)
