"""Opset rules (OL2xx): does the target ONNX Runtime know these operator versions?

Every message names the opset that would work, because most "unsupported
operator" errors are opset mismatches fixed by re-exporting.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from onnx import defs

from onnxlint.analyses.ort_kernels import ort_kernel_since, ort_registers
from onnxlint.context import LintContext
from onnxlint.diagnostics import Category, Fix, Location, Severity
from onnxlint.index import DEFAULT_DOMAIN, NodeRef, norm_domain
from onnxlint.ort_versions import OrtRelease, first_release_with_opset, release
from onnxlint.rule import Rule, register

#: domains ONNX Runtime implements without a custom-op library
KNOWN_DOMAINS = frozenset(
    {
        DEFAULT_DOMAIN,
        "ai.onnx.ml",
        "ai.onnx.preview.training",
        "ai.onnx.preview",
        "com.microsoft",
        "com.microsoft.nchwc",
        "com.microsoft.mlfeaturizers",
        "com.ms.internal.nhwc",
    }
)

#: replacements for operators deprecated in the ONNX standard
REPLACEMENTS = {
    "Upsample": "Resize",
    "Scatter": "ScatterElements",
    "Crop": "Slice",
    "ImageScaler": "Mul + Add",
}


def _fix_opset(opset: int) -> Fix:
    return Fix(
        title=f"re-export with opset_version={opset}",
        command=f"torch.onnx.export(..., opset_version={opset})  # or onnx.version_converter.convert_version(model, {opset})",
    )


def _target(ctx: LintContext) -> OrtRelease:
    """The target release: the installed ORT asked directly, else the table (see ort_versions)."""
    from onnxlint.runtime.identity import cache_enabled

    return release(ctx.config.target_ort, cache=cache_enabled(ctx.config))


def _shipped_releases(ctx: LintContext) -> list[tuple[str, OrtRelease]]:
    """(profile id, release) for each EP of the list whose package ships its own ONNX
    Runtime (the profile's ``runtime_onnxruntime``: onnxruntime-openvino), with that
    release's limits from the table (``rules/ort_versions.json``); the EP fails to load
    what that release does not, whatever the installed ORT loads."""
    from onnxlint.ort_versions import table_release

    out = []
    for p in ctx.eps:
        if p.runtime_onnxruntime:
            rel = table_release(p.runtime_onnxruntime)
            if rel.exact and rel.assumed_from is None:
                out.append((p.id, rel))
    return out


@lru_cache(maxsize=2048)
def _versions_of(op_type: str, domain: str) -> tuple[int, ...]:
    """Every since_version at which ``op_type`` was (re)defined in ``domain``."""
    from onnxlint.schema_registry import SCHEMAS_LOCK

    dom = "" if domain == DEFAULT_DOMAIN else domain
    out = []
    with SCHEMAS_LOCK:  # never a schema lent to an inference in another thread
        schemas = defs.get_all_schemas_with_history()
    for schema in schemas:
        if schema.name == op_type and schema.domain == dom:
            out.append(schema.since_version)
    return tuple(sorted(out))


@register
class OpsetTooNew(Rule):
    """The model's ai.onnx (or ai.onnx.ml) opset is newer than the target ONNX Runtime loads.

    What it does:
        Compares the imported opsets with what the target ORT loads. The target is the
        installed onnxruntime unless ``--target-ort`` says otherwise; the installed one is
        asked directly (once per ORT build, cached), other releases are looked up in a
        table (``rules/ort_versions.json``, with provenance). A target newer than the
        table is assumed to load what the newest row loads, and the message says so. An EP
        whose package ships its own ONNX Runtime (OpenVINO: onnxruntime-openvino 1.24.1
        loads ai.onnx up to opset 25) is checked against that release too, once per EP.

    Why it matters:
        ORT refuses the whole model: "Current official support for domain ai.onnx is till opset N".
        With OpenVINO the model can load with the installed ORT and fail with the EP's.

    Fix:
        Re-export at the newest opset the target supports, or upgrade ONNX Runtime on the device.

    Execution providers:
        All (it is a runtime-wide limit); OpenVINO also by the release its package ships.
    """

    code = "OL201"
    name = "opset-too-new"
    category = Category.OPSET
    severity = Severity.ERROR
    messages = {
        "default": "model imports {domain} opset {opset}, but ONNX Runtime {ort} supports up to {max}; "
        "re-export with opset_version={max}{upgrade}",
        "assumed": "model imports {domain} opset {opset}; ONNX Runtime {ort} is newer than "
        "onnxlint's table, which is assumed from {known} (up to {max}): check that {ort} loads "
        "it, or re-export with opset_version={max}",
        "shipped": "model imports {domain} opset {opset}, but the ONNX Runtime this EP's "
        "package ships ({ort}) loads up to {max}: the session fails at load; re-export with "
        "opset_version={max}",
    }
    example_bad = """\
<ir_version: 8, opset_import: ["" : 99]>
g (float[1,4] x) => (float[1,4] y) {
    y = Relu(x)
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] y) {
    y = Relu(x)
}
"""

    waits_for_ort = True
    fails_load = frozenset({"default", "shipped"})

    def check_model(self, ctx: LintContext) -> None:
        rel = _target(ctx)
        for domain, limit in ((DEFAULT_DOMAIN, rel.max_opset), ("ai.onnx.ml", rel.ml_opset)):
            opset = ctx.index.opsets.get(domain)
            if opset is not None and opset <= limit:
                for ep, shipped in _shipped_releases(ctx):
                    own = shipped.max_opset if domain == DEFAULT_DOMAIN else shipped.ml_opset
                    if opset > own:
                        ctx.emit(
                            self.make(
                                Location(),
                                "shipped",
                                ep=ep,
                                domain=domain,
                                opset=opset,
                                ort=shipped.version,
                                max=own,
                                fix=_fix_opset(own),
                            )
                        )
            if opset is not None and opset > limit:
                newer = first_release_with_opset(opset) if domain == DEFAULT_DOMAIN else None
                upgrade = f" (or target ONNX Runtime >= {newer})" if newer else ""
                ctx.emit(
                    self.make(
                        Location(),
                        "assumed" if rel.assumed_from else "default",
                        severity=Severity.WARNING if rel.assumed_from else None,
                        known=rel.assumed_from,
                        domain=domain,
                        opset=opset,
                        ort=rel.version,
                        max=limit,
                        upgrade=upgrade,
                        fix=_fix_opset(limit),
                    )
                )


@register
class IrVersionTooNew(Rule):
    """The model's IR version is newer than the target ONNX Runtime loads.

    What it does:
        Compares ``model.ir_version`` with the highest IR version of the target release,
        and of the release an EP's package ships, when it ships its own (OpenVINO).

    Why it matters:
        ORT refuses the model ("Unsupported model IR version"), even when every operator is known.

    Fix:
        Save with an older IR version (``model.ir_version = N`` is safe when no newer IR
        feature is used), or export with the onnx release matching the target.

    Execution providers:
        All.
    """

    code = "OL202"
    name = "ir-version-too-new"
    category = Category.OPSET
    severity = Severity.ERROR
    messages = {
        "default": "model IR version {ir} is newer than ONNX Runtime {ort} loads (max {max}); "
        "save with ir_version={max} or export with opset_version={opset}",
        "assumed": "model IR version {ir}; ONNX Runtime {ort} is newer than onnxlint's table, "
        "which is assumed from {known} (max {max}): check that {ort} loads it, or save with "
        "ir_version={max}",
        "shipped": "model IR version {ir} is newer than the ONNX Runtime this EP's package "
        "ships ({ort}) loads (max {max}): the session fails at load; save with ir_version={max}",
    }
    example_bad = """\
