"""What each ONNX Runtime release loads: max ai.onnx opset, ai.onnx.ml opset and IR version.

The table is data (``rules/ort_versions.json``) with its provenance; the target
release defaults to the installed onnxruntime and is set with ``--target-ort``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import metadata

from onnxlint.data import load_json


@dataclass(frozen=True)
class OrtRelease:
    version: str
    max_opset: int
    ml_opset: int
    max_ir: int
    source: str
    exact: bool  # False when the requested release is not in the table and a neighbour was used


def _key(version: str) -> tuple[int, ...]:
    parts = []
    for p in version.split(".")[:2]:
        digits = "".join(ch for ch in p if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


@cache
def installed_ort_version() -> str | None:
    try:
        return metadata.version("onnxruntime")
    except metadata.PackageNotFoundError:
        for dist in (
            "onnxruntime-gpu",
            "onnxruntime-openvino",
            "onnxruntime-directml",
            "onnxruntime-qnn",
        ):
            try:
                return metadata.version(dist)
            except metadata.PackageNotFoundError:
                continue
    return None


def release(target: str | None = None) -> OrtRelease:
    """The table row for ``target`` (default: the installed onnxruntime, else the newest row)."""
    rows = load_json("ort_versions.json")["releases"]
    wanted = target or installed_ort_version() or rows[-1]["ort"]
    key = _key(wanted)
    best = rows[0]
    for row in rows:
        if _key(row["ort"]) <= key:
            best = row
    exact = _key(best["ort"]) == key
    return OrtRelease(
        version=wanted,
        max_opset=best["max_opset"],
        ml_opset=best["ml_opset"],
        max_ir=best["max_ir"],
        source=best["source"],
        exact=exact,
    )


def first_release_with_opset(opset: int) -> str | None:
    for row in load_json("ort_versions.json")["releases"]:
        if row["max_opset"] >= opset:
            return str(row["ort"])
    return None
