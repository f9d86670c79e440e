"""Compiled-model rules (OL7xx): EPContext models, their sidecars, compatibility and cache keys.

All but OL708 work without creating a session; OL708 runs ORT's compatibility
check in an isolated worker when the EP's runner has it. The facts come from
``ctx.analysis(onnxlint.compiled.CompiledModel)``, computed once per model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from onnxlint.compiled import (
    INVALIDATING_EVENTS,
    CompiledModel,
    check_compatibility,
    file_sha256,
    shared_problems,
    source_match,
)
from onnxlint.context import LintContext
from onnxlint.diagnostics import Category, Diagnostic, Fix, Location, Severity
from onnxlint.rule import Rule, register

if TYPE_CHECKING:
    from onnxlint.index import NodeRef

_PLAIN = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x) => (float[1,4] y) {
    y = Relu(x)
}
"""


def _ctx_model(
    embed: int = 1,
    cache: str = "blob",
    source: str = "ExampleExecutionProvider",
    nodes: int = 1,
    meta: str = "",
    extra: str = "",
) -> str:
    """ONNX text of an EPContext model (an EP name onnxlint cannot run: no worker starts)."""
    lines = []
    prev = "x"
    for i in range(nodes):
        out = "y" if i == nodes - 1 else f"t{i}"
        lines.append(
            f"    {out} = com.microsoft.EPContext <embed_mode: int = {embed}, "
            f'ep_cache_context: string = "{cache}", source: string = "{source}", '
            f'partition_name: string = "p{i}", main_context: int = 1{extra}> ({prev})'
        )
        prev = out
    props = f", metadata_props: [{meta}]" if meta else ""
    return (
        f'<ir_version: 8, opset_import: ["" : 17, "com.microsoft" : 1]{props}>\n'
        "g (float[1,4] x) => (float[1,4] y) {\n" + "\n".join(lines) + "\n}\n"
    )


class _CompiledRule(Rule):
    category = Category.COMPILED_MODEL

    @staticmethod
    def facts(ctx: LintContext) -> CompiledModel:
        return ctx.analysis(CompiledModel)


@register
class CompiledNodes(_CompiledRule):
    """The model contains compiled (EPContext) nodes, which ORT cannot re-optimize or re-serialize.

    What it does:
        Reports each model with ``com.microsoft.EPContext`` nodes: how many, for which EP,
        the EP SDK version they were built with, and whether the binaries are embedded.

    Why it matters:
        A compiled model runs only on the EP (and usually the SDK and device) that built it.
        ORT cannot optimize it further or write it back out: a session with
        ``optimized_model_filepath`` fails with "Unable to serialize model as it contains
        compiled nodes", and so does any tool that optimizes with a compiling EP enabled.

    Fix:
        Keep the source model next to the compiled one: optimize the source (with the CPU EP
        only, or with graph optimizations disabled for the compiling EP), then recompile.

    Execution providers:
        QNN, OpenVINO, VitisAI, TensorRT RTX, MIGraphX and any EP that writes EPContext nodes.
    """

    code = "OL701"
    name = "compiled-nodes"
    severity = Severity.INFO
    messages = {
        "default": "compiled model: {count} EPContext node(s) for {eps} (SDK {sdk}, {storage}); "
        "ORT cannot re-optimize or re-serialize it ('Unable to serialize model as it contains "
        "compiled nodes'), so optimize and recompile from the source model",
    }
    example_bad = _ctx_model()
    example_good = _PLAIN

    def check_model(self, ctx: LintContext) -> None:
        cm = self.facts(ctx)
        if not cm.is_compiled:
            return
        sdks = sorted({n.sdk_version for n in cm.nodes if n.sdk_version})
        modes = {n.embed_mode for n in cm.nodes}
        storage = (
            "embedded" if modes == {1} else "sidecar files" if modes == {0} else "mixed storage"
        )
        ctx.emit(
            self.make(
                Location(),
                count=len(cm.nodes),
                eps=", ".join(cm.providers()) or "an unnamed EP",
                sdk=", ".join(sdks) or "not recorded",
                storage=storage,
                fix=Fix("optimize the source model with the CPU EP only, then compile it again"),
            )
        )