<ir_version: 99, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] y) {
    y = Relu(x)
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] y) {
    y = Relu(x)
}
"""

    waits_for_ort = True
    fails_load = frozenset({"default", "shipped"})

    def check_model(self, ctx: LintContext) -> None:
        rel = _target(ctx)
        ir = ctx.model.ir_version
        if ir <= rel.max_ir:
            for ep, shipped in _shipped_releases(ctx):
                if ir > shipped.max_ir:
                    ctx.emit(
                        self.make(
                            Location(),
                            "shipped",
                            ep=ep,
                            ir=ir,
                            ort=shipped.version,
                            max=shipped.max_ir,
                            fix=Fix(title=f"set model.ir_version = {shipped.max_ir}"),
                        )
                    )
        if ir > rel.max_ir:
            ctx.emit(
                self.make(
                    Location(),
                    "assumed" if rel.assumed_from else "default",
                    severity=Severity.WARNING if rel.assumed_from else None,
                    known=rel.assumed_from,
                    ir=ir,
                    ort=rel.version,
                    max=rel.max_ir,
                    opset=rel.max_opset,
                    fix=Fix(title=f"set model.ir_version = {rel.max_ir}"),
                )
            )


@register
class UnknownDomain(Rule):
    """A node uses an operator domain that ONNX Runtime does not implement.

    What it does:
        Reports nodes whose domain is neither a standard ONNX domain, ORT's own contrib
        domains (``com.microsoft``), nor a model-local function.

    Why it matters:
        Session creation fails unless the matching custom-op library is registered
        (``SessionOptions.register_custom_ops_library``), and no EP will claim the node.

    Fix:
        Ship and register the custom-op library, or replace the op with standard ONNX ops
        at export (e.g. a ``torch.onnx`` symbolic function that decomposes it).

    Execution providers:
        All; accelerator EPs never claim custom-domain ops.
    """

    code = "OL203"
    node_local = True  # its domain, its graph's opsets and the model's functions
    name = "unknown-domain"
    category = Category.OPSET
    severity = Severity.WARNING
    messages = {
        "default": "operator {op} is in domain '{domain}', which ONNX Runtime does not implement; "
        "it needs a custom-op library",
        "not_imported": "operator {op} uses domain '{domain}', which the model does not import",
    }
    visits = ("*",)
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17, "com.acme" : 1]>
g (float[1,4] x) => (float[1,4] y) {
    y = com.acme.FancyRelu(x)
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] y) {
    y = Relu(x)
}
"""

    def check_node(self, ctx: LintContext, node: NodeRef) -> None:
        domain = node.domain
        if (node.node.domain, node.op_type) in ctx.index.functions:
            return
        if domain not in node.graph.opsets and domain != DEFAULT_DOMAIN:
            ctx.emit(self.make(node.location(), "not_imported", op=node.op_type, domain=domain))
        elif domain not in KNOWN_DOMAINS:
            ctx.emit(self.make(node.location(), op=node.op_type, domain=domain))


