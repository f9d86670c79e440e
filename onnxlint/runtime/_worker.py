"""Isolated ONNX Runtime session worker for onnxlint.

This file is executed as a script (``python /path/to/_worker.py``) by whatever
interpreter holds the execution provider, e.g. a separate OpenVINO venv where
onnxlint itself is not installed. It must therefore import nothing but the
standard library and ``onnxruntime`` (lazily), and stay compatible with older
Pythons (3.8+).

Protocol (version 1)
--------------------
stdin: one JSON object::

    {"protocol": 1,
     "ep": {"provider": "QNNExecutionProvider", "options": {...},
            "plugin_package": "onnxruntime_qnn" | null},
     "items": [
        {"id": "m0", "kind": "session", "model_path": "...",
         "optimization": "disabled" | "basic" | "extended" | "default",
         "free_dims": {"N": 1}, "record_assignment": true,
         "log_lines": 0, "fault": null},
        {"id": "opt", "kind": "optimize", "model_path": "...", "output_path": "..."},
        {"id": "c", "kind": "compile", "model_path": "...", "output_path": "...",
         "embed": false},
        {"id": "k", "kind": "compat", "model_path": "..."},
        {"id": "d", "kind": "discover"},
        {"id": "l", "kind": "limits"}
     ]}

stdout: JSON lines, each with an ``event`` key:

- ``hello``: protocol, pid, python, versions (emitted once at start-up);
- ``start``: ``index``, ``id``, ``log_path`` (emitted before each item, so a
  parent that sees the worker die knows which item killed it and where the
  EP's log of that item is);
- ``result``: ``index``, ``id`` and the item's result fields;
- ``done``: after the last item.

With ``--serve`` the worker stays: stdin carries one request per line, each answered
by its own ``hello`` ... ``done``, until stdin ends. The parent keeps such a worker
warm between the level-1 graphs of several models (one ``import onnxruntime`` for a
whole run); a worker that crashed, hung or ran out of memory is never asked again.

ORT and the EP libraries write to fds 1 and 2 directly (C++ streams, and the
Python fallback path ``print``s); the worker keeps a private duplicate of the
original stdout for the protocol and points fds 1 and 2 at a per-item log file.

``fault`` (testing hook): ``"sigkill"``, ``"segv"``, ``"sigstop"``, ``"hang"``,
``"exit"`` or ``"oom"`` makes the worker misbehave on that item, so the parent's recovery can
be tested without a real EP crash.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sys
import tempfile
import time
import traceback
import warnings
from typing import Any

PROTOCOL = 1

_OPT_LEVELS = {
    "disabled": "ORT_DISABLE_ALL",
    "basic": "ORT_ENABLE_BASIC",
    "extended": "ORT_ENABLE_EXTENDED",
    "layout": "ORT_ENABLE_LAYOUT",
    "default": "ORT_ENABLE_ALL",
    "all": "ORT_ENABLE_ALL",
}

# Plugin EP packages whose module name does not follow ``onnxruntime_ep_*``.
_KNOWN_PLUGIN_PACKAGES = {"QNNExecutionProvider": "onnxruntime_qnn"}

_VALIDATION_RE = re.compile(
    r"Validation (?P<verdict>PASSED|FAILED) for (?P<count>\d+) nodes? in "
    r"(?P<unit>\w+) \((?P<op>[^)]*)\)"
)
_NODE_LINE_RE = re.compile(
    r"Operator type: (?P<op>\S*) Node name: ?(?P<name>.*?) Node index: (?P<index>\d+)"
)
_REASON_RE = re.compile(r"^\s*REASON\s*:\s*(?P<reason>.*)$")
_PLACED_ON_RE = re.compile(r"Node\(s\) placed on \[(?P<ep>\w+)\]\. Number of nodes: (?P<n>\d+)")
_ALL_PLACED_RE = re.compile(r"All nodes placed on \[(?P<ep>\w+)\]\. Number of nodes: (?P<n>\d+)")
_PLACEMENT_NODE_RE = re.compile(r"\]\s{2,}(?P<op>\S+) \((?P<name>.*)\)\s*$")
_QNN_BUILD_RE = re.compile(r"Backend build version: v?(?P<v>[\d.]+)")
_FALLBACK_RE = re.compile(r"Falling back to \[([^\]]*)\]")
# A whole-model refusal, e.g. QNN at opset 6: "QNNExecutionProvider cannot be
# used with this model due to its ONNX opset not being supported by the layout
# transformer."
_EP_REJECTS_MODEL_RE = re.compile(
    r"(?P<ep>\w+ExecutionProvider) cannot be used with this model[^\n\x1b]*"
)
# A classic EP whose factory failed (bad option, absent device): ORT warns and
# quietly builds the session without it.
_EP_CREATE_FAILED_RE = re.compile(r"Failed to create (?P<ep>\w+ExecutionProvider)[^\n\x1b]*")
_EP_FACTORY_ERROR_RE = re.compile(
    r"\[E:onnxruntime:[^\]]*\] (?P<msg>[^\n\x1b]*provider_factory[^\n\x1b]*)"
)
_OV_SUBGRAPHS_RE = re.compile(r"Supported subgraphs on OpenVINO: (\d+)")

_proto_out: Any = None
_registered: dict[str, str] = {}
_plugin_errors: dict[str, str] = {}  # plugin module -> why it could not be registered
_plugin_missing: set[str] = set()  # plugin modules asked for that are not installed


def emit(event: str, **fields: Any) -> None:
    """Write one protocol line on the private stdout duplicate."""
    fields["event"] = event
    _proto_out.write(json.dumps(fields, default=str) + "\n")
    _proto_out.flush()


# -- log parsing (pure functions, also imported by the client's tests) --------


def parse_validation_log(text: str) -> list[dict[str, Any]]:
    """Extract per-node verdicts from QNN's ``LogNodeSupport`` lines.

    Each block is ``Validation FAILED for N nodes in OrtNodeUnit (Op) :``
    followed by one ``Operator type: ... Node name: ... Node index: ...`` line
    per node and a ``REASON : ...`` line. The EP calls GetCapability more than
    once (before and after the layout transform), so verdicts are de-duplicated
    on (index, op, name, verdict, reason), keeping the first occurrence.
    """
    out: list[dict[str, Any]] = []
    seen = set()
    block: dict[str, Any] | None = None
    nodes: list[tuple[str, str, int]] = []

    def flush(reason: str | None) -> None:
        if block is None:
            return
        targets = nodes or [(block["op"], "", -1)]
        for op, name, index in targets:
            key = (index, op, name, block["verdict"], reason)
            if key in seen:
                continue
            seen.add(key)
            out.append(
                {
                    "op_type": op,
                    "name": name,
                    "index": index,
                    "unit": block["unit"],
                    "unit_op": block["op"],
                    "verdict": block["verdict"],
                    "reason": reason,
                }
            )

    for line in text.splitlines():
        m = _VALIDATION_RE.search(line)
        if m:
            if block is not None:
                flush(None)
            block = {"verdict": m.group("verdict"), "unit": m.group("unit"), "op": m.group("op")}
            nodes = []
            continue
        if block is None:
            continue
        m = _NODE_LINE_RE.search(line)
        if m:
            nodes.append((m.group("op"), m.group("name").strip(), int(m.group("index"))))
            continue
        m = _REASON_RE.match(line)
        if m:
            flush(m.group("reason").strip())
            block = None
            nodes = []
            continue
        if line.strip() and not line[:1].isspace():
            # A new log record without a REASON line: the block had none.
            flush(None)
            block = None
            nodes = []
    if block is not None:
        flush(None)
    return out


def parse_node_placements(text: str) -> dict[str, Any]:
    """Parse the verbose "Node placements" log (the only source before ORT 1.24).

    Lines look like ``Node(s) placed on [CPUExecutionProvider]. Number of nodes: 2``
    followed by ``  OpType (node_name)`` lines; fused nodes show only their
    generated names and the domain is not logged. When one EP got everything,
    ORT writes only ``All nodes placed on [EP]. Number of nodes: N``: that is
    returned as ``all_on``/``count`` with no node list.
    """
    nodes: list[dict[str, str]] = []
    all_on: str | None = None
    count = 0
    ep: str | None = None
    remaining = 0
    for line in text.splitlines():
        m = _ALL_PLACED_RE.search(line)
        if m:
            all_on, count = m.group("ep"), int(m.group("n"))
            continue
        m = _PLACED_ON_RE.search(line)
        if m:
            ep = m.group("ep")
            remaining = int(m.group("n"))
            count += remaining
            continue
        if ep and remaining > 0:
            m = _PLACEMENT_NODE_RE.search(line)
            if m:
                nodes.append(
                    {"name": m.group("name"), "op_type": m.group("op"), "domain": "", "ep": ep}
                )
                remaining -= 1
                continue
            ep = None
    return {"nodes": nodes, "all_on": all_on, "count": count}


def scan_log(text: str) -> dict[str, Any]:
    """Facts other than per-node verdicts that the log tells: fallbacks, versions."""
    facts: dict[str, Any] = {}
    m = _FALLBACK_RE.search(text)
    if m:
        facts["fallback_to"] = [p.strip().strip("'\"") for p in m.group(1).split(",") if p.strip()]
    m = _QNN_BUILD_RE.search(text)
    if m:
        facts["qnn_sdk_version"] = m.group("v")
    m = _EP_REJECTS_MODEL_RE.search(text)
    if m:
        facts["model_rejected"] = {"ep": m.group("ep"), "message": m.group(0).strip()}
    m = _EP_CREATE_FAILED_RE.search(text)
    if m:
        failed = {"ep": m.group("ep"), "message": m.group(0).strip()}
        e = _EP_FACTORY_ERROR_RE.search(text)
        if e:
            failed["error"] = e.group("msg").strip()
        facts["ep_create_failed"] = failed
    m = _OV_SUBGRAPHS_RE.search(text)
    if m:
        facts["openvino_subgraphs"] = int(m.group(1))
    return facts


# -- ORT helpers ---------------------------------------------------------------


def _ort() -> Any:
    import onnxruntime

    return onnxruntime


def _dist_version(name: str) -> str | None:
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover - Python < 3.8
        return None
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def versions(packages: bool = True) -> dict[str, Any]:
    """Python and ORT versions; with ``packages``, the installed ORT distributions too
    (a metadata scan of every path entry: tens of ms, skipped for optimize-only batches)."""
    out: dict[str, Any] = {"python": sys.version.split()[0], "executable": sys.executable}
    try:
        out["onnxruntime"] = _ort().__version__
    except Exception as exc:  # an import failure is reported, not raised
        out["onnxruntime_error"] = f"{type(exc).__name__}: {exc}"
        return out
    if not packages:
        return out
    for dist in (
        "onnxruntime",
        "onnxruntime-gpu",
        "onnxruntime-openvino",
        "onnxruntime-directml",
        "onnxruntime-qnn",
        "onnxruntime-ep-openvino",
    ):
        v = _dist_version(dist)
        if v:
            out.setdefault("packages", {})[dist] = v
    return out


def _plugin_packages() -> dict[str, str]:
    """Map plugin EP name -> module name for installed plugin EP packages."""
    import importlib.util
    import pkgutil

    found: dict[str, str] = {}
    for ep, mod in _KNOWN_PLUGIN_PACKAGES.items():
        if importlib.util.find_spec(mod) is not None:
            found[ep] = mod
    for info in pkgutil.iter_modules():
        if info.name.startswith("onnxruntime_ep_"):
            found.setdefault("?" + info.name, info.name)
    return found


def _register_plugin(module_name: str) -> list[str]:
    """Register a plugin EP library; return the EP names it registered."""
    import importlib

    ort = _ort()
    mod = importlib.import_module(module_name)
    get_path = getattr(mod, "get_library_path", None)
    if get_path is None:
        raise RuntimeError(f"plugin package {module_name} has no get_library_path()")
    path = get_path()
    names: list[str] = []
    for attr in ("get_ep_names", "get_ep_name"):
        fn = getattr(mod, attr, None)
        if fn is not None:
            value = fn()
            names = list(value) if isinstance(value, (list, tuple)) else [str(value)]
            break
    if not names and getattr(mod, "EP_NAME", None):
        names = [str(mod.EP_NAME)]
    if not names:
        names = [module_name]
    reg_name = names[0]
    if reg_name not in _registered:
        try:
            ort.register_execution_provider_library(reg_name, path)
        except Exception as exc:
            if "already" not in str(exc).lower():
                raise
        _registered[reg_name] = path
    return names


def _ensure_plugins(provider: str, plugin_package: str | None) -> str | None:
    """Register the plugin package for ``provider`` if one is installed.

    A package that fails to import or register (missing or broken library) is
    remembered in ``_plugin_errors`` so the session can say why the EP is absent.
    """
    if not hasattr(_ort(), "register_execution_provider_library"):
        return None
    if plugin_package:
        return plugin_package if _try_register(plugin_package) is not None else None
    pkgs = _plugin_packages()
    if provider in pkgs:
        return pkgs[provider] if _try_register(pkgs[provider]) is not None else None
    for key, mod in pkgs.items():
        if key.startswith("?"):
            names = _try_register(mod)
            if names and provider in names:
                return mod
    return None


def _try_register(module_name: str) -> list[str] | None:
    try:
        return _register_plugin(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name.split(".")[0]:
            _plugin_errors[module_name] = f"{type(exc).__name__}: {exc}"
        else:  # the package is simply not installed: the EP is absent, not broken
            _plugin_missing.add(module_name)
        return None
    except Exception as exc:
        _plugin_errors[module_name] = f"{type(exc).__name__}: {exc}"
        return None


def _devices_for(provider: str) -> list[Any]:
    ort = _ort()
    if not hasattr(ort, "get_ep_devices"):
        return []
    return [d for d in ort.get_ep_devices() if d.ep_name == provider]


def _device_info(d: Any) -> dict[str, Any]:
    dev = d.device
    return {
        "ep_name": d.ep_name,
        "ep_vendor": getattr(d, "ep_vendor", ""),
        "ep_version": dict(getattr(d, "ep_metadata", {}) or {}).get("version"),
        "device_type": str(getattr(dev, "type", "")).rsplit(".", 1)[-1],
        "vendor": getattr(dev, "vendor", ""),
    }


def discover() -> dict[str, Any]:
    """What this interpreter can run: classic providers, plugin EPs, devices."""
    ort = _ort()
    out: dict[str, Any] = {
        "available_providers": list(ort.get_available_providers()),
        "plugins": {},
        "devices": [],
    }
    for key, mod in _plugin_packages().items():
        try:
            names = _register_plugin(mod)
            out["plugins"][mod] = {
                "ep_names": names,
                "version": _dist_version(mod.replace("_", "-")),
            }
        except Exception as exc:
            out["plugins"][mod] = {"error": f"{type(exc).__name__}: {exc}", "key": key}
    if hasattr(ort, "get_ep_devices"):
        out["devices"] = [_device_info(d) for d in ort.get_ep_devices()]
    return out


# -- what this ORT loads --------------------------------------------------------
# Tiny models are written as protobuf bytes by hand: the runner interpreter may
# have no ``onnx`` package (field numbers from onnx/onnx.proto).


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _pb_int(field_no: int, value: int) -> bytes:
    return _varint(field_no << 3) + _varint(value)


def _pb_bytes(field_no: int, value: bytes | str) -> bytes:
    raw = value.encode("utf-8") if isinstance(value, str) else value
    return _varint(field_no << 3 | 2) + _varint(len(raw)) + raw


def _tiny_model(ir_version: int, opsets: dict[str, int]) -> bytes:
    """``y = Identity(x)`` over float[1] with the given IR version and opset imports."""
    shape = _pb_bytes(2, _pb_bytes(1, _pb_int(1, 1)))  # TensorShapeProto{dim{dim_value: 1}}
    tensor_type = _pb_bytes(1, _pb_int(1, 1) + shape)  # TypeProto{tensor_type{FLOAT, shape}}
    node = _pb_bytes(1, "x") + _pb_bytes(2, "y") + _pb_bytes(3, "n") + _pb_bytes(4, "Identity")
    graph = (
        _pb_bytes(1, node)
        + _pb_bytes(2, "g")
        + _pb_bytes(11, _pb_bytes(1, "x") + _pb_bytes(2, tensor_type))
        + _pb_bytes(12, _pb_bytes(1, "y") + _pb_bytes(2, tensor_type))
    )
    model = _pb_int(1, ir_version) + _pb_bytes(2, "onnxlint-limits")
    for domain, version in opsets.items():
        model += _pb_bytes(8, _pb_bytes(1, domain) + _pb_int(2, version))
    return model + _pb_bytes(7, graph)


def _loads(model: bytes) -> bool:
    ort = _ort()
    so = ort.SessionOptions()
    so.log_severity_level = 4
    try:
        ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    except Exception:
        return False
    return True


def _highest(lo: int, hi: int, loads: Any) -> int | None:
    """The highest value in [lo, hi) that ``loads`` accepts (monotonic), None if not even lo."""
    if not loads(lo):
        return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if loads(mid):
            lo = mid
        else:
            hi = mid
    return lo


def limits() -> dict[str, Any]:
    """The highest ai.onnx opset, ai.onnx.ml opset and IR version this ORT loads, and the
    providers it is built with (whose EPs share these limits).

    Measured by creating CPU sessions on tiny models (a binary search each, about
    15 sessions): what ORT really accepts, not what a table says about its release.
    """
    base = {"": 13}
    return {
        "providers": list(_ort().get_available_providers()),
        "max_opset": _highest(13, 128, lambda v: _loads(_tiny_model(7, {"": v}))),
        "ml_opset": _highest(1, 64, lambda v: _loads(_tiny_model(7, {**base, "ai.onnx.ml": v}))),
        "max_ir": _highest(7, 64, lambda v: _loads(_tiny_model(v, base))),
    }


class _Redirect:
    """Point fds 1 and 2 at a log file for the duration of one item."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.saved: list[int] = []

    def __enter__(self) -> _Redirect:
        sys.stdout.flush()
        sys.stderr.flush()
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        self.saved = [os.dup(1), os.dup(2)]
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        return self

    def __exit__(self, *exc: Any) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(self.saved[0], 1)
        os.dup2(self.saved[1], 2)
        for fd in self.saved:
            os.close(fd)