@register
class EpContextAttribute(_CompiledRule):
    """An EPContext node lacks an attribute ORT needs, or holds an invalid value.

    What it does:
        Checks each EPContext node's ``embed_mode`` (0 or 1), ``ep_cache_context`` (present,
        non-empty; a ``main_context=0`` node has none by design: its graph is in the binary
        of the model's ``main_context=1`` node), ``source`` (the EP that compiled it), ``main_context`` (0 or 1) and
        ``partition_name``.

    Why it matters:
        ORT hands the node to the EP named by ``source``; without ``ep_cache_context`` there
        is nothing to load, and a wrong ``embed_mode`` makes the EP read the binary as a path
        (or a path as a binary). Such a model fails at session creation, on the device.

    Fix:
        Recompile the source model; do not edit EPContext attributes by hand.

    Execution providers:
        Every EP that loads EPContext models.
    """

    code = "OL702"
    name = "epcontext-attribute"
    severity = Severity.ERROR
    visits = (("com.microsoft", "EPContext"),)
    messages = {
        "missing": "EPContext node has no '{attr}' attribute",
        "bad_value": "EPContext attribute {attr}={value} is invalid (expected {expected})",
        "no_source": "EPContext node does not say which EP compiled it (no 'source'): "
        "ORT offers it to every EP in turn",
        "empty_context": "EPContext node has an empty ep_cache_context",
        "no_main": "EPContext node shares its main context (main_context=0) and holds no "
        "ep_cache_context, but no EPContext node of this model with main_context=1 does: "
        "unless another model of the same session group provides it, there is nothing to load",
    }
    example_bad = _ctx_model(embed=2)
    example_good = _ctx_model()

    def check_node(self, ctx: LintContext, node: NodeRef) -> None:
        ep_node = next((n for n in self.facts(ctx).nodes if n.node is node), None)
        if ep_node is None:
            return
        where = node.location()
        if ep_node.cache_context is None and ep_node.main_context == 0:
            # by design: the node's graph is in the binary of its main context's node
            if not any(
                n.main_context in (1, None) and n.cache_context and n.source == ep_node.source
                for n in self.facts(ctx).nodes
            ):
                ctx.emit(self.make(where, "no_main", severity=Severity.WARNING))
        elif ep_node.cache_context is None:
            ctx.emit(self.make(where, "missing", attr="ep_cache_context"))
        elif not ep_node.cache_context:
            ctx.emit(self.make(where, "empty_context"))
        for attr, value in (
            ("embed_mode", ep_node.embed_mode),
            ("main_context", ep_node.main_context),
        ):
            if value is not None and value not in (0, 1):
                ctx.emit(self.make(where, "bad_value", attr=attr, value=value, expected="0 or 1"))
        if ep_node.source is None:
            ctx.emit(self.make(where, "no_source", severity=Severity.WARNING))
        if ep_node.partition_name is None:
            ctx.emit(self.make(where, "missing", attr="partition_name", severity=Severity.INFO))


@register
class EpContextSidecarMissing(_CompiledRule):
    """The sidecar context file of an ``embed_mode=0`` EPContext node is missing or unusable.

    What it does:
        Looks up (``stat`` only, never opened) the file named by ``ep_cache_context``,
        relative to the model's folder, and reports it when it is missing, empty or not a
        regular file.

    Why it matters:
        The compiled binary lives in that file; without it the session fails on the device,
        typically after the app has shipped without the ``.bin`` next to the model.

    Fix:
        Ship the sidecar with the model (same folder, same relative name), or recompile
        with ``--embed`` so the binary travels inside the model.

    Execution providers:
        QNN (``*_qnn.bin``), OpenVINO (``*.blob``) and other EPs that write sidecars.
    """

    code = "OL703"
    name = "epcontext-sidecar-missing"
    severity = Severity.ERROR
    messages = {
        "missing": "EPContext sidecar '{location}' does not exist next to the model",
        "empty": "EPContext sidecar '{location}' is empty (truncated copy?)",
        "not-regular": "EPContext sidecar '{location}' is not a regular file",
        "no-folder": "EPContext sidecar '{location}' cannot be checked: the model was not "
        "loaded from a file",
        "error": "EPContext sidecar '{location}' cannot be checked: {detail}",
    }
    example_bad = _ctx_model(embed=0, cache="missing_ctx.bin")
    example_good = _ctx_model()

    def check_model(self, ctx: LintContext) -> None:
        cm = self.facts(ctx)
        for loc, side in cm.sidecars.items():
            if side.state not in self.messages:
                continue
            first = next(n for n in cm.nodes if n.location == loc)
            sev = Severity.INFO if side.state == "no-folder" else None
            ctx.emit(
                self.make(
                    first.node.location(),
                    side.state,
                    severity=sev,
                    location=loc,
                    detail=side.detail,
                )
            )