def _ort_older(node: NodeRef, opset: int) -> int | None:
    """The first version of ORT's own ai.onnx kernel for ``node``'s op below ONNX's that a
    model importing ``opset`` loads with (ORT registers its schema too); None if none."""
    since = ort_kernel_since(node.op_type, opset)
    first = _versions_of(node.op_type, DEFAULT_DOMAIN)
    return since if since is not None and first and since < first[0] else None


@register
class UnknownOperator(Rule):
    """An operator does not exist in its standard domain at the imported opset.

    What it does:
        Resolves each ``ai.onnx``/``ai.onnx.ml`` node against the ONNX schemas at the
        imported opset. When the op exists only at later opsets, names the first opset
        that defines it; when it was removed, names the last opset that had it. An op
        ONNX defines only from a later opset but the installed ONNX Runtime registers an
        older one of its own for in ai.onnx (LayerNormalization from version 1, as ORT's
        transformer optimizer writes it into models of any opset) is a warning: ORT
        loads it, other runtimes do not.

    Why it matters:
        ORT fails to load the model, and the error reads like a missing feature when
        the fix is usually just a different export opset.

    Fix:
        Re-export with the opset named in the message.

    Execution providers:
        All.
    """

    code = "OL204"
    node_local = True  # its operator, schema and graph's opsets
    name = "unknown-operator"
    category = Category.OPSET
    severity = Severity.ERROR
    messages = {
        "later": "{op} does not exist at {domain} opset {opset}; it was introduced in opset {first}: "
        "re-export with opset_version={first}",
        "removed": "{op} was removed from {domain} before opset {opset}; it exists up to opset {last}",
        "unknown": "{op} is not an operator of {domain} at any opset",
        "ort_only": "{op} is not an ONNX operator, but ONNX Runtime registers a kernel for it in "
        "{domain} (its own contrib operator): the model runs on ONNX Runtime only",
        "ort_older": "{op} does not exist at {domain} opset {opset} (ONNX introduced it in opset "
        "{first}), but ONNX Runtime registers its own older {op} in {domain} from version "
        "{since}: the model loads on ONNX Runtime only; re-export with opset_version={first} "
        "for other runtimes",
    }
    visits = ("*",)
    example_bad = """\
<ir_version: 8, opset_import: ["" : 13]>
g (float[1,4] x) => (float[1,4] y) {
    y = Gelu(x)
}
"""
    example_good = """\
<ir_version: 10, opset_import: ["" : 20]>
g (float[1,4] x) => (float[1,4] y) {
    y = Gelu(x)
}
"""

    def check_node(self, ctx: LintContext, node: NodeRef) -> None:
        domain = node.domain
        if domain not in (DEFAULT_DOMAIN, "ai.onnx.ml") or node.schema is not None:
            return
        opset = node.graph.opsets.get(domain)
        if opset is None:
            return
        versions = _versions_of(node.op_type, domain)
        if not versions:
            if domain == DEFAULT_DOMAIN and ort_registers(node.op_type):
                ctx.emit(
                    self.make(
                        node.location(),
                        "ort_only",
                        severity=Severity.WARNING,
                        op=node.op_type,
                        domain=domain,
                    )
                )
                return
            ctx.emit(self.make(node.location(), "unknown", op=node.op_type, domain=domain))
        elif versions[0] > opset:
            since = _ort_older(node, opset) if domain == DEFAULT_DOMAIN else None
            extra: dict[str, Any] = {} if since is None else {"since": since}
            ctx.emit(
                self.make(
                    node.location(),
                    "later" if since is None else "ort_older",
                    severity=Severity.ERROR if since is None else Severity.WARNING,
                    **extra,
                    op=node.op_type,
                    domain=domain,
                    opset=opset,
                    first=versions[0],
                    fix=_fix_opset(versions[0]),
                )
            )
        elif opset <= _max_known_opset(domain):
            # (past the newest opset onnx knows, nothing resolves: OL201 reports the opset)
            last = _last_opset_with(node.op_type, domain, opset)
            ctx.emit(
                self.make(
                    node.location(),
                    "removed",
                    op=node.op_type,
                    domain=domain,
                    opset=opset,
                    last=last,
                )
            )


