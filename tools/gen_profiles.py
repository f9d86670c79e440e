"""Generate the EP capability profiles in ``rules/eps/`` from their upstream sources.

Generation has two steps. The extraction commands below read one kind of upstream source
each and write what they read (op entries, provenance, source-derived header fields) to
``rules/facts/sources/<id>.json``; every one of them then builds the profile. ``build``
makes ``rules/eps/<id>.json`` from the committed facts alone (the extracted sources plus
the curated facts of ``rules/facts/``, see ``ep_facts.py``), with no upstream clone;
``check`` says which field of which committed profile differs from what ``build`` makes
(``tests/test_profile_facts.py`` runs it).

Extraction commands:

    cpu          the installed onnxruntime (get_all_opkernel_def) + ONNX function bodies
    kernels-md   ORT docs/OperatorKernels.md (CUDA, DML sections)
    mobile       the CoreML / NNAPI op lists shipped in the onnxruntime wheel
    openvino     OpenVINO EP ov_versions/data_ops.cc (CPU, GPU, NPU)
    tensorrt     onnx-tensorrt docs/operators.md (TensorRT, NvTensorRtRtx)
    registry     C++ kernel registrations (WebGPU, XNNPACK, CANN, ROCm)
    migraphx     MIGraphX EP supported-op set
    qnn          QNN EP op-builder factory (HTP, CPU, GPU backends) + curated constraints
    vitisai      the VitisAI op list (curated, rules/facts/names.json)
    index        rules/eps/index.json from the profiles present
    build        rules/eps/<id>.json from rules/facts/ (all profiles, or the ids given)
    check        compare the committed profiles with what ``build`` makes
    adopt        take a hand-edited profile's changes over into rules/facts/

Upstream files are read from paths given on the command line (a local checkout or
``git show`` output); they are never copied into this repository. Only facts
(op names, revision ranges, element types) are written, each op entry pointing
at a provenance record naming the file and commit it came from. Curated
EP-wide facts and per-op constraints are JSON in ``rules/facts/`` (read by ``ep_facts.py``
next to this file).

Examples::

    python tools/gen_profiles.py cpu
    python tools/gen_profiles.py kernels-md --src OperatorKernels.md \\
        --repo onnxruntime/onnxruntime-qnn --commit cee6c0d91e58
    python tools/gen_profiles.py build
    python tools/gen_profiles.py check
    python tools/gen_profiles.py index
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RULES = REPO / "rules"
EPS = RULES / "eps"
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import ep_facts  # noqa: E402  (sibling module that reads the curated facts)

# What rules/eps/index.json records as its generator: the script's path before it moved to
# tools/, kept until the index may be rewritten (rules/eps/ is edited by others this wave).
INDEX_GENERATED_BY = "tools/gen_profiles.py index"

DOMAIN_MAP = {
    "": "ai.onnx",
    "ai.onnx": "ai.onnx",
    "kOnnxDomain": "ai.onnx",
    "kOnnxDomainAlias": "ai.onnx",
    "kMSInternalNHWCDomain": "ai.onnx",  # the layout transformer's NHWC twin of ai.onnx
    "com.ms.internal.nhwc": "ai.onnx",
    "kMSDomain": "com.microsoft",
    "com.microsoft": "com.microsoft",
    "kMLDomain": "ai.onnx.ml",
    "ai.onnx.ml": "ai.onnx.ml",
    "kMSDmlDomain": "com.microsoft.dml",
    "com.microsoft.dml": "com.microsoft.dml",
    "kPytorchAtenDomain": "org.pytorch.aten",
    "kMSExperimentalDomain": "com.microsoft.experimental",
}
# Domains only ORT's own graph transformers produce; a user's model never holds them.
INTERNAL_DOMAINS = {"com.microsoft.nchwc", "kMSNchwcDomain"}
INTERNAL_OPS = {"MemcpyFromHost", "MemcpyToHost"}

CPP_TYPES = {
    "float": "float",
    "double": "double",
    "MLFloat16": "float16",
    "BFloat16": "bfloat16",
    "int8_t": "int8",
    "int16_t": "int16",
    "int32_t": "int32",
    "int64_t": "int64",
    "uint8_t": "uint8",
    "uint16_t": "uint16",
    "uint32_t": "uint32",
    "uint64_t": "uint64",
    "bool": "bool",
    "string": "string",
    "std::string": "string",
    "Float8E4M3FN": "float8e4m3fn",
    "Float8E4M3FNUZ": "float8e4m3fnuz",
    "Float8E5M2": "float8e5m2",
    "Float8E5M2FNUZ": "float8e5m2fnuz",
    "Int4x2": "int4",
    "UInt4x2": "uint4",
}

DTYPE_RE = re.compile(
    r"^(float|float16|bfloat16|double|int4|int8|int16|int32|int64|uint4|uint8|uint16|uint32|"
    r"uint64|bool|string|complex64|complex128|float8e4m3fn|float8e4m3fnuz|float8e5m2|"
    r"float8e5m2fnuz|float4e2m1|float8e8m0|int2|uint2)$"
)


def ort_type(t: str) -> str | None:
    """'tensor(float)', 'seq(tensor(int64))', 'optional(tensor(bool))' -> element type name."""
    inner = t.strip()
    while True:
        m = re.match(r"^(tensor|seq|optional|sparse_tensor)\((.*)\)$", inner)
        if not m:
            break
        inner = m.group(2)
    inner = inner.lower()
    return inner if DTYPE_RE.match(inner) else None


class Registry:
    """Collects (domain, op, from, to, types) registrations and merges them into op entries."""

    def __init__(self, provenance: str) -> None:
        self.provenance = provenance
        self.ops: dict[tuple[str, str], dict[tuple[int, int | None], dict[str, set[str]]]] = (
            defaultdict(dict)
        )
        self.untyped: set[tuple[str, str, int, int | None]] = set()

    def add(
        self,
        domain: str,
        op: str,
        start: int,
        end: int | None,
        types: Mapping[str, Iterable[str]] | None = None,
    ) -> None:
        if domain in INTERNAL_DOMAINS or op in INTERNAL_OPS:
            return
        d = DOMAIN_MAP.get(domain, domain)
        ranges = self.ops[(d, op)]
        slot = ranges.setdefault((start, end), {})
        if not types:
            self.untyped.add((d, op, start, end))
        for k, vs in (types or {}).items():
            slot.setdefault(k, set()).update(v for v in vs if v)

    def entries(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for (domain, op), ranges in sorted(self.ops.items()):
            versions = []
            for (start, end), types in sorted(ranges.items(), key=lambda kv: kv[0][0]):
                v: dict[str, Any] = {"from": start}
                if end is not None:
                    v["to"] = end
                # A registration without type info accepts what the schema allows.
                if types and (domain, op, start, end) not in self.untyped:
                    v["types"] = {k: sorted(s) for k, s in sorted(types.items()) if s}
                versions.append(v)
            versions = _close_open_ranges(domain, op, _merge_overlaps(versions))
            out.append(
                {"domain": domain, "op": op, "versions": versions, "provenance": self.provenance}
            )
        return out


def _revisions(domain: str, op: str) -> list[int]:
    """Every since_version ONNX defines for ``op`` (empty for domains onnx does not know)."""
    import onnx.defs

    d = {"ai.onnx": "", "ai.onnx.ml": "ai.onnx.ml", "ai.onnx.preview.training": ""}.get(domain)
    if d is None:
        return []
    return sorted(
        {
            s.since_version
            for s in onnx.defs.get_all_schemas_with_history()
            if s.name == op and s.domain == d
        }
    )


def _close_open_ranges(
    domain: str, op: str, versions: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """ORT matches an open-ended kernel registration ("13+") only to the revision it starts
    at (kernel_registry.cc VerifyVersion); a later ONNX revision needs a new registration.
    So an open range really ends just before the op's next revision."""
    revs = _revisions(domain, op)
    for v in versions:
        if "to" not in v:
            later = [r for r in revs if r > v["from"]]
            if later:
                v["to"] = later[0] - 1
    return versions