def _read(path: str, head: int = 16 * 1024 * 1024, tail: int = 2 * 1024 * 1024) -> str:
    """The item's log, bounded: the head holds the EP's per-node verdicts
    (GetCapability runs first), the tail the placements and the final errors."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(0)
            if size <= head + tail:
                data = fh.read()
            else:
                data = fh.read(head) + b"\n[... log cut ...]\n"
                fh.seek(size - tail)
                data += fh.read()
    except OSError:
        return ""
    return data.decode("utf-8", "replace")


def _tail(text: str, lines: int) -> list[str]:
    if lines <= 0:
        return []
    return text.splitlines()[-lines:]


def _inject_fault(fault: str | None) -> None:
    if not fault:
        return
    if fault == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif fault == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    elif fault == "sigstop":
        os.kill(os.getpid(), signal.SIGSTOP)
    elif fault == "hang":
        while True:
            time.sleep(3600)
    elif fault == "exit":
        os._exit(3)
    elif fault == "oom":
        # Grow the address space without touching the pages (fast), until the
        # parent's RLIMIT_AS says no, as a runaway EP allocation would.
        import mmap

        hog = []
        try:
            while True:
                hog.append(mmap.mmap(-1, 256 * 1024 * 1024))
        except OSError as exc:
            raise MemoryError(f"address space exhausted after {len(hog) * 256} MiB: {exc}") from exc


def _session_options(item: dict[str, Any], for_optimize: bool = False) -> Any:
    ort = _ort()
    so = ort.SessionOptions()
    so.log_severity_level = int(item.get("log_severity", 0))
    level = item.get("optimization", "basic" if for_optimize else "disabled")
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, _OPT_LEVELS[level])
    so.intra_op_num_threads = int(item.get("threads", 1))
    so.inter_op_num_threads = 1
    for name, value in (item.get("free_dims") or {}).items():
        so.add_free_dimension_override_by_name(name, int(value))
    for key, value in (item.get("config") or {}).items():
        so.add_session_config_entry(str(key), str(value))
    return so


def run_session(ep: dict[str, Any], item: dict[str, Any], log_path: str) -> dict[str, Any]:
    """Create one session and report where ORT put each node."""
    ort = _ort()
    provider = ep.get("provider") or "CPUExecutionProvider"
    options = {str(k): str(v) for k, v in (ep.get("options") or {}).items()}
    res: dict[str, Any] = {"ok": False, "provider": provider}
    record = bool(item.get("record_assignment", True))
    has_api = hasattr(ort.InferenceSession, "get_provider_graph_assignment_info")
    sess = None
    caught: list[str] = []
    t0: float | None = None
    with _Redirect(log_path):
        try:
            so = _session_options(item)
            if record and has_api:
                so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
            providers: list[Any] | None = None
            mode = "default"
            if provider != "CPUExecutionProvider":
                plugin = _ensure_plugins(provider, ep.get("plugin_package"))
                devices = _devices_for(provider)
                if devices:
                    so.add_provider_for_devices(devices, options)
                    mode = "plugin"
                    res["plugin_package"] = plugin
                    res["devices"] = [_device_info(d) for d in devices]
                elif provider in ort.get_available_providers():
                    providers = [(provider, options), "CPUExecutionProvider"]
                    mode = "classic"
                else:
                    res["error_kind"] = "ep-unavailable"
                    res["error"] = "execution provider {} is not available in {} (has {}{})".format(
                        provider,
                        sys.executable,
                        ", ".join(ort.get_available_providers()),
                        f"; plugin package {plugin} registered no device" if plugin else "",
                    )
                    if plugin is None and ep.get("plugin_package") in _plugin_missing:
                        res["missing_package"] = ep["plugin_package"]
                    if _plugin_errors:
                        res["error_kind"] = "ep-library"
                        res["plugin_errors"] = dict(_plugin_errors)
                        res["error"] += "; plugin packages that failed to register: " + "; ".join(
                            f"{mod}: {err}" for mod, err in sorted(_plugin_errors.items())
                        )
                    return res
            res["mode"] = mode
            _inject_fault(item.get("fault"))
            t0 = time.perf_counter()
            with warnings.catch_warnings(record=True) as wlist:
                warnings.simplefilter("always")
                if providers is None:
                    sess = ort.InferenceSession(item["model_path"], so)
                else:
                    sess = ort.InferenceSession(item["model_path"], so, providers=providers)
            res["create_s"] = round(time.perf_counter() - t0, 6)
            caught = [str(w.message) for w in wlist]
            res["ok"] = True
            res["session_providers"] = list(sess.get_providers())
        except Exception as exc:
            res["create_s"] = None if t0 is None else round(time.perf_counter() - t0, 6)
            res["error"] = f"{type(exc).__name__}: {exc}"
            res["error_kind"] = res.get("error_kind", "session")
    log = _read(log_path)
    if caught:
        res["warnings"] = caught
    facts = scan_log(log + "\n".join(caught))
    res.update(facts)
    res["verdicts"] = parse_validation_log(log)
    if sess is not None:
        nodes: list[dict[str, str]] | None = None
        if record and has_api:
            try:
                nodes = []
                subgraphs: list[dict[str, Any]] = []
                for sg in sess.get_provider_graph_assignment_info():
                    sg_nodes = sg.get_nodes()
                    # one entry per subgraph ORT assigned: the actual partitions
                    subgraphs.append({"ep": sg.ep_name, "nodes": len(sg_nodes)})
                    for n in sg_nodes:
                        nodes.append(
                            {
                                "name": n.name,
                                "op_type": n.op_type,
                                "domain": n.domain,
                                "ep": sg.ep_name,
                            }
                        )
                res["assignment_source"] = "api"
                res["ep_subgraphs"] = subgraphs
            except Exception as exc:
                res["assignment_error"] = f"{type(exc).__name__}: {exc}"
                nodes = None
        if nodes is None:
            placed = parse_node_placements(log)
            nodes = placed["nodes"]
            res["assignment_source"] = "log"
            if placed["all_on"]:
                res["assignment_all_on"] = placed["all_on"]
        res["assignment"] = nodes
        if item.get("run_inputs"):
            res["run"] = _run_once(sess, random=bool(item.get("random_inputs")))
        del sess
    lines = int(item.get("log_lines", 0 if res["ok"] else 40))
    if lines:
        res["log_tail"] = _tail(log, lines)
    return res


def _run_once(sess: Any, random: bool = False) -> dict[str, Any]:
    """Run one inference with zeros (or random values) for every input."""
    try:
        import numpy as np
    except ImportError:
        return {"ok": False, "error": "numpy not installed in runner"}
    dtypes = {
        "tensor(float)": np.float32,
        "tensor(double)": np.float64,
        "tensor(float16)": np.float16,
        "tensor(int64)": np.int64,
        "tensor(int32)": np.int32,
        "tensor(int8)": np.int8,
        "tensor(uint8)": np.uint8,
        "tensor(bool)": np.bool_,
    }
    feeds: dict[str, Any] = {}
    for i in sess.get_inputs():
        if i.type not in dtypes:
            return {"ok": False, "error": f"unsupported input type {i.type}"}
        shape = [d if isinstance(d, int) and d >= 0 else 1 for d in i.shape]
        if random and dtypes[i.type] is not np.bool_:
            rng = np.random.default_rng(0)
            feeds[i.name] = (rng.random(shape) * 4 - 2).astype(dtypes[i.type])
        else:
            feeds[i.name] = np.zeros(shape, dtypes[i.type])
    try:
        t0 = time.perf_counter()
        sess.run(None, feeds)
        return {"ok": True, "run_s": round(time.perf_counter() - t0, 6)}
    except Exception as exc:
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}


def _ep_session_options(ep: dict[str, Any], item: dict[str, Any], res: dict[str, Any]) -> Any:
    """Session options with the EP added (plugin devices or classic provider), or None."""
    ort = _ort()
    provider = ep.get("provider") or "CPUExecutionProvider"
    options = {str(k): str(v) for k, v in (ep.get("options") or {}).items()}
    so = _session_options(dict(item, log_severity=item.get("log_severity", 2)))
    if provider == "CPUExecutionProvider":
        return so
    plugin = _ensure_plugins(provider, ep.get("plugin_package"))
    devices = _devices_for(provider)
    if devices:
        so.add_provider_for_devices(devices, options)
        res["mode"] = "plugin"
        res["devices"] = [_device_info(d) for d in devices]
        return so
    if provider in ort.get_available_providers():
        # ModelCompiler takes providers only through the session options
        so.append_execution_provider(provider, options)
        res["mode"] = "classic"
        return so
    res["error_kind"] = "ep-unavailable"
    res["error"] = "execution provider {} is not available in {}{}".format(
        provider,
        sys.executable,
        f" (plugin package {plugin} registered no device)" if plugin else "",
    )
    return None


def run_compile(ep: dict[str, Any], item: dict[str, Any], log_path: str) -> dict[str, Any]:
    """Compile a model to an EPContext model with ``ort.ModelCompiler``.

    Runs in its own worker: a compatibility call after a compile in the same
    process has segfaulted, so the parent never mixes the two in one process.
    """
    ort = _ort()
    res: dict[str, Any] = {"ok": False, "provider": ep.get("provider") or "CPUExecutionProvider"}
    with _Redirect(log_path):
        try:
            if not hasattr(ort, "ModelCompiler"):
                res["error_kind"] = "no-compile-api"
                res["error"] = f"onnxruntime {ort.__version__} has no ModelCompiler (ORT >= 1.22)"
                return res
            so = _ep_session_options(ep, item, res)
            if so is None:
                return res
            _inject_fault(item.get("fault"))
            t0 = time.perf_counter()
            kwargs: dict[str, Any] = {"embed_compiled_data_into_model": bool(item.get("embed"))}
            level = item.get("optimization")
            if level:
                # ModelCompiler optimizes nothing by default (ORT_DISABLE_ALL); "basic" folds
                # constants first, so weights computed by ConstantOfShape become initializers
                kwargs["graph_optimization_level"] = getattr(
                    ort.GraphOptimizationLevel, _OPT_LEVELS[level]
                )
            compiler = ort.ModelCompiler(so, item["model_path"], **kwargs)
            compiler.compile_to_file(item["output_path"])
            res["compile_s"] = round(time.perf_counter() - t0, 6)
            res["output_path"] = item["output_path"]
            res["ok"] = os.path.exists(item["output_path"])
            if not res["ok"]:
                res["error_kind"] = "no-output"
                res["error"] = "the EP produced no compiled model"
        except Exception as exc:
            res["error"] = f"{type(exc).__name__}: {exc}"
            res["error_kind"] = res.get("error_kind", "compile")
    if not res["ok"]:
        res["log_tail"] = _tail(_read(log_path), int(item.get("log_lines", 40)))
    return res


def _compat_api(name: str) -> Any:
    ort = _ort()
    fn = getattr(ort, name, None)
    if fn is None:
        from onnxruntime.capi import onnxruntime_pybind11_state as state

        fn = getattr(state, name, None)
    return fn


def run_compat(ep: dict[str, Any], item: dict[str, Any], log_path: str) -> dict[str, Any]:
    """ORT's compatibility check of a compiled model against this EP's devices.

    Reports ``info`` (the model's compatibility string or None), ``status``
    (an ``OrtCompiledModelCompatibility`` name) or ``check_error`` and the
    device types it was checked against.
    """
    provider = ep.get("provider") or "CPUExecutionProvider"
    res: dict[str, Any] = {"ok": False, "provider": provider}
    with _Redirect(log_path):
        try:
            get_info = _compat_api("get_compatibility_info_from_model")
            check = _compat_api("get_model_compatibility_for_ep_devices")
            if get_info is None or check is None:
                res["error_kind"] = "no-compat-api"
                res["error"] = (
                    f"onnxruntime {_ort().__version__} has no compatibility API "
                    "(get_compatibility_info_from_model needs ORT >= 1.24)"
                )
                return res
            _ensure_plugins(provider, ep.get("plugin_package"))
            _inject_fault(item.get("fault"))
            info = get_info(item["model_path"], provider)
            res["info"] = info
            devices = _devices_for(provider)
            res["devices"] = [_device_info(d) for d in devices]
            res["ok"] = True
            if not info:
                return res
            if not devices:
                res["check_error"] = f"{provider} exposes no device in {sys.executable}"
                return res
            try:
                status = check(devices, info)
                res["status"] = str(getattr(status, "name", status)).rsplit(".", 1)[-1]
            except Exception as exc:
                res["check_error"] = f"{type(exc).__name__}: {exc}"
        except Exception as exc:
            res["ok"] = False
            res["error"] = f"{type(exc).__name__}: {exc}"
            res["error_kind"] = "compat"
    return res


def _discard_side_file(output_path: str, name: str) -> None:
    """Point the side file of folded weights at the null device, so that ORT's writes of
    them cost nothing (hundreds of MB for a model whose weights come from
    ConstantOfShape). ORT names it relative to the optimized model's folder, a private
    one; where no link can be made, ORT writes a real file, as without this."""
    if os.name != "posix":
        return
    with contextlib.suppress(OSError):
        os.symlink(os.devnull, os.path.join(os.path.dirname(output_path), name))


def run_optimize(item: dict[str, Any], log_path: str) -> dict[str, Any]:
    """Write the optimized graph with the CPU EP only.

    ``optimized_model_filepath`` with a compiling EP fails ("Unable to serialize
    model as it contains compiled nodes"), so this request never takes an EP.
    """
    ort = _ort()
    res: dict[str, Any] = {"ok": False, "provider": "CPUExecutionProvider"}
    model: str | bytes = item["model_path"]
    with _Redirect(log_path):
        try:
            so = _session_options(dict(item, log_severity=item.get("log_severity", 2)), True)
            so.optimized_model_filepath = item["output_path"]
            _read_external_data_from(so, item)
            if item.get("external_initializers"):
                # large folded weights go to a side file the caller never reads: the graph
                # is all it needs, and the weights would cost it hundreds of MB
                so.add_session_config_entry(
                    "session.optimized_model_external_initializers_file_name",
                    str(item["external_initializers"]),
                )
                so.add_session_config_entry(
                    "session.optimized_model_external_initializers_min_size_in_bytes",
                    str(int(item.get("external_min_bytes", 1024))),
                )
                if item.get("discard_external"):
                    _discard_side_file(item["output_path"], str(item["external_initializers"]))
            _inject_fault(item.get("fault"))
            t0 = time.perf_counter()
            if item.get("external_data_folder"):
                # the folder option is read for a model given as bytes (onnxruntime 1.24
                # ignores it for a path, and refuses a link to the data beside the copy)
                with open(item["model_path"], "rb") as fh:
                    model = fh.read()
            ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
            res["create_s"] = round(time.perf_counter() - t0, 6)
            res["ok"] = os.path.exists(item["output_path"])
            res["output_path"] = item["output_path"]
            if not res["ok"]:
                res["error"] = "ORT wrote no optimized model"
        except Exception as exc:
            res["error"] = f"{type(exc).__name__}: {exc}"
            res["error_kind"] = "session"
            probe = item.get("probe_disabled")
            if isinstance(probe, str) and re.search(probe, str(exc)):
                res["disabled_loads"] = _disabled_loads(item, model)
    if not res["ok"]:
        res["log_tail"] = _tail(_read(log_path), int(item.get("log_lines", 40)))
    return res


def _read_external_data_from(so: Any, item: dict[str, Any]) -> None:
    """Have ORT read the model's external data from the model's own folder (the copy ORT
    is given lies elsewhere); the caller checked every location."""
    if item.get("external_data_folder"):
        so.add_session_config_entry(
            "session.model_external_initializers_file_folder_path",
            str(item["external_data_folder"]),
        )


def _disabled_loads(item: dict[str, Any], model: str | bytes) -> bool:
    """Whether a CPU session with every optimization disabled loads the model that the
    basic-level session refused: an error constant folding reveals fails the default level
    only, a declaration that contradicts inference fails every level. Asked only when the
    error is one the caller names (its type or shape inference), so a graph ORT accepts,
    or refuses for another reason, costs no second session."""
    ort = _ort()
    so = _session_options(dict(item, optimization="disabled", log_severity=3))
    _read_external_data_from(so, item)
    try:
        ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    except Exception:
        return False
    return True


def main() -> int:
    global _proto_out
    # Keep the real stdout for the protocol; everything else written to fd 1
    # (EP banners, ORT's Python fallback prints) goes to fd 2 until an item
    # redirects both to its log file.
    _proto_out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    if "--preload" in sys.argv[1:] or "--serve" in sys.argv[1:]:
        # started ahead of its request (the parent is still loading the model): spend
        # the wait importing onnxruntime; a failure is reported with the request
        with contextlib.suppress(Exception):
            _ort()
    if "--serve" in sys.argv[1:]:
        code = 0
        for line in sys.stdin:
            if line.strip():
                code = serve_one(line)
        return code
    return serve_one(sys.stdin.read())


def serve_one(raw: str) -> int:
    """Answer one request (its ``hello``, items and ``done``); the exit status it implies."""
    try:
        request = json.loads(raw)
    except ValueError as exc:
        emit("fatal", error=f"bad request JSON: {exc}")
        return 2
    if request.get("protocol") != PROTOCOL:
        emit(
            "fatal",
            error=f"unsupported protocol {request.get('protocol')!r} (worker speaks {PROTOCOL})",
        )
        return 2
    # the level-1 graph (optimize items) is on the critical path of a static lint and
    # needs no package list; sessions report it (confirm's results carry it)
    kinds = {item.get("kind", "session") for item in request.get("items") or []}
    emit("hello", protocol=PROTOCOL, pid=os.getpid(), versions=versions(kinds != {"optimize"}))
    log_dir = request.get("log_dir") or tempfile.mkdtemp(prefix="onnxlint-worker-")
    ep = request.get("ep") or {}
    for index, item in enumerate(request.get("items") or []):
        log_path = os.path.join(log_dir, f"item-{os.getpid()}-{index}.log")
        emit("start", index=index, id=item.get("id"), log_path=log_path)
        kind = item.get("kind", "session")
        try:
            if kind == "session":
                res = run_session(ep, item, log_path)
            elif kind == "optimize":
                res = run_optimize(item, log_path)
            elif kind == "compile":
                res = run_compile(ep, item, log_path)
            elif kind == "compat":
                res = run_compat(ep, item, log_path)
            elif kind == "discover":
                _inject_fault(item.get("fault"))
                res = dict(discover(), ok=True)
            elif kind == "versions":
                res = {"ok": True, "versions": versions()}
            elif kind == "limits":
                res = {"ok": True, "limits": limits()}
            else:
                res = {
                    "ok": False,
                    "error": f"unknown item kind {kind!r}",
                    "error_kind": "protocol",
                }
        except Exception as exc:  # never let one item end the batch
            res = {
                "ok": False,
                "error": f"{type(exc).__name__}: {exc}",
                "error_kind": "worker",
                "traceback": traceback.format_exc(limit=5),
            }
        if not item.get("keep_log") and os.path.exists(log_path):
            with contextlib.suppress(OSError):
                os.unlink(log_path)
        emit("result", index=index, id=item.get("id"), **res)
    emit("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
