"""The single-node models a probe measures: ONNX's node test cases with dtype variants, or
the distinct node signatures of real models, at an opset the runner's ORT loads."""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

from onnxlint.probe.report import ProbeCase

if TYPE_CHECKING:
    import onnx


# dtype variants generated from the first float32 case of each op.
VARIANT_DTYPES = ("float16", "double", "int32", "int64", "int8", "uint8")


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