@lru_cache(maxsize=16)
def _max_known_opset(domain: str) -> int:
    """The newest opset of ``domain`` the installed onnx has schemas for."""
    from onnxlint.schema_registry import SCHEMAS_LOCK

    dom = "" if domain == DEFAULT_DOMAIN else domain
    with SCHEMAS_LOCK:  # never a schema lent to an inference in another thread
        schemas = defs.get_all_schemas_with_history()
    versions = [s.since_version for s in schemas if s.domain == dom]
    return max(versions, default=0)


def _last_opset_with(op_type: str, domain: str, opset: int) -> int:
    dom = "" if domain == DEFAULT_DOMAIN else domain
    # no operator version is newer than the newest known opset, so start there: a model
    # claiming opset 10**6 would otherwise cost a million lookups
    for v in range(min(opset, _max_known_opset(domain)), 0, -1):
        try:
            defs.get_schema(op_type, v, dom)
            return v
        except defs.SchemaError:
            continue
    return 0


@register
class DeprecatedOperator(Rule):
    """An operator is deprecated at the imported opset.

    What it does:
        Reports nodes whose resolved schema is marked deprecated (e.g. ``Upsample`` from
        opset 10, ``Scatter`` from opset 11) and names the replacement.

    Why it matters:
        Deprecated ops are kept for old models only; EPs drop support for them first
        and ORT may remove them.

    Fix:
        Re-export so the exporter emits the replacement (``Resize`` for ``Upsample``,
        ``ScatterElements`` for ``Scatter``).

    Execution providers:
        All; accelerator EPs rarely implement deprecated ops.
    """

    code = "OL205"
    node_local = True  # its schema and graph's opsets
    name = "deprecated-operator"
    category = Category.OPSET
    severity = Severity.WARNING
    messages = {
        "default": "{op} is deprecated at {domain} opset {opset}; use {replacement} "
        "(re-export with opset_version={opset})",
    }
    visits = ("*",)
    example_bad = """\
<ir_version: 8, opset_import: ["" : 10]>
g (float[1,1,2,2] x, float[4] scales) => (float[1,1,4,4] y) {
    y = Upsample(x, scales)
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 13]>
g (float[1,1,2,2] x, float[4] scales) => (float[1,1,4,4] y) {
    y = Resize(x, , scales)
}
"""

    def check_node(self, ctx: LintContext, node: NodeRef) -> None:
        if node.schema is None or not node.schema.deprecated:
            return
        ctx.emit(
            self.make(
                node.location(),
                op=node.op_type,
                domain=node.domain,
                opset=node.opset,
                replacement=REPLACEMENTS.get(node.op_type, "the current equivalent"),
            )
        )


