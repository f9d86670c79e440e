"""The input types the installed onnxruntime's contrib schemas (``com.microsoft``) allow.

ORT checks each node's input types against its schema when it loads a model and refuses
the model on a mismatch ("Type Error: Type 'tensor(uint8)' of input parameter (...) of
operator (QGemm) in node (...) is invalid."), whatever the EP. ONNX's checker knows no
contrib schema, so only ORT's own table can tell. It is read once per ORT build
(``get_all_operator_schema``) and kept in the cache folder like the CPU kernel table
(``analyses.ort_kernels``: importing onnxruntime costs about 0.3 s with the schemas),
and only for a model that has contrib nodes.
"""

from __future__ import annotations

import functools
from typing import Any

CONTRIB_SCHEMA = "onnxlint-ort-contrib-inputs/1"
#: the table is a few tens of KB; anything much larger in its place is not one
MAX_ENTRY_BYTES = 4 << 20
CONTRIB_DOMAIN = "com.microsoft"

#: op -> [(since_version, [allowed types of each formal input], last input variadic)]
Table = dict[str, list[tuple[int, list[list[str]], bool]]]


def allowed_input_types(op_type: str, opset: int, index: int) -> frozenset[str] | None:
    """The types (``tensor(float)``...) ORT's ``com.microsoft`` schema of ``op_type`` at
    domain opset ``opset`` allows for input ``index``; None when ORT has no such schema or
    input, or the table cannot be read."""
    table = _table()
    if table is None:
        return None
    revisions = [r for r in table.get(op_type, []) if r[0] <= opset]
    if not revisions:
        return None
    _, inputs, variadic = max(revisions, key=lambda r: r[0])
    if index >= len(inputs):
        if not (variadic and inputs):
            return None
        index = len(inputs) - 1
    return frozenset(inputs[index])


@functools.cache
def _table() -> Table | None:
    from onnxlint.analyses.ort_tables import ort_table

    return ort_table(
        "ort-contrib-inputs", CONTRIB_SCHEMA, "ops", _from_ort, _parse, MAX_ENTRY_BYTES
    )


def _from_ort() -> Table | None:
    try:
        from onnxruntime.capi import onnxruntime_pybind11_state as ort_state

        out: Table = {}
        for s in ort_state.get_all_operator_schema():
            if s.domain != CONTRIB_DOMAIN:
                continue
            inputs = [sorted(p.types) for p in s.inputs]
            variadic = bool(s.inputs) and "Variadic" in str(s.inputs[-1].option)
            out.setdefault(s.name, []).append((int(s.since_version), inputs, variadic))
        return out
    except Exception:
        return None


def _parse(stored: Any) -> Table | None:
    """A stored schema table, checked entry by entry (None when one is malformed)."""
    out: Table = {}
    for op, revisions in stored.items():
        rows: list[tuple[int, list[list[str]], bool]] = []
        for since, inputs, variadic in revisions:
            if not (
                isinstance(op, str)
                and type(since) is int
                and isinstance(variadic, bool)
                and all(
                    isinstance(types, list) and all(isinstance(t, str) for t in types)
                    for types in inputs
                )
            ):
                return None
            rows.append((since, inputs, variadic))
        out[op] = rows
    return out
