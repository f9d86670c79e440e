"""Compiled (EPContext) models: what they hold, whether their sidecars are safe, and
whether the EP still accepts them.

An EP that compiles (QNN, OpenVINO, VitisAI, TensorRT RTX, ...) can save its
compiled partitions as ``com.microsoft.EPContext`` nodes, with the binary
either embedded in the node (``embed_mode=1``) or in a sidecar file next to the
model (``embed_mode=0``, ``ep_cache_context`` holds the relative path). This
module inspects such a model without creating a session (:func:`inspect`),
runs ORT's compatibility check in an isolated worker (:func:`check_compatibility`:
a compatibility call after a compile in the same process has segfaulted) and
checks cache-key hygiene against a source model (:func:`source_match`).

Sidecar files are never opened: they are ``stat``-ed, and only when their
location is a plain relative path that resolves inside the model's folder
(``onnxlint.modelfile.external.unsafe_location``).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import onnx

from onnxlint import lintdeps
from onnxlint.modelfile.external import unsafe_location

if TYPE_CHECKING:
    from onnxlint.context import LintContext
    from onnxlint.index import NodeRef

EPCONTEXT_OP = "EPContext"
EPCONTEXT_DOMAIN = "com.microsoft"
#: metadata key ORT writes at compile time; the value is opaque and EP-defined
COMPAT_KEY_PREFIX = "ep_compatibility_info."
#: metadata keys ``onnxlint compile`` records in the compiled model
SOURCE_HASH_KEY = "onnxlint:source_sha256"
COMPILE_OPTIONS_KEY = "onnxlint:compile"

#: ORT's OrtCompiledModelCompatibility statuses -> the platform's recommended action
#: (Windows ML "Compile and cache ONNX models", compatibility-check table)
STATUS_ACTIONS: dict[str, str] = {
    "EP_SUPPORTED_OPTIMAL": "reuse the compiled model",
    "EP_SUPPORTED_PREFER_RECOMPILATION": (
        "the model runs, but the EP recommends recompiling: an optimal-only cache policy "
        "recompiles it"
    ),
    "EP_UNSUPPORTED": "do not load the compiled model: recompile it or use the source model",
    "EP_NOT_APPLICABLE": (
        "the EP gave no determination, which is not evidence of compatibility: use the "
        "source model unless another validation policy applies"
    ),
}
ERROR_ACTION = (
    "use the source model for this run and do not promote a newly compiled model that "
    "cannot be validated"
)

#: events after which a cached compiled model must be rebuilt (same source as above)
INVALIDATING_EVENTS: tuple[str, ...] = (
    "a new EP is installed",
    "the GPU/NPU driver is updated",
    "the hardware changes",
    "the source ONNX model changes",
    "the ONNX Runtime version, the EP version or the compile settings change",
)


@dataclass(frozen=True)
class EpContextNode:
    """One EPContext node and its attributes as stored (None when absent)."""

    node: NodeRef
    embed_mode: int | None
    cache_context: bytes | None
    source: str | None
    sdk_version: str | None
    partition_name: str | None
    main_context: int | None

    @property
    def location(self) -> str | None:
        """The sidecar path for ``embed_mode=0`` (None otherwise or when undecodable)."""
        if self.embed_mode != 0 or self.cache_context is None:
            return None
        try:
            return self.cache_context.decode("utf-8")
        except UnicodeDecodeError:
            return None


@dataclass(frozen=True)
class Sidecar:
    """What ``stat`` says about one sidecar location (the file is never opened).

    ``state``: ``ok``, ``unsafe`` (absolute, ``..``, NUL), ``outside`` (resolves
    outside the model folder, e.g. through a symlink), ``missing``,
    ``not-regular``, ``empty``, ``no-folder`` (the model was not loaded from a
    file, so the sidecar cannot be looked up) or ``error``.
    """

    location: str
    state: str
    detail: str = ""
    size: int | None = None


@dataclass(init=False)
class CompiledModel:
    """The compiled-model facts of one model (``ctx.analysis(CompiledModel)``)."""

    nodes: list[EpContextNode] = field(default_factory=list)
    sidecars: dict[str, Sidecar] = field(default_factory=dict)
    #: provider name -> the opaque compatibility string from the metadata
    compat_info: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)

    def __init__(self, ctx: LintContext | None = None) -> None:
        self.nodes = []
        self.sidecars = {}
        self.compat_info = {}
        self.metadata = {}
        if ctx is not None:
            _fill(self, ctx.model, ctx.index.nodes, ctx.loaded.base_dir)

    @property
    def is_compiled(self) -> bool:
        return bool(self.nodes)

    def providers(self) -> list[str]:
        """EPs the EPContext nodes were compiled for, in first-seen order."""
        out: list[str] = []
        for n in self.nodes:
            if n.source and n.source not in out:
                out.append(n.source)
        return out

    def source_hash(self) -> str | None:
        return self.metadata.get(SOURCE_HASH_KEY)

    def compile_options(self) -> dict[str, Any] | None:
        raw = self.metadata.get(COMPILE_OPTIONS_KEY)
        if not raw:
            return None
        try:
            value = json.loads(raw)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None


def _attr(node: onnx.NodeProto, name: str) -> onnx.AttributeProto | None:
    for a in node.attribute:
        if a.name == name:
            return a
    return None


def _int_attr(node: onnx.NodeProto, name: str) -> int | None:
    a = _attr(node, name)
    if a is None or a.type != onnx.AttributeProto.INT:
        return None
    return int(a.i)


def _str_attr(node: onnx.NodeProto, name: str) -> str | None:
    a = _attr(node, name)
    if a is None or a.type != onnx.AttributeProto.STRING:
        return None
    return a.s.decode("utf-8", "replace")


def is_epcontext(node: NodeRef) -> bool:
    return node.op_type == EPCONTEXT_OP and node.domain == EPCONTEXT_DOMAIN


def _fill(
    out: CompiledModel, model: onnx.ModelProto, nodes: list[NodeRef], base_dir: Path | None
) -> None:
    out.metadata = {p.key: p.value for p in model.metadata_props}
    out.compat_info = {
        k[len(COMPAT_KEY_PREFIX) :]: v
        for k, v in out.metadata.items()
        if k.startswith(COMPAT_KEY_PREFIX)
    }
    for ref in nodes:
        if not is_epcontext(ref):
            continue
        n = ref.node
        cache = _attr(n, "ep_cache_context")
        out.nodes.append(
            EpContextNode(
                node=ref,
                embed_mode=_int_attr(n, "embed_mode"),
                cache_context=(
                    cache.s
                    if cache is not None and cache.type == onnx.AttributeProto.STRING
                    else None
                ),
                source=_str_attr(n, "source"),
                sdk_version=_str_attr(n, "ep_sdk_version"),
                partition_name=_str_attr(n, "partition_name"),
                main_context=_int_attr(n, "main_context"),
            )
        )
    for ep_node in out.nodes:
        loc = ep_node.location
        if loc is not None and loc not in out.sidecars:
            out.sidecars[loc] = check_sidecar(loc, base_dir)


def inspect(model: onnx.ModelProto, base_dir: Path | None = None) -> CompiledModel:
    """The compiled-model facts of ``model`` (a model loaded from ``base_dir``)."""
    from onnxlint.index import ModelIndex

    out = CompiledModel()
    _fill(out, model, list(ModelIndex(model).nodes), base_dir)
    return out


def check_sidecar(location: str, base_dir: Path | None) -> Sidecar:
    """Stat a sidecar location that must stay inside ``base_dir``; never open it."""
    why = unsafe_location(location)
    if why:
        return Sidecar(location, "unsafe", why)
    if base_dir is None:
        return Sidecar(location, "no-folder")
    target = base_dir / location
    lintdeps.looked_at(target)
    try:
        root = base_dir.resolve()
        real = target.resolve()
        if root != real and root not in real.parents:
            return Sidecar(location, "outside", "resolves outside the model folder (symlink)")
        st = os.stat(target)
    except FileNotFoundError:
        return Sidecar(location, "missing")
    except (OSError, RuntimeError) as exc:
        return Sidecar(location, "error", str(exc))
    if not stat.S_ISREG(st.st_mode):
        return Sidecar(location, "not-regular", "not a regular file (device, FIFO or folder)")
    if st.st_size == 0:
        return Sidecar(location, "empty", size=0)
    return Sidecar(location, "ok", size=st.st_size)


def shared_problems(cm: CompiledModel) -> list[tuple[str, str, list[EpContextNode]]]:
    """Sidecars shared wrongly: (location, problem id, the nodes involved).

    ``two-main``: several nodes claim to be the main context of one file;
    ``orphan``: nodes that read a file (``main_context=0``) no node of this
    model owns, so the file belongs to another model and must ship with it.
    """
    by_loc: dict[str, list[EpContextNode]] = {}
    for n in cm.nodes:
        if n.location is not None:
            by_loc.setdefault(n.location, []).append(n)
    out: list[tuple[str, str, list[EpContextNode]]] = []
    for loc, nodes in by_loc.items():
        mains = [n for n in nodes if n.main_context in (1, None)]
        # one file per partition is the normal case; only an explicit double claim is wrong
        explicit = [n for n in nodes if n.main_context == 1]
        if len(explicit) > 1:
            out.append((loc, "two-main", explicit))
        elif not mains:
            out.append((loc, "orphan", nodes))
    return out


def file_sha256(path: str | os.PathLike[str]) -> str:
    lintdeps.looked_at(path)
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def source_match(cm: CompiledModel, source_hash: str) -> str:
    """``match``, ``mismatch`` or ``unverifiable`` (no hash recorded at compile time)."""
    recorded = cm.source_hash()
    if not recorded:
        return "unverifiable"
    return "match" if recorded == source_hash else "mismatch"


# ---------------------------------------------------------------------------
# ORT's compatibility check, in a worker


@dataclass(frozen=True)
class Compatibility:
    """The outcome of ORT's compatibility check for one EP.

    ``state``: ``status`` (``status`` holds the ORT status), ``no-info`` (the
    model records no compatibility string for the EP), ``error`` (the check
    raised), ``unavailable`` (the check cannot be made here; ``reason`` says why).
    """

    provider: str
    state: str
    status: str | None = None
    reason: str = ""
    info: str | None = None
    devices: tuple[str, ...] = ()

    @property
    def action(self) -> str:
        if self.state == "status" and self.status:
            return STATUS_ACTIONS.get(self.status, ERROR_ACTION)
        if self.state == "error":
            return ERROR_ACTION
        if self.state == "no-info":
            return "an optimal-only cache policy treats this as a cache miss: recompile"
        return "validate it on the target device before reusing it"


_COMPAT_CACHE: dict[tuple[str, str, str], Compatibility] = {}


def check_compatibility(
    model: str | os.PathLike[str] | bytes,
    provider: str,
    *,
    content_hash: str = "",
    runners: dict[str, str] | None = None,
    root: str | os.PathLike[str] | None = None,
    timeout_s: float = 60.0,
) -> Compatibility:
    """Run ORT's compatibility check for ``provider`` in an isolated worker.

    Outcomes are remembered per process (content hash, provider, runner), so a
    language server re-linting the same file does not start a worker each time.
    """
    from onnxlint.ep_names import providers
    from onnxlint.runtime.batch import WorkerItem, run_items
    from onnxlint.runtime.processes import private_temp_dir, remove_temp_dir
    from onnxlint.runtime.runners import EpSpec, resolve_runner

    if provider not in providers():
        return Compatibility(
            provider, "unavailable", reason=f"onnxlint does not know how to create {provider}"
        )
    from onnxlint import lintdeps

    # what the installed EP answers today, not a fact of the model
    lintdeps.volatile(f"ORT's compatibility check on {provider}")
    runner = resolve_runner(provider, runners, root=root)
    key = (content_hash, provider, runner)
    if content_hash and key in _COMPAT_CACHE:
        return _COMPAT_CACHE[key]
    tmp: Path | None = None
    try:
        if isinstance(model, (bytes, bytearray)):
            tmp = private_temp_dir("compat")
            path = tmp / "model.onnx"
            path.write_bytes(bytes(model))
        else:
            path = Path(model).resolve()
        res = run_items(
            [WorkerItem("compat", "compat", {"model_path": str(path)})],
            spec=EpSpec.for_ep(provider),
            runner=runner,
            timeout_s=timeout_s,
        )[0]
    finally:
        if tmp is not None:
            remove_temp_dir(tmp)
    out = _compat_from_result(provider, res)
    if content_hash and out.state != "error":
        _COMPAT_CACHE[key] = out
    return out


def _compat_from_result(provider: str, res: Any) -> Compatibility:
    f = res.facts
    devices = tuple(str(d.get("device_type", "?")) for d in f.get("devices") or [])
    if not res.ok:
        kind = res.error_kind or res.status
        if kind in ("no-compat-api", "ep-unavailable", "ort-missing", "runner-missing") or (
            res.isolated_failure and res.status == "runner-error"
        ):
            return Compatibility(provider, "unavailable", reason=str(res.error), devices=devices)
        return Compatibility(provider, "error", reason=str(res.error), devices=devices)
    info = f.get("info")
    if not info:
        return Compatibility(provider, "no-info", devices=devices)
    if f.get("status"):
        return Compatibility(
            provider, "status", status=str(f["status"]), info=info, devices=devices
        )
    err = str(f.get("check_error") or "")
    if not devices or "only supports" in err or "no OrtHardwareDeviceType" in err:
        # e.g. QNN validates only NPU devices, and its x86_64 simulator exposes a CPU device
        kinds = ", ".join(sorted(set(devices))) or "none"
        return Compatibility(
            provider,
            "unavailable",
            reason=f"the EP cannot validate against the devices here (device types: {kinds}): {err}",
            info=info,
            devices=devices,
        )
    return Compatibility(provider, "error", reason=err, info=info, devices=devices)


def partition_counts(cm: CompiledModel) -> Counter[str]:
    """EPContext nodes per provider."""
    return Counter(n.source or "?" for n in cm.nodes)