@register
class EpContextSidecarOutsideFolder(_CompiledRule):
    """An EPContext sidecar path leaves the model's folder (absolute, ``..`` or a symlink).

    What it does:
        Reports an ``ep_cache_context`` path (``embed_mode=0``) that is absolute, contains
        ``..``, a NUL byte, or resolves outside the model's folder. onnxlint never opens it.

    Why it matters:
        ORT resolves the path relative to the model and reads whatever it points to: a model
        from an untrusted source can make the runtime read (and feed to a native EP parser)
        any file the process can access.

    Fix:
        Recompile so the sidecar sits next to the model under a plain relative name, or
        embed it (``--embed``).

    Execution providers:
        Every EP that loads EPContext sidecars.
    """

    code = "OL704"
    name = "epcontext-sidecar-outside-folder"
    severity = Severity.ERROR
    messages = {
        "default": "EPContext sidecar path '{location}' is not safe ({why}); onnxlint did not "
        "open it",
    }
    example_bad = _ctx_model(embed=0, cache="../../etc/passwd")
    example_good = _ctx_model()

    def check_model(self, ctx: LintContext) -> None:
        cm = self.facts(ctx)
        for loc, side in cm.sidecars.items():
            if side.state in ("unsafe", "outside"):
                first = next(n for n in cm.nodes if n.location == loc)
                ctx.emit(self.make(first.node.location(), location=loc, why=side.detail))


@register
class EpContextSidecarShared(_CompiledRule):
    """An EPContext sidecar is shared wrongly between nodes or models.

    What it does:
        Reports a sidecar that several EPContext nodes claim as their main context
        (``main_context=1``), and a sidecar that nodes of this model only read
        (``main_context=0``) while no node of this model owns it.

    Why it matters:
        With shared contexts, one node (the main context) loads the binary and the others
        refer to graphs inside it. Two owners load it twice or clash; an orphan reader works
        only while another model's file is present and unchanged, a coupling nobody sees
        until one of the two is updated.

    Fix:
        Compile the models that share a context together (one compile call), keep the
        resulting ONNX files and context files together, and never swap one of them alone.

    Execution providers:
        QNN (shared contexts, weight sharing), other EPs with multi-model contexts.
    """

    code = "OL705"
    name = "epcontext-sidecar-shared"
    severity = Severity.WARNING
    messages = {
        "two-main": "EPContext sidecar '{location}' is the main context of {count} nodes "
        "({nodes}); only one node may own it",
        "orphan": "EPContext sidecar '{location}' is only read here (main_context=0) and owned "
        "by another model: keep both models and the file together",
    }
    example_bad = _ctx_model(embed=0, cache="shared.bin", nodes=2)
    example_good = _ctx_model()

    def check_model(self, ctx: LintContext) -> None:
        for loc, problem, nodes in shared_problems(self.facts(ctx)):
            ctx.emit(
                self.make(
                    nodes[0].node.location(),
                    problem,
                    location=loc,
                    count=len(nodes),
                    nodes=", ".join(n.node.path for n in nodes),
                    related=tuple(n.node.location() for n in nodes[1:]),
                )
            )


@register
class EmbeddedMultiplePartitions(_CompiledRule):
    """Several EPContext partitions embed their binaries (``embed_mode=1``) in one model.

    What it does:
        Reports a model with more than one EPContext node whose binary is embedded.

    Why it matters:
        Each partition carries its own copy of compiled weights and code inside the
        protobuf, which is limited to 2 GiB; the model grows with every partition, and
        weights cannot be shared between them. More partitions also mean CPU islands
        between them (see OL6xx).

    Fix:
        Reduce the partitions first (make the graph fully supported), or compile with
        ``--no-embed`` so the binaries go to sidecar files.

    Execution providers:
        QNN, OpenVINO and other EPs that embed contexts.
    """

    code = "OL706"
    name = "embedded-multiple-partitions"
    severity = Severity.WARNING
    messages = {
        "default": "{count} EPContext partitions embed their binaries ({size}) in the model; "
        "consider fewer partitions or sidecar files",
    }
    example_bad = _ctx_model(nodes=2)
    example_good = _ctx_model()

    def check_model(self, ctx: LintContext) -> None:
        embedded = [n for n in self.facts(ctx).nodes if n.embed_mode == 1]
        if len(embedded) > 1:
            size = sum(len(n.cache_context or b"") for n in embedded)
            ctx.emit(
                self.make(
                    embedded[0].node.location(),
                    count=len(embedded),
                    size=f"{size} bytes",
                    related=tuple(n.node.location() for n in embedded[1:]),
                )
            )


