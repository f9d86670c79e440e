"""Record the ground truth of the real-world corpus: real ONNX Runtime sessions per model.

For every model of the manifest found in the model folder, for each target

- ``cpu``: the CPU EP;
- ``qnn``: QNN HTP (the ``onnxruntime-qnn`` plugin, ``backend_type=htp``,
  ``soc_model=60``), the model as it is;
- ``qnn-fixed``: the same with every named input dim fixed
  (``add_free_dimension_override_by_name``; only models with named dims);
- ``openvino``: OpenVINO CPU, in its own interpreter (``.venv-openvino`` or
  ``[tool.onnxlint.runners]``),

at graph optimization level ``disabled`` and ``default``, one session per worker
process (:mod:`onnxlint.runtime.client`, the worker ``--confirm`` uses) with a
timeout, this records what ORT reports: the EP of every node
(``get_provider_graph_assignment_info()``, as reported: normalising is the
benchmark's job), the accelerator partitions, QNN's per-node validation reasons
from its verbose log, the session error and the session-creation time. One
compact JSON file per model goes to ``truth/``::

    nice .venv/bin/python -m benchmarks.realworld.truth --models MODELS_DIR [--only NAME,...]

``--models`` defaults to ``$ONNXLINT_CORPUS_DIR``. A model whose file does not
match the manifest's SHA-256 is skipped (its truth would describe another graph).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from onnxlint.fsutil import atomic_write_text

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
MANIFEST = HERE / "manifest.json"
TRUTH = HERE / "truth"
ENV_DIR = "ONNXLINT_CORPUS_DIR"
LEVELS = ("disabled", "default")
TARGETS = ("cpu", "qnn", "qnn-fixed", "openvino")
TARGET_EP = {"cpu": "cpu", "qnn": "qnn", "qnn-fixed": "qnn", "openvino": "openvino"}
# EP names are stored short in the truth files
SHORT = {
    "CPUExecutionProvider": "cpu",
    "QNNExecutionProvider": "qnn",
    "OpenVINOExecutionProvider": "openvino",
}
# one letter per node in a session's ``eps`` string, in ORT's reporting order
EP_CODE = {"cpu": "c", "qnn": "q", "openvino": "o"}
TIMEOUT_S = 240.0
MAX_ERROR_CHARS = 600
SCHEMA = 1

# Fixed values for named dims, by the dim's name (first match wins); anything else is 1.
DIM_VALUES: tuple[tuple[str, int], ...] = (
    (r"batch|^n$|^b$|^N$", 1),
    (r"seq|sequence|token|length|past", 8),
    (r"sample|audio|wave|time", 1600),
    (r"height|width|^h$|^w$", 32),
)


def fixed_dims(path: Path) -> dict[str, int]:
    """Named dims of the graph inputs -> the value ``qnn-fixed`` gives them."""
    import onnx

    m = onnx.load(str(path), load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    out: dict[str, int] = {}
    for inp in m.graph.input:
        if inp.name in inits or not inp.type.HasField("tensor_type"):
            continue
        for d in inp.type.tensor_type.shape.dim:
            if d.dim_param and d.dim_param not in out:
                out[d.dim_param] = next(
                    (v for pat, v in DIM_VALUES if re.search(pat, d.dim_param, re.IGNORECASE)), 1
                )
    return out


def _clean(text: str | None, model_dir: Path) -> str | None:
    """Drop this machine's folders and C++ call signatures from an error; keep it short.

    The cause comes after ORT's source location (``file.cc:N signature(...)``): for
    OpenVINO from ``[OpenVINO-EP]`` on, which is kept whole up to the limit.
    """
    if text is None:
        return None
    text = text.replace(str(model_dir.resolve()) + os.sep, "").replace(str(model_dir) + os.sep, "")
    text = re.sub(r"/tmp/[^\s'\"]*/", "", text)
    text = re.sub(r"(/[\w.+-]+)+/(site-packages|onnxruntime)/", r"\2/", text)
    if "[OpenVINO-EP]" in text:
        head = text.split("Exception during initialization:")[0]
        text = head + text[text.index("[OpenVINO-EP]") :]
    text = " ".join(text.split())
    return text[:MAX_ERROR_CHARS]


def session_record(
    res: Any, model_dir: Path, table: dict[tuple[str, str, str], int]
) -> dict[str, Any]:
    """One session's result as the truth file keeps it.

    Reported nodes are indices into the model's node table (``table``, shared by its
    sessions, grown here) with their EP as one letter of ``eps``, in ORT's order.
    """
    rec: dict[str, Any] = {"status": res.status, "create_s": res.create_s}
    if res.error:
        rec["error"] = _clean(res.error, model_dir)
        rec["error_kind"] = res.error_kind
    if res.signal is not None:
        rec["signal"] = res.signal
    if res.ok:
        rec["nodes"] = [
            table.setdefault((n.name, n.op_type, n.domain), len(table)) for n in res.assignment
        ]
        rec["eps"] = "".join(EP_CODE.get(SHORT.get(n.ep, ""), "?") for n in res.assignment)
        # accelerator partitions by size; CPU's one-node "subgraphs" only counted
        parts: dict[str, Any] = {}
        for sg in res.facts.get("ep_subgraphs") or []:
            if not isinstance(sg, dict):
                continue
            ep = SHORT.get(str(sg.get("ep")), str(sg.get("ep")))
            if ep == "cpu":
                parts["cpu"] = parts.get("cpu", 0) + 1
            else:
                parts.setdefault(ep, []).append(int(sg.get("nodes", 0)))
        rec["partitions"] = parts
        rec["source"] = res.assignment_source
        if res.fallback.any:
            rec["fallback"] = res.fallback.message or "fallback"
    refusals = sorted({(v.op_type, v.name, v.reason or "") for v in res.verdicts if not v.passed})
    if refusals:
        rec["refusals"] = [list(r) for r in refusals]
    passed = sum(1 for v in res.verdicts if v.passed)
    if res.verdicts:
        rec["validated"] = {"passed": passed, "failed": len(res.verdicts) - passed}
    return rec


def versions_of(res: Any) -> dict[str, Any]:
    v = {k: val for k, val in res.versions.items() if k not in ("executable", "python_path")}
    if isinstance(v.get("packages"), dict):
        v["packages"] = {
            k: val for k, val in v["packages"].items() if "onnxruntime" in k or "openvino" in k
        }
    return v


def record_model(
    name: str, path: Path, sha: str, targets: list[str], timeout_s: float
) -> dict[str, Any]:
    from onnxlint.runtime.client import SessionRequest, run_sessions
    from onnxlint.runtime.runners import EpSpec, resolve_runner

    dims = fixed_dims(path)
    doc: dict[str, Any] = {"schema": SCHEMA, "model": name, "sha256": sha, "sessions": {}}
    if dims:
        doc["fixed_dims"] = dims
    versions: dict[str, Any] = {}
    table: dict[tuple[str, str, str], int] = {}
    for target in targets:
        if target == "qnn-fixed" and not dims:
            continue
        spec = EpSpec.for_ep(TARGET_EP[target])
        runner = resolve_runner(spec.provider, None, root=REPO)
        for level in LEVELS:
            req = SessionRequest(
                str(path),
                id=f"{target}/{level}",
                optimization=level,
                free_dims=dims if target == "qnn-fixed" else {},
                log_severity=0 if target.startswith("qnn") else 2,
                log_lines=0,
                name_unnamed=True,
            )
            t0 = time.monotonic()
            res = run_sessions(
                [req], spec, runner=runner, timeout_s=timeout_s, max_items_per_worker=1
            )[0]
            rec = session_record(res, path.parent, table)
            rec["wall_s"] = round(time.monotonic() - t0, 2)
            doc["sessions"][f"{target}/{level}"] = rec
            if res.versions and TARGET_EP[target] not in versions:
                versions[TARGET_EP[target]] = versions_of(res)
    doc["versions"] = versions
    doc["node_table"] = [list(k) for k in sorted(table, key=table.__getitem__)]
    doc["ep_codes"] = {v: k for k, v in EP_CODE.items()}
    return doc


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=os.environ.get(ENV_DIR), help=f"default ${ENV_DIR}")
    ap.add_argument("--only", help="comma-separated substrings of model names")
    ap.add_argument("--target", action="append", choices=TARGETS)
    ap.add_argument("--timeout", type=float, default=TIMEOUT_S)
    ap.add_argument("--skip-done", action="store_true", help="keep truth files already written")
    args = ap.parse_args(argv)
    if not args.models:
        ap.error(f"give --models or set {ENV_DIR}")
    model_dir = Path(args.models)
    manifest = json.loads(MANIFEST.read_text())
    wanted = [w for w in (args.only or "").split(",") if w]
    targets = args.target or list(TARGETS)
    TRUTH.mkdir(exist_ok=True)
    for m in manifest["models"]:
        name = m["name"]
        if m.get("error") or (wanted and not any(w in name for w in wanted)):
            continue
        out = TRUTH / f"{name}.json"
        if args.skip_done and out.exists():
            continue
        path = model_dir / f"{name}.onnx"
        if not path.exists():
            print(f"missing {name}", file=sys.stderr)
            continue
        sha = sha256_file(path)
        if sha != m["sha256"]:
            print(f"skip {name}: hash differs from the manifest", file=sys.stderr)
            continue
        t0 = time.monotonic()
        doc = record_model(name, path, sha, targets, args.timeout)
        atomic_write_text(out, json.dumps(doc, separators=(",", ":"), sort_keys=True) + "\n")
        summary = " ".join(
            f"{k}={v['status']}" for k, v in doc["sessions"].items() if v["status"] != "ok"
        )
        print(f"{name}: {time.monotonic() - t0:.1f}s {summary}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