@register
class MixedOpsets(Rule):
    """A model-local function imports a different ai.onnx opset than the model.

    What it does:
        Compares each function's opset imports with the model's, per domain.

    Why it matters:
        ORT inlines functions into the main graph; mixed opsets make the inlined ops
        resolve to revisions the exporter did not intend, or fail to inline at all.

    Fix:
        Export the model and its functions at one opset (``onnx.version_converter`` on the whole model).

    Execution providers:
        All.
    """

    code = "OL206"
    name = "mixed-opsets"
    category = Category.OPSET
    severity = Severity.WARNING
    messages = {
        "default": "function {function} imports {domain} opset {fn_opset} but the model imports "
        "opset {model_opset}; re-export with one opset_version={model_opset}",
    }
    example_bad = """\
<ir_version: 8, opset_import: ["" : 17, "local" : 1]>
g (float[1,4] x) => (float[1,4] y) {
    y = local.MyRelu(x)
}
<domain: "local", opset_import: ["" : 13]>
MyRelu (a) => (b) {
    b = Relu(a)
}
"""
    example_good = """\
<ir_version: 8, opset_import: ["" : 17, "local" : 1]>
g (float[1,4] x) => (float[1,4] y) {
    y = local.MyRelu(x)
}
<domain: "local", opset_import: ["" : 17]>
MyRelu (a) => (b) {
    b = Relu(a)
}
"""

    def check_model(self, ctx: LintContext) -> None:
        for fn in ctx.model.functions:
            for imp in fn.opset_import:
                domain = norm_domain(imp.domain)
                model_opset = ctx.index.opsets.get(domain)
                if model_opset is not None and imp.version != model_opset:
                    graph = ctx.index.functions[(fn.domain, fn.name)]
                    ctx.emit(
                        self.make(
                            graph.location(),
                            function=f"{fn.domain}.{fn.name}",
                            domain=domain,
                            fn_opset=imp.version,
                            model_opset=model_opset,
                        )
                    )