@register
class CompatibilityInfoMissing(_CompiledRule):
    """A compiled model lacks the ``ep_compatibility_info.<EP>`` metadata for its EP.

    What it does:
        For each EP the EPContext nodes name, looks for the metadata entry ORT writes at
        compile time (e.g. ``ep_compatibility_info.QNNExecutionProvider``).

    Why it matters:
        ORT's compatibility check (``GetModelCompatibilityForEpDevices``) needs that string.
        Without it nobody can tell before loading whether the binary suits the device, and
        an optimal-only cache policy (the Windows ML samples' policy) must treat the model
        as a cache miss and recompile.

    Fix:
        Recompile with ONNX Runtime 1.23 or later through the compile API
        (``onnxlint compile``), which records it.

    Execution providers:
        EPs that implement compatibility validation (QNN and plugin EPs).
    """

    code = "OL707"
    name = "compatibility-info-missing"
    severity = Severity.WARNING
    messages = {
        "default": "no 'ep_compatibility_info.{ep_name}' metadata: its compatibility cannot be "
        "checked, and an optimal-only cache policy must treat it as a cache miss",
    }
    example_bad = _ctx_model()
    example_good = _ctx_model(meta='"ep_compatibility_info.ExampleExecutionProvider": "v1"')

    def check_model(self, ctx: LintContext) -> None:
        cm = self.facts(ctx)
        for ep in cm.providers():
            if ep not in cm.compat_info:
                ctx.emit(self.make(Location(), ep=ep, ep_name=ep))


@register
class CompiledModelCompatibility(_CompiledRule):
    """ORT's compatibility verdict on a compiled model, with the recommended action.

    What it does:
        Where the EP is installed (in the configured runner), runs ORT's
        ``get_compatibility_info_from_model`` and ``get_model_compatibility_for_ep_devices``
        in an isolated worker and reports the status with the platform's recommended
        action: ``EP_SUPPORTED_OPTIMAL`` reuse it; ``EP_SUPPORTED_PREFER_RECOMPILATION``
        recompile under an optimal-only policy; ``EP_UNSUPPORTED`` do not load it;
        ``EP_NOT_APPLICABLE`` is no evidence of compatibility; an error means use the source
        model. When the check cannot be made here it says why instead of guessing.

    Why it matters:
        A compiled binary depends on the EP, SDK, driver and device that produced it;
        loading an unsupported one fails or silently runs slower.

    Fix:
        Follow the recommended action; recompile from the source model when in doubt.

    Execution providers:
        QNN (validates NPU devices only: its x86_64 simulator exposes a CPU device, so the
        check is reported as impossible there), plugin EPs that implement validation.
    """

    code = "OL708"
    fix_availability = "sometimes"
    name = "compiled-model-compatibility"
    severity = Severity.INFO
    messages = {
        "status": "{ep_name}: ORT compatibility status {status}: {action}",
        "error": "{ep_name}: the compatibility check failed ({reason}): {action}",
        "unavailable": "{ep_name}: compatibility cannot be checked here: {reason}",
    }
    example_bad = _ctx_model(meta='"ep_compatibility_info.ExampleExecutionProvider": "v1"')
    example_good = _PLAIN

    def check_model(self, ctx: LintContext) -> None:
        cm = self.facts(ctx)
        for ep in cm.providers():
            if ep not in cm.compat_info:
                continue  # OL707 says it; ORT would have nothing to check
            source = ctx.loaded.path if ctx.loaded.path is not None else _bytes(ctx)
            compat = check_compatibility(
                source,
                ep,
                content_hash=ctx.loaded.content_hash,
                runners=ctx.config.runners,
                root=ctx.config.root,
            )
            if compat.state == "status":
                sev = {
                    "EP_SUPPORTED_OPTIMAL": Severity.INFO,
                    "EP_SUPPORTED_PREFER_RECOMPILATION": Severity.WARNING,
                    "EP_UNSUPPORTED": Severity.ERROR,
                }.get(compat.status or "", Severity.WARNING)
                ctx.emit(
                    self.make(
                        Location(),
                        "status",
                        severity=sev,
                        ep=ep,
                        ep_name=ep,
                        status=compat.status,
                        action=compat.action,
                    )
                )
            elif compat.state == "error":
                ctx.emit(
                    self.make(
                        Location(),
                        "error",
                        severity=Severity.WARNING,
                        ep=ep,
                        ep_name=ep,
                        reason=_short(compat.reason),
                        action=compat.action,
                    )
                )
            elif compat.state == "unavailable":
                ctx.emit(
                    self.make(
                        Location(), "unavailable", ep=ep, ep_name=ep, reason=_short(compat.reason)
                    )
                )