def _merge_overlaps(versions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Registrations can overlap (NHWC twin, typed variants): fold them into disjoint ranges."""
    out: list[dict[str, Any]] = []
    for v in versions:
        if out:
            prev = out[-1]
            prev_end = prev.get("to")
            if prev_end is None or v["from"] <= prev_end:
                if prev_end is not None and "to" in v and v["to"] > prev_end:
                    prev["to"] = v["to"]
                elif "to" not in v:
                    prev.pop("to", None)
                if "types" in prev and "types" in v:
                    for k, vs in v["types"].items():
                        prev["types"][k] = sorted(set(prev["types"].get(k, [])) | set(vs))
                else:
                    prev.pop("types", None)
                continue
        out.append(v)
    return out


# ---------------------------------------------------------------------------
# Writers


def write_profile(
    profile_id: str,
    ops: list[dict[str, Any]],
    extra_prov: list[dict[str, Any]],
    extras: dict[str, Any] | None = None,
) -> Path:
    """Record what an extraction read (``rules/facts/sources/<id>.json``), then build the
    profile from it. ``extras``: header fields computed from the source (OpenVINO's dtype
    sets and scalar rules) and ``only_in_model`` ops."""
    source = {"provenance": extra_prov, "extras": extras or {}, "ops": ops}
    path = ep_facts.source_path(profile_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_dump(source) + "\n", encoding="utf-8")
    print(f"wrote {path.relative_to(REPO)} ({len(ops)} ops)")
    return write_built(profile_id)


def build_profile(profile_id: str, parts: list[str] | None = None) -> dict[str, Any]:
    """The profile that the committed facts make: no upstream source is read. ``parts``:
    the overlay parts to apply (default: those the profile's facts name)."""
    source = json.loads(ep_facts.source_path(profile_id).read_text(encoding="utf-8"))
    header = ep_facts.header(profile_id)
    header["provenance"] = header.get("provenance", []) + source["provenance"]
    extras = source.get("extras", {})
    if "tensor_dtypes" in extras:
        header["tensor_dtypes"] = extras["tensor_dtypes"]
    if extras.get("global_constraints"):
        header["global_constraints"] = (
            header.get("global_constraints", []) + extras["global_constraints"]
        )
    ops = ep_facts.apply_overlay(profile_id, source["ops"], extras, parts)
    return {
        "$schema": "../schema/ep-profile.schema.json",
        "schema_version": 1,
        "id": profile_id,
        **header,
        "ops": sorted(ops, key=lambda o: (o["domain"] != "ai.onnx", o["domain"], o["op"])),
    }


def render(doc: Any) -> str:
    """A generated file's text, as written to ``rules/``."""
    return _dump(doc) + "\n"


def write_built(profile_id: str) -> Path:
    doc = build_profile(profile_id)
    path = EPS / f"{profile_id}.json"
    EPS.mkdir(parents=True, exist_ok=True)
    path.write_text(render(doc), encoding="utf-8")
    print(f"wrote {path.relative_to(REPO)} ({len(doc['ops'])} ops)")
    return path


def drift(made: Any, committed: Any, where: str = "") -> list[str]:
    """Where ``committed`` differs from ``made``: one line per field, named by its path
    (ops by ``domain::op``, other list items by index)."""
    if isinstance(made, dict) and isinstance(committed, dict):
        out = []
        for k in [*made, *(k for k in committed if k not in made)]:
            if k not in committed:
                out.append(f"{where}.{k}: missing from the committed file")
            elif k not in made:
                out.append(f"{where}.{k}: in the committed file only")
            else:
                out += drift(made[k], committed[k], f"{where}.{k}")
        if not out and list(made) != list(committed):
            out.append(f"{where}: keys in another order")
        return out
    if isinstance(made, list) and isinstance(committed, list):
        if where == ".ops" and all(isinstance(o, dict) and "op" in o for o in made + committed):
            a = {f"{o['domain']}::{o['op']}": o for o in made}
            b = {f"{o['domain']}::{o['op']}": o for o in committed}
            out = drift(a, b, where)
            if not out and list(a) != list(b):
                out.append(f"{where}: ops in another order")
            return out
        if all(isinstance(o, dict) and isinstance(o.get("id"), str) for o in made + committed):
            # records named by id (provenance): an inserted record is one line, not a shift
            a = {o["id"]: o for o in made}
            b = {o["id"]: o for o in committed}
            if len(a) == len(made) and len(b) == len(committed):
                out = [
                    line.replace(f"{where}.{k}", f"{where}[{k}]", 1)
                    for k in [*a, *(k for k in b if k not in a)]
                    for line in drift(
                        {k: a.get(k)} if k in a else {}, {k: b[k]} if k in b else {}, where
                    )
                ]
                if not out and list(a) != list(b):
                    out.append(f"{where}: records in another order")
                return out
        out = [f"{where}[{i}]: {d}" for i, d in _list_drift(made, committed)]
        for i, (x, y) in enumerate(zip(made, committed, strict=False)):
            out += drift(x, y, f"{where}[{i}]")
        return out
    return [] if made == committed else [f"{where}: {committed!r} != {made!r} (made)"]


def _list_drift(made: list[Any], committed: list[Any]) -> list[tuple[int, str]]:
    if len(made) == len(committed):
        return []
    n = min(len(made), len(committed))
    if len(made) > n:
        return [(n, f"missing from the committed file: {made[n]!r}")]
    return [(n, f"in the committed file only: {committed[n]!r}")]


def check(profile_ids: Iterable[str], layout: bool = False) -> list[str]:
    """Every drift between the committed profiles (and the index) and what ``build`` makes
    from the facts, as ``<file><path>: ...`` lines. The data is compared (values and key
    order); ``layout``: also report a file whose text is laid out otherwise (a hand-edited
    file may break an array over lines, which changes no fact)."""
    made = {f"{pid}.json": build_profile(pid) for pid in profile_ids}
    made["index.json"] = build_index()
    out = []
    for name, doc in made.items():
        text = (EPS / name).read_text(encoding="utf-8")
        lines = [f"{name}{d}" for d in drift(doc, json.loads(text))]
        if layout and not lines and text != render(doc):
            lines.append(f"{name}: same data, other layout (gen_profiles.py build rewrites it)")
        out += lines
    return out


def _dump(doc: Any) -> str:
    """JSON with one op per line block but short arrays inline, so diffs stay readable."""
    text = json.dumps(doc, indent=2, ensure_ascii=False)
    # Collapse arrays of scalars onto one line.
    return re.sub(
        r"\[\s*((?:\"[^\"]*\"|-?\d+(?:\.\d+)?|true|false|null)(?:,\s*(?:\"[^\"]*\"|-?\d+(?:\.\d+)?|true|false|null))*)\s*\]",
        lambda m: "[" + re.sub(r",\s+", ", ", m.group(1)) + "]",
        text,
    )


def source_prov(
    pid: str, args: argparse.Namespace, file: str, note: str | None = None
) -> dict[str, Any]:
    p: dict[str, Any] = {"id": pid, "kind": "source", "repository": args.repo, "file": file}
    if args.commit:
        p["commit"] = args.commit
    if args.version:
        p["version"] = args.version
    if args.date:
        p["date"] = args.date
    if note:
        p["note"] = note
    return p


# ---------------------------------------------------------------------------
# CPU: the installed onnxruntime


def _body_has_kernels(schema: Any, rev: int, have: Mapping[tuple[str, str], Any]) -> bool:
    """Whether every ai.onnx node of ``schema``'s function body (at revision ``rev``) has a
    CPU kernel at the revision the body's opset resolves it to: a body node whose op has CPU
    kernels, but none for that revision, fails the session (measured with onnxruntime
    1.32.0: Bernoulli-22 expands to RandomUniformLike-22, registered only up to 21). A
    body node whose op has no kernel at all is expanded in turn and counted as claimed. A
    context-dependent body is built for float inputs (its op types do not depend on them)."""
    import onnx
    import onnx.defs
    from onnx import TensorProto, helper

    fn = onnx.FunctionProto()
    if schema.has_function:
        fn = schema.get_function_with_opset_version(rev) or schema.function_body
        if isinstance(fn, bytes):
            fn = onnx.FunctionProto.FromString(fn)
    else:
        n_in = max(schema.min_input, 1)
        node = helper.make_node(schema.name, [f"x{i}" for i in range(n_in)], ["y"])
        t = helper.make_tensor_type_proto(TensorProto.FLOAT, None).SerializeToString()
        try:
            raw = schema.get_context_dependent_function_with_opset_version(
                rev, node.SerializeToString(), [t] * n_in
            )
        except Exception:
            return True  # cannot build it here: keep the op claimed, as before
        fn.ParseFromString(raw)
    opset = next((o.version for o in fn.opset_import if o.domain in ("", "ai.onnx")), rev)
    for n in fn.node:
        if n.domain not in ("", "ai.onnx"):
            continue
        try:
            body_rev = onnx.defs.get_schema(n.op_type, opset, "").since_version
        except onnx.defs.SchemaError:
            return False
        entry = have.get(("ai.onnx", n.op_type))
        if entry is None:
            continue  # no kernel at all: ORT expands that op's own body in turn (Swish)
        if "versions" in entry and not any(
            v["from"] <= body_rev and ("to" not in v or body_rev <= v["to"])
            for v in entry["versions"]
        ):
            return False
    return True


def cmd_cpu(args: argparse.Namespace) -> None:
    import onnx
    import onnx.defs
    import onnxruntime
    from onnxruntime.capi import onnxruntime_pybind11_state as state

    reg = Registry("ort-cpu-kernels")
    for k in state.get_all_opkernel_def():
        if k.provider != "CPUExecutionProvider":
            continue
        start, end = k.version_range
        types = {name: [ort_type(t) for t in ts] for name, ts in k.type_constraints.items()}
        reg.add(k.domain, k.op_name, int(start), None if end >= 2**31 - 1 else int(end), types)
    ops = reg.entries()
    # ORT's InsertCastTransformer runs a float16 node on the CPU EP's float kernel, with
    # Casts around it, when the CPU EP has no float16 kernel: float16 is claimed wherever
    # float is.
    for o in ops:
        for v in o["versions"]:
            for k, ts in v.get("types", {}).items():
                if "float" in ts and "float16" not in ts:
                    v["types"][k] = sorted([*ts, "float16"])
    ops.append(
        {
            "domain": "ai.onnx",
            "op": "Constant",
            "provenance": "ort-cpu-kernels",
            "note": "ORT turns Constant nodes into initializers when it loads the graph",
        }
    )
    # ORT inlines an op that has no kernel but an ONNX function body; the CPU EP then
    # runs the expanded nodes, so those revisions count as claimed.
    have = {(o["domain"], o["op"]): o for o in ops}
    max_opset = ep_facts.header("cpu")["opsets"]["ai.onnx"]["max"]
    function_ops: list[dict[str, Any]] = []
    by_name: dict[str, list[Any]] = defaultdict(list)
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain == "" and s.since_version <= max_opset and not s.deprecated:
            by_name[s.name].append(s)
    for name, schemas in sorted(by_name.items()):
        schemas.sort(key=lambda s: s.since_version)
        entry = have.get(("ai.onnx", name))
        extra = []
        for i, s in enumerate(schemas):
            nxt = schemas[i + 1].since_version - 1 if i + 1 < len(schemas) else None
            rev = s.since_version
            hit = [
                v
                for v in (entry or {}).get("versions", [])
                if v["from"] <= rev and ("to" not in v or rev <= v["to"])
            ]
            if hit or (entry is not None and "versions" not in entry):
                # A kernel exists for this revision: ORT does not expand the body, even
                # for element types the kernel lacks (measured: Elu-22 double fails).
                continue
            if s.has_function or s.has_context_dependent_function:
                if not _body_has_kernels(s, rev, have):
                    continue
                r: dict[str, Any] = {"from": rev}
                if nxt is not None:
                    r["to"] = nxt
                r["note"] = "no CPU kernel; ORT expands the ONNX function body"
                extra.append(r)
        if not extra:
            continue
        if entry is None:
            function_ops.append(
                {"domain": "ai.onnx", "op": name, "versions": extra, "provenance": "onnx-functions"}
            )
        else:
            entry["versions"] = sorted(entry.get("versions", []) + extra, key=lambda v: v["from"])
    ops += function_ops
    prov = [
        {
            "id": "ort-cpu-kernels",
            "kind": "runtime",
            "tool": "onnxruntime.capi.onnxruntime_pybind11_state.get_all_opkernel_def()",
            "packages": {"onnxruntime": onnxruntime.__version__},
            "version": f"onnxruntime {onnxruntime.__version__} get_all_opkernel_def",
        },
        {
            "id": "onnx-functions",
            "kind": "runtime",
            "tool": "onnx.defs.get_all_schemas_with_history() (has_function)",
            "packages": {"onnx": onnx.__version__},
            "note": "ops without a CPU kernel that ORT inlines from their ONNX function body",
        },
    ]
    write_profile("cpu", ops, prov)


# ---------------------------------------------------------------------------
# docs/OperatorKernels.md (CUDA, DML)


def parse_kernels_md(text: str) -> dict[str, Registry]:
    regs: dict[str, Registry] = {}
    provider = None
    domain = "ai.onnx"
    op = None
    for line in text.splitlines():
        m = re.match(r"^## Operators implemented by (\w+)", line)
        if m:
            provider = m.group(1)
            regs[provider] = Registry("ort-operator-kernels")
            continue
        m = re.match(r"^\|\*\*Operator Domain:\*\* \*([\w.]+)\*", line)
        if m:
            domain = m.group(1)
            continue
        if provider is None or not line.startswith("|") or line.startswith("|--"):
            continue
        cells = line.strip().strip("|").split("|")
        if len(cells) < 4 or cells[0] == "Op Name":
            continue
        if cells[0]:
            op = cells[0].strip()
        if op is None:
            continue
        ver = cells[2].strip()
        m1 = re.match(r"^\[(\d+),\s*(\d+)\]$", ver)
        m2 = re.match(r"^(\d+)\+$", ver)
        m3 = re.match(r"^(\d+)$", ver)
        if m1:
            start, end = int(m1.group(1)), int(m1.group(2))
        elif m2:
            start, end = int(m2.group(1)), None
        elif m3:
            start = end = int(m3.group(1))
        else:
            continue
        types: dict[str, list[str]] = {}
        for part in cells[3].split("<br/>"):
            tm = re.match(r"^\s*\*\*(\w+)\*\*\s*=\s*(.*)$", part)
            if tm:
                types[tm.group(1)] = [
                    t
                    for t in (ort_type(x) for x in re.split(r",\s*(?![^()]*\))", tm.group(2)))
                    if t
                ]
        regs[provider].add(domain, op, start, end, types)
    return regs


def cmd_kernels_md(args: argparse.Namespace) -> None:
    text = Path(args.src).read_text(encoding="utf-8")
    regs = parse_kernels_md(text)
    prov = [source_prov("ort-operator-kernels", args, "docs/OperatorKernels.md")]
    for provider, pid in (("CUDAExecutionProvider", "cuda"), ("DmlExecutionProvider", "dml")):
        write_profile(pid, regs[provider].entries(), prov)


# ---------------------------------------------------------------------------
# CoreML / NNAPI lists from the onnxruntime wheel


def cmd_mobile(args: argparse.Namespace) -> None:
    import onnxruntime

    base = Path(onnxruntime.__file__).parent / "tools" / "mobile_helpers"
    version = onnxruntime.__version__
    for fname, pid in (
        ("coreml_supported_neuralnetwork_ops.md", "coreml-neuralnetwork"),
        ("coreml_supported_mlprogram_ops.md", "coreml-mlprogram"),
        ("nnapi_supported_ops.md", "nnapi"),
    ):
        ops = []
        for line in (base / fname).read_text(encoding="utf-8").splitlines():
            m = re.match(r"^\|([\w.]+):(\w+)\|", line)
            if not m:
                continue
            domain, op = m.group(1), m.group(2)
            ops.append(
                {
                    "domain": DOMAIN_MAP.get(domain, domain),
                    "op": op,
                    "provenance": "ort-mobile-helpers",
                }
            )
        prov = [
            {
                "id": "ort-mobile-helpers",
                "kind": "runtime",
                "file": f"onnxruntime/tools/mobile_helpers/{fname}",
                "packages": {"onnxruntime": version},
                "note": "op list shipped in the onnxruntime wheel; the per-op notes were turned "
                "into constraints by hand (ep_facts.py)",
            }
        ]
        write_profile(pid, _dedupe(ops), prov)


def _dedupe(ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    for o in ops:
        seen.setdefault((o["domain"], o["op"]), o)
    return list(seen.values())


# ---------------------------------------------------------------------------
# OpenVINO data_ops.cc


def _ov_version(tag: str) -> tuple[int, int]:
    y, m = tag.removeprefix("V_").split("_")
    return int(y), int(m)


def cmd_openvino(args: argparse.Namespace) -> None:
    text = Path(args.src).read_text(encoding="utf-8")
    target = _ov_version(args.ov_version)
    # supported_op_mode entries: {"Op", V_yyyy_m, {"CPU", "GPU"}}
    start = text.index("supported_op_mode")
    end = text.index("};", start)
    per_device: dict[str, set[str]] = defaultdict(set)
    for m in re.finditer(r'\{"(\w+)",\s*(V_\d+_\d+),\s*\{([^}]*)\}\}', text[start:end]):
        op, ver, devs = m.group(1), m.group(2), re.findall(r'"(\w+)"', m.group(3))
        if _ov_version(ver) > target:
            continue
        for d in devs:
            per_device[d].add(op)
    # The NPU device is checked against the CPU op list (GetCapability maps NPU -> CPU).
    devices = {
        "CPU": per_device["CPU"] | per_device["All"],
        "GPU": per_device["GPU"] | per_device["All"],
    }
    devices["NPU"] = devices["CPU"] | per_device["NPU"]
    # no_dimension_supported_: ops that accept rank-0 (scalar) non-constant tensors.
    nodim: dict[str, set[str]] = defaultdict(set)
    for m in re.finditer(
        r'no_dimension_supported_\.push_back\(\{"(\w+)",\s*(V_\d+_\d+),\s*\{([^}]*)\}\}\)', text
    ):
        if _ov_version(m.group(2)) > target:
            continue
        for d in re.findall(r'"(\w+)"', m.group(3)):
            nodim[d].add(m.group(1))
    # dtype sets per device.
    sets: dict[str, set[str]] = defaultdict(set)
    for m in re.finditer(
        r"supported_types_(\w+?)_\.insert\(\s*std::make_pair\((V_\d+_\d+),\s*[\w:]*TensorProto_DataType_(\w+)\)",
        text,
    ):
        if _ov_version(m.group(2)) <= target:
            sets[m.group(1)].add(m.group(3).lower())
    only_in_model_block = text[text.index("ops_supported_only_in_model") :]
    only_in_model = re.findall(r'"(\w+)"', only_in_model_block[: only_in_model_block.index("}")])
    prov = [
        source_prov(
            "ov-data-ops",
            args,
            "onnxruntime/core/providers/openvino/ov_versions/data_ops.cc",
            note=f"op lists and dtype sets as enabled for OpenVINO {args.ov_version}",
        ),
        source_prov(
            "ov-capability",
            args,
            "onnxruntime/core/providers/openvino/ov_versions/capability.cc",
            note="whole-graph and cluster rules of GetCapability",
        ),
    ]
    for device in ("CPU", "GPU", "NPU"):
        pid = f"openvino-{device.lower()}"
        ops = [
            {"domain": "ai.onnx", "op": op, "provenance": "ov-data-ops"}
            for op in sorted(devices[device])
        ]
        # data_ops matches op types by name in any domain; list the contrib ops too.
        ops += [
            {"domain": "com.microsoft", "op": op, "provenance": "ov-data-ops"}
            for op in sorted(devices[device] & ep_facts.ov_contrib_ops())
        ]
        dev_key = "cpu" if device in ("CPU", "NPU") else "gpu"
        allowed = sorted(sets[dev_key] | {"int16", "uint16"})
        allowed_const = sorted(sets["initializer"] | {"int16", "uint16"})
        nd = sorted(nodim["All"] | nodim[device] | (nodim["CPU"] if device == "NPU" else set()))
        extras = {
            "tensor_dtypes": {
                "allowed": allowed,
                "allowed_constant": allowed_const,
                "reason": f"the OpenVINO EP accepts only these element types on the {device} device",
                "provenance": "ov-data-ops",
            },
            "global_constraints": [
                {
                    "kind": "min_rank",
                    "value": 1,
                    "skip_constant_inputs": True,
                    "except_ops": nd,
                    "reason": "OpenVINO refuses scalar (rank-0) tensors for this op",
                    "provenance": "ov-data-ops",
                },
                {
                    "kind": "no_zero_dims",
                    "skip_constant_inputs": True,
                    "except_ops": ["Cast", "Concat", "Equal", "Expand", "Resize", "Shape", "Slice"]
                    if device != "NPU"
                    else [],
                    "reason": "OpenVINO refuses tensors with a zero-sized dimension for this op",
                    "provenance": "ov-data-ops",
                },
            ],
            "only_in_model": only_in_model,
        }
        write_profile(pid, ops, prov, extras)


# ---------------------------------------------------------------------------
# onnx-tensorrt docs/operators.md


TRT_TYPES = {
    "FP32": "float",
    "FP16": "float16",
    "BF16": "bfloat16",
    "INT32": "int32",
    "INT64": "int64",
    "INT8": "int8",
    "INT4": "int4",
    "UINT8": "uint8",
    "BOOL": "bool",
    "FP8": "float8e4m3fn",
    "DOUBLE": "double",
    "FP64": "double",
}


def cmd_tensorrt(args: argparse.Namespace) -> None:
    text = Path(args.src).read_text(encoding="utf-8")
    ops = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or cells[1] not in ("Y", "N") or not re.match(r"^\w+$", cells[0]):
            continue
        if cells[1] != "Y":
            continue
        entry: dict[str, Any] = {
            "domain": "ai.onnx",
            "op": cells[0],
            "provenance": "onnx-tensorrt-operators",
        }
        if len(cells) > 2 and cells[2]:
            types = sorted(
                {TRT_TYPES[t.strip()] for t in cells[2].split(",") if t.strip() in TRT_TYPES}
            )
            if types:
                entry["types"] = {"in:0": types}
        ops.append(entry)
    prov = [source_prov("onnx-tensorrt-operators", args, "docs/operators.md")]
    for pid in args.profiles.split(","):
        write_profile(pid, [json.loads(json.dumps(o)) for o in ops], prov)


# ---------------------------------------------------------------------------
# C++ kernel registrations (WebGPU, XNNPACK, CANN, ROCm)

KERNEL_RE = re.compile(
    r"ONNX_OPERATOR_(VERSIONED_)?(TWO_TYPED_|TYPED_)?KERNEL_CLASS_NAME\(\s*(k\w+)\s*,\s*(k\w+)\s*,([^;]*?)\)\s*[;>,]",
    re.S,
)


def parse_registrations(text: str, ep_const: str, reg: Registry) -> None:
    for m in KERNEL_RE.finditer(text):
        if m.group(3) != ep_const:
            continue
        versioned, typed = bool(m.group(1)), m.group(2) or ""
        args = [a.strip() for a in m.group(5).split(",")]
        try:
            start = int(args[0])
            end = int(args[1]) if versioned else None
        except ValueError:
            continue
        rest = args[2:] if versioned else args[1:]
        op = rest[-1]
        type_names = rest[:-1]
        types = None
        if typed and type_names:
            ts = [CPP_TYPES.get(t) for t in type_names]
            if typed == "TYPED_" and ts[0]:
                types = {"T": [ts[0]]}
        reg.add(m.group(4), op, start, end, types)


def cmd_registry(args: argparse.Namespace) -> None:
    reg = Registry(args.prov_id)
    for src in args.src:
        parse_registrations(Path(src).read_text(encoding="utf-8"), args.ep_const, reg)
    ops = reg.entries()
    # Typed registrations only name the first type parameter; keep types only where the
    # op's schema actually calls its main constraint "T".
    ops = [_keep_t_if_schema_has_t(o) for o in ops]
    prov = [source_prov(args.prov_id, args, args.file_label)]
    write_profile(args.profile, ops, prov)


def _keep_t_if_schema_has_t(o: dict[str, Any]) -> dict[str, Any]:
    import onnx.defs

    d = "" if o["domain"] == "ai.onnx" else o["domain"]
    try:
        schema = onnx.defs.get_schema(o["op"], d)
        names = {tc.type_param_str for tc in schema.type_constraints}
    except Exception:
        names = set()
    for v in o.get("versions", []):
        if "types" in v and "T" not in names:
            del v["types"]
    return o


# ---------------------------------------------------------------------------
# MIGraphX supported-op set


def cmd_migraphx(args: argparse.Namespace) -> None:
    text = Path(args.src).read_text(encoding="utf-8")
    start = text.index("mgx_supported_ops")
    block = text[start : text.index("};", start)]
    names = sorted(set(re.findall(r'"(\w+)"', block)))
    contrib = ep_facts.ms_contrib_names()
    ops = []
    for n in names:
        domain = "com.microsoft" if n in contrib else "ai.onnx"
        ops.append({"domain": domain, "op": n, "provenance": "migraphx-ep"})
    prov = [
        source_prov(
            "migraphx-ep",
            args,
            "onnxruntime/core/providers/migraphx/migraphx_execution_provider.cc",
        )
    ]
    write_profile("migraphx", ops, prov)


# ---------------------------------------------------------------------------
# QNN op builders


def cmd_qnn(args: argparse.Namespace) -> None:
    text = Path(args.src).read_text(encoding="utf-8")
    names = sorted(set(re.findall(r'Create\w*OpBuilder\("(\w+)"', text)))
    prov = [
        source_prov(
            "qnn-op-builders",
            args,
            "onnxruntime/core/providers/qnn/builder/op_builder_factory.cc",
            note="ops with a QNN op builder; per-op checks read from builder/opbuilder/*.cc",
        )
    ]
    contrib = ep_facts.ms_contrib_names()
    for pid in ("qnn-htp", "qnn-cpu", "qnn-gpu"):
        ops = []
        for n in names:
            domain = "com.microsoft" if n in contrib else "ai.onnx"
            ops.append({"domain": domain, "op": n, "provenance": "qnn-op-builders"})
        write_profile(pid, ops, prov)


def cmd_vitisai(args: argparse.Namespace) -> None:
    ops = [
        {"domain": "ai.onnx", "op": n, "provenance": "vitisai-docs"} for n in ep_facts.vitisai_ops()
    ]
    write_profile("vitisai", ops, [])


# ---------------------------------------------------------------------------
# Fitting a profile to a measurement (rules/measured/<ep>.json)

ALL_DTYPES = [
    "bfloat16", "bool", "complex128", "complex64", "double", "float", "float16",
    "float4e2m1", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz",
    "float8e8m0", "int16", "int2", "int32", "int4", "int64", "int8", "string", "uint16",
    "uint2", "uint32", "uint4", "uint64", "uint8",
]  # fmt: skip
# What a fitted slot may hold besides the types seen claimed: the common numeric types
# (string, complex, float8 and sub-byte types only when the EP was seen to take them).
PLAUSIBLE_DTYPES = {
    "bfloat16", "bool", "double", "float", "float16", "int16", "int32", "int64", "int8",
    "uint16", "uint32", "uint64", "uint8",
}  # fmt: skip
# EP reasons that point at an element type rather than at a shape or an attribute.
DTYPE_REASON_RE = re.compile(
    r"Failed to add node|Failed to add binary node|Failed to map Onnx data type|"
    r"data ?type|dtype|only supports? float|supports only float|input tensors|"
    r"Expected scale initializer to be of type",
    re.I,
)
# EP reasons that say the op type itself is not supported.
NO_OP_REASON_RE = re.compile(
    r"are not supported by|not supported by \w+ backend|does not support \w+ on", re.I
)


def cmd_fit(args: argparse.Namespace) -> None:
    """Derive op additions/removals and per-slot element types from a measurement."""
    sys.path.insert(0, str(REPO))
    from agreement import _cases

    from onnxlint.analyses.single_node_facts import facts_from_model
    from onnxlint.probe import ort_limits

    data = json.loads(Path(args.measured).read_text(encoding="utf-8"))
    max_opset, max_ir = ort_limits(data.get("versions", {}).get("onnxruntime"))
    cases = _cases(max_opset, max_ir)
    skip = set(args.skip_dtypes.split(",")) if args.skip_dtypes else set()
    rows: dict[tuple[str, str], list[tuple[dict[str, Any], Any]]] = defaultdict(list)
    for row in data["cases"]:
        case = cases.get(row["name"])
        if row.get("claimed") is None or case is None:
            continue
        facts = facts_from_model(case.model, 0)
        rows[(facts.domain, facts.op_type)].append((row, facts))
    add_ops: list[list[str]] = []
    remove_ops: list[list[str]] = []
    types: dict[str, Any] = {}
    io_types: dict[str, Any] = {}
    for (domain, op), items in sorted(rows.items()):
        claimed = [f for r, f in items if r["claimed"]]
        refused = [(r, f) for r, f in items if not r["claimed"]]
        if claimed:
            add_ops.append([domain, op])
        elif all(NO_OP_REASON_RE.search(r.get("reason") or "") for r, _ in refused):
            remove_ops.append([domain, op])
            continue
        good: dict[str, set[str]] = defaultdict(set)
        for f in claimed:
            for key, d in _slots(f):
                good[key].add(d)
        claimed_names = {r["name"] for r, _ in items if r["claimed"]}
        bad: dict[str, set[str]] = defaultdict(set)
        bad_io: dict[str, set[str]] = defaultdict(set)
        for r, f in refused:
            # A dtype variant of a case the EP claimed differs only in its element types.
            variant_of_claimed = "__" in r["name"] and r["name"].split("__")[0] in claimed_names
            if not (variant_of_claimed or DTYPE_REASON_RE.search(r.get("reason") or "")):
                continue
            for key, d in _slots(f):
                if d not in good[key] and d in skip and _on_boundary(f, key):
                    bad_io[key].add(d)
                elif d not in good[key] and d not in skip:
                    bad[key].add(d)
        fitted = {k: sorted((good[k] | PLAUSIBLE_DTYPES) - v) for k, v in sorted(bad.items()) if v}
        if fitted:
            types[f"{domain}::{op}"] = fitted
        fitted_io = {
            k: sorted((good[k] | PLAUSIBLE_DTYPES) - v) for k, v in sorted(bad_io.items()) if v
        }
        if fitted_io:
            io_types[f"{domain}::{op}"] = fitted_io
    out = {
        "generated_by": "tools/gen_profiles.py fit",
        "measured": {
            "file": f"rules/measured/{Path(args.measured).name}",
            "date": data.get("date"),
            "versions": data.get("versions", {}),
            "options": data.get("options", {}),
        },
        "add_ops": add_ops,
        "remove_ops": remove_ops,
        "types": types,
        "graph_io_types": io_types,
    }
    path = ep_facts.fitted_path(args.profile)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_dump(out) + "\n", encoding="utf-8")
    print(
        f"wrote {path.relative_to(REPO)}: {len(add_ops)} claimed ops, "
        f"{len(remove_ops)} refused ops, {len(types)} type fits"
    )


def _on_boundary(f: Any, key: str) -> bool:
    io, i = key.split(":")
    return int(i) in (f.graph_inputs if io == "in" else f.graph_outputs)


def _slots(f: Any) -> list[tuple[str, str]]:
    out = [(f"in:{i}", d) for i, d in enumerate(f.input_dtypes) if d and f.has_input(i)]
    out += [(f"out:{i}", d) for i, d in enumerate(f.output_dtypes) if d]
    return out


# ---------------------------------------------------------------------------
# index.json


def build_index() -> dict[str, Any]:
    rows = []
    for path in sorted(EPS.glob("*.json")):
        if path.name == "index.json":
            continue
        d = json.loads(path.read_text(encoding="utf-8"))
        row = {
            "id": d["id"],
            "ep": d["ep"],
            "file": path.name,
            "aliases": d.get("aliases", []),
            "default_for_ep": d.get("default_for_ep", False),
        }
        if d.get("variant"):
            row["variant"] = d["variant"]
        row["describes"] = d["describes"]
        rows.append(row)
    return {"generated_by": INDEX_GENERATED_BY, "profiles": rows}


def cmd_index(args: argparse.Namespace) -> None:
    out = build_index()
    (EPS / "index.json").write_text(render(out), encoding="utf-8")
    print(f"wrote rules/eps/index.json ({len(out['profiles'])} profiles)")


def cmd_build(args: argparse.Namespace) -> None:
    for pid in args.profiles or ep_facts.profile_ids():
        write_built(pid)


def _without_tail(items: list[Any], tail: list[Any], what: str) -> list[Any]:
    if not tail:
        return items
    if items[-len(tail) :] != tail:
        raise SystemExit(f"{what} no longer ends with what the source gives; edit the source")
    return items[: -len(tail)]


def adopt(profile_id: str) -> list[str]:
    """Make the facts say what a hand-edited ``rules/eps/<id>.json`` says, so that ``build``
    reproduces it: its header fields become the curated header, and each op entry that
    differs from what the other facts make becomes a whole-entry ``replace`` (or a
    ``remove``) in the overlay part ``adopted-<id>``, applied last. Returns the adopted
    changes, as ``check`` names them."""
    committed = json.loads((EPS / f"{profile_id}.json").read_text(encoding="utf-8"))
    before = check([profile_id])
    source = json.loads(ep_facts.source_path(profile_id).read_text(encoding="utf-8"))
    extras = source.get("extras", {})
    header = {
        k: v for k, v in committed.items() if k not in ("$schema", "schema_version", "id", "ops")
    }
    header["provenance"] = _without_tail(
        header.get("provenance", []), source["provenance"], "provenance"
    )
    if extras.get("global_constraints"):
        header["global_constraints"] = _without_tail(
            header.get("global_constraints", []),
            extras["global_constraints"],
            "global_constraints",
        )
    if "tensor_dtypes" in extras and header.get("tensor_dtypes") != extras["tensor_dtypes"]:
        raise SystemExit("tensor_dtypes is read from the source; edit the source")
    part = f"adopted-{profile_id}"
    parts = [p for p in ep_facts.overlay_parts(profile_id) if p != part]
    facts_path = ep_facts.FACTS / "profiles" / f"{profile_id}.json"
    facts = json.loads(facts_path.read_text(encoding="utf-8"))
    base = ep_facts.base_header(facts["base"]) if "base" in facts else {}
    gone = [k for k in base if k not in header]
    if gone:
        raise SystemExit(f"{profile_id}: {gone} come from rules/facts/bases/{facts['base']}.json")
    facts["header"] = {k: v for k, v in header.items() if k not in base or base[k] != v}
    made = {(o["domain"], o["op"]): o for o in build_profile(profile_id, parts)["ops"]}
    want = {(o["domain"], o["op"]): o for o in committed["ops"]}
    rows: list[dict[str, Any]] = [
        {"domain": d, "op": op, "replace": entry}
        for (d, op), entry in want.items()
        if made.get((d, op)) != entry
    ]
    rows += [{"domain": d, "op": op, "remove": True} for d, op in made if (d, op) not in want]
    part_path = ep_facts.FACTS / "overlays" / f"{part}.json"
    if rows:
        about = (
            f"edits of rules/eps/{profile_id}.json taken over by gen_profiles.py adopt; move "
            "each into the overlay part it belongs to"
        )
        part_path.write_text(render({"about": about, "ops": rows}), encoding="utf-8")
        parts.append(part)
    elif part_path.exists():
        part_path.unlink()
    if parts:
        facts["overlays"] = parts
    else:
        facts.pop("overlays", None)
    facts_path.write_text(render(facts), encoding="utf-8")
    left = check([profile_id])
    if left:
        raise SystemExit("adopt could not reproduce the profile:\n" + "\n".join(left))
    return before


def cmd_adopt(args: argparse.Namespace) -> None:
    for pid in args.profiles:
        for line in adopt(pid):
            print(f"adopted {line}")


def cmd_check(args: argparse.Namespace) -> None:
    problems = check(args.profiles or ep_facts.profile_ids(), layout=args.layout)
    for line in problems:
        print(line)
    if problems:
        sys.exit(1)
    print("the committed profiles are what the facts make")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="cmd", required=True)

    def src_cmd(name: str, multi: bool = False) -> argparse.ArgumentParser:
        p = sub.add_parser(name)
        p.add_argument("--src", required=True, nargs="+" if multi else None)
        p.add_argument("--repo", required=True, help="owner/name of the upstream repository")
        p.add_argument("--commit", help="commit the file was read at")
        p.add_argument("--version", help="release the commit corresponds to")
        p.add_argument("--date", help="commit date, YYYY-MM-DD")
        return p

    sub.add_parser("cpu")
    sub.add_parser("mobile")
    sub.add_parser("index")
    sub.add_parser("vitisai")
    sub.add_parser("build").add_argument("profiles", nargs="*")
    sub.add_parser("adopt").add_argument("profiles", nargs="+")
    p = sub.add_parser("check")
    p.add_argument("profiles", nargs="*")
    p.add_argument("--layout", action="store_true", help="also report text layout differences")
    src_cmd("kernels-md")
    p = src_cmd("openvino")
    p.add_argument("--ov-version", default="V_2025_4")
    p = src_cmd("tensorrt")
    p.add_argument("--profiles", default="tensorrt,nvtensorrtrtx")
    p = src_cmd("registry", multi=True)
    p.add_argument("--profile", required=True)
    p.add_argument("--ep-const", required=True, help="e.g. kXnnpackExecutionProvider")
    p.add_argument("--prov-id", required=True)
    p.add_argument("--file-label", required=True, help="upstream path recorded in the provenance")
    src_cmd("migraphx")
    p = sub.add_parser("fit")
    p.add_argument("--measured", required=True)
    p.add_argument("--profile", required=True)
    p.add_argument(
        "--skip-dtypes",
        default="",
        help="dtypes refused only on graph inputs/outputs: fitted into graph_io_types",
    )
    src_cmd("qnn")
    args = ap.parse_args(argv)
    {
        "cpu": cmd_cpu,
        "kernels-md": cmd_kernels_md,
        "mobile": cmd_mobile,
        "openvino": cmd_openvino,
        "tensorrt": cmd_tensorrt,
        "registry": cmd_registry,
        "migraphx": cmd_migraphx,
        "qnn": cmd_qnn,
        "vitisai": cmd_vitisai,
        "fit": cmd_fit,
        "index": cmd_index,
        "build": cmd_build,
        "check": cmd_check,
        "adopt": cmd_adopt,
    }[args.cmd](args)


if __name__ == "__main__":
    main()