@register
class CompiledSourceMismatch(_CompiledRule):
    """The compiled model was not produced from the given source model (cache-key hygiene).

    What it does:
        With ``--source model.onnx``, compares the source's SHA-256 with the hash
        ``onnxlint compile`` recorded in the compiled model's metadata
        (``onnxlint:source_sha256``). Without a recorded hash it says the pairing cannot be
        verified.

    Why it matters:
        ORT's compatibility check validates a binary against devices, not against the
        source model: a stale compiled model passes it. A cache of compiled models must be
        keyed on the source too, and be invalidated when a new EP is installed, the driver
        is updated, the hardware changes, the source model changes, or the ORT/EP version or
        compile settings change.

    Fix:
        Recompile from the current source (``onnxlint compile SOURCE --ep EP -o OUT``),
        which records the hash and the options.

    Execution providers:
        Every compiling EP.
    """

    code = "OL709"
    name = "compiled-source-mismatch"
    severity = Severity.ERROR
    #: run by the report hook (it needs ``--source``), not by the graph walk
    emitted_by = "source-check"
    messages = {
        "mismatch": "compiled from a different source model (recorded sha256 {recorded}, "
        "--source has {actual}): the compiled model is stale; recompile",
        "unverifiable": "cannot verify that this compiled model was built from {source}: it "
        "records no source hash (not compiled by 'onnxlint compile'); a cache keyed on it "
        "must be invalidated when: {events}",
        "unreadable": "cannot read --source {source}: {error}",
    }

    @classmethod
    def check(cls, ctx: LintContext) -> list[Diagnostic]:
        source = (ctx.config.confirm or {}).get("source")
        if not source:
            return []
        cm = ctx.analysis(CompiledModel)
        if not cm.is_compiled:
            return []
        try:
            actual = file_sha256(source)
        except OSError as exc:
            return [cls.make(Location(), "unreadable", source=source, error=exc.strerror or exc)]
        verdict = source_match(cm, actual)
        if verdict == "mismatch":
            return [
                cls.make(
                    Location(),
                    "mismatch",
                    recorded=(cm.source_hash() or "")[:12],
                    actual=actual[:12],
                    fix=Fix(f"onnxlint compile {source} -o NEW_OUTPUT"),
                )
            ]
        if verdict == "unverifiable":
            return [
                cls.make(
                    Location(),
                    "unverifiable",
                    severity=Severity.WARNING,
                    source=source,
                    events="; ".join(INVALIDATING_EVENTS),
                )
            ]
        return []


def _bytes(ctx: LintContext) -> bytes:
    return ctx.model.SerializeToString()


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def source_check(ctx: LintContext) -> None:
    """Emit :class:`CompiledSourceMismatch`'s findings for ``ctx``; an internal error
    becomes a skipped-check finding, never an exception (the engine's ``confirmation``
    stage runs it on every model)."""
    from onnxlint.rules.confirmation import ConfirmSkipped

    try:
        for d in CompiledSourceMismatch.check(ctx):
            ctx.emit(d)
    except Exception as exc:  # a stage never takes the lint down
        ctx.emit(
            ConfirmSkipped.make(Location(), ep_name="source check", why=f"internal error: {exc}")
        )
