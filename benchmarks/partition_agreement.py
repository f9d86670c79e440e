"""Measure how well onnxlint's partition prediction agrees with real ONNX Runtime sessions.

For every model of the corpus (the onnx package's light models, hand-built
transformer-style blocks, one node test case per operator), every EP asked
for (QNN HTP simulator, OpenVINO CPU) and every graph level (``disabled``:
the graph as exported; ``basic``: after ORT's level-1 optimizations) this
script

1. creates a real session in a worker process (the EP's own interpreter:
   ``.venv-openvino`` for OpenVINO) with
   ``session.record_ep_graph_assignment_info`` and reads
   ``get_provider_graph_assignment_info()``: one entry per partition;
2. predicts the same with :mod:`onnxlint.analyses.partition`;
3. compares the EP of every top-level node (Constant nodes excluded: ORT never
   reports them) and the number of accelerator partitions.

Usage::

    nice .venv/bin/python benchmarks/partition_agreement.py --ep qnn --ep openvino \
        --node-cases 1 -o agreement.json

Prints a summary table; ``-o`` writes every disagreement as JSON.
The worker mode (``--worker JOBS``) imports only onnxruntime, so it runs in
an EP venv that has no onnxlint.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
EPS = {
    "qnn": {
        "provider": "QNNExecutionProvider",
        "options": {"backend_type": "htp", "soc_model": "60"},
        "plugin": "onnxruntime_qnn",
        "runner": None,
    },
    "openvino": {
        "provider": "OpenVINOExecutionProvider",
        "options": {"device_type": "CPU"},
        "plugin": None,
        "runner": ".venv-openvino/bin/python",
    },
}
LEVELS = {"disabled": "exported", "basic": "optimized"}


# ---------------------------------------------------------------------------
# Worker (runs inside the EP's interpreter; imports nothing of onnxlint)


def worker(jobs_path: str) -> int:
    import onnxruntime as ort

    jobs = json.loads(Path(jobs_path).read_text())
    for job in jobs:
        out: dict[str, Any] = {"id": job["id"], "ok": False}
        try:
            so = ort.SessionOptions()
            so.log_severity_level = 3
            so.graph_optimization_level = {
                "disabled": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
                "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
            }[job["level"]]
            so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
            for name, value in (job.get("free_dims") or {}).items():
                so.add_free_dimension_override_by_name(name, int(value))
            provider = job["provider"]
            providers = None
            if job.get("plugin"):
                mod = __import__(job["plugin"])
                # registering twice in one process raises; the first registration holds
                with contextlib.suppress(Exception):
                    ort.register_execution_provider_library(provider, mod.get_library_path())
                devs = [d for d in ort.get_ep_devices() if d.ep_name == provider]
                so.add_provider_for_devices(devs, job["options"])
            else:
                providers = [(provider, job["options"]), "CPUExecutionProvider"]
            sess = ort.InferenceSession(job["path"], so, providers=providers)
            parts = []
            for sg in sess.get_provider_graph_assignment_info():
                parts.append(
                    {
                        "ep": sg.ep_name,
                        "nodes": [
                            {"name": n.name, "op_type": n.op_type, "domain": n.domain}
                            for n in sg.get_nodes()
                        ],
                    }
                )
            out.update(ok=True, partitions=parts)
        except Exception as exc:
            # the temporary folder is machine-specific: keep only the file name
            text = str(exc).replace(str(Path(job["path"]).parent) + "/", "")
            out["error"] = f"{type(exc).__name__}: {text[:500]}"
        print(json.dumps(out), flush=True)
    return 0


def run_real(
    jobs: list[dict[str, Any]], runner: str, timeout_s: float
) -> dict[str, dict[str, Any]]:
    """Run jobs in worker processes; a crash or hang costs only the job it was on."""
    results: dict[str, dict[str, Any]] = {}
    pending = list(jobs)
    while pending:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
            json.dump(pending, fh)
            jobs_file = fh.name
        proc = subprocess.Popen(
            [runner, str(Path(__file__).resolve()), "--worker", jobs_file],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        )
        assert proc.stdout is not None
        done = 0
        deadline = time.monotonic() + timeout_s
        import selectors

        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not sel.select(timeout=remaining):
                proc.kill()
                break
            line = proc.stdout.readline()
            if not line:
                break
            try:
                r = json.loads(line)
            except ValueError:
                continue
            results[r["id"]] = r
            done += 1
            deadline = time.monotonic() + timeout_s
        proc.wait()
        os.unlink(jobs_file)
        if done < len(pending):
            crashed = pending[done]
            results[crashed["id"]] = {"id": crashed["id"], "ok": False, "error": "worker crashed"}
            pending = pending[done + 1 :]
        else:
            pending = []
    return results


# ---------------------------------------------------------------------------
# Corpus


def light_models() -> list[tuple[str, Any]]:
    import onnx

    base = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
    return [(p.stem, onnx.load(str(p))) for p in sorted(base.glob("*.onnx"))]


def node_cases(per_op: int) -> list[tuple[str, Any]]:
    import warnings

    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases()
    taken: dict[str, int] = defaultdict(int)
    out = []
    for c in cases:
        if c.model is None:
            continue
        op = c.model.graph.node[0].op_type if c.model.graph.node else ""
        if taken[op] >= per_op:
            continue
        taken[op] += 1
        out.append((c.name, c.model))
    return out


def transformer_models() -> list[tuple[str, Any]]:
    """Small encoder/decoder blocks in the shapes exporters produce (static and dynamic)."""
    from partition_models import transformer_blocks  # type: ignore[import-not-found]

    return transformer_blocks()


# ---------------------------------------------------------------------------
# Prediction and comparison


def predict(model: Any, ep: str) -> dict[str, Any]:
    from onnxlint.analyses.level_graph import EXPORTED, OPTIMIZED
    from onnxlint.analyses.partition import Partitions
    from onnxlint.config import Config
    from onnxlint.context import LintContext
    from onnxlint.engine import resolve_eps
    from onnxlint.index import ModelIndex
    from onnxlint.loader import load

    cfg = Config()
    loaded = load(model.SerializeToString(), cfg.limits)
    if loaded.model is None:
        return {}
    ctx = LintContext(
        loaded=loaded, index=ModelIndex(loaded.model), config=cfg, eps=resolve_eps([ep], cfg)
    )
    parts = ctx.analysis(Partitions)
    return {"disabled": parts.plan(EXPORTED), "basic": parts.plan(OPTIMIZED)}


def compare(plan: Any, real: dict[str, Any], provider: str) -> dict[str, Any]:
    from onnxlint.runtime.normalise import SourceNode, match_assignment
    from onnxlint.runtime.results import AssignedNode

    lg = plan.graph
    main = lg.index.main
    source = [
        SourceNode(n.index, n.name, n.op_type, "" if n.domain == "ai.onnx" else n.domain)
        for n in main.nodes
    ]
    reported = [
        AssignedNode(nd["name"], nd["op_type"], nd["domain"], p["ep"])
        for p in real["partitions"]
        for nd in p["nodes"]
    ]
    m = match_assignment(source, reported)
    agree = total = 0
    diffs = []
    for n in main.nodes:
        if n.op_type == "Constant" or n.index not in m.ep_by_index:
            continue
        total += 1
        want = m.ep_by_index[n.index]
        got = plan.node_ep.get(n.path)
        if got == want:
            agree += 1
        else:
            diffs.append({"node": n.path, "op": n.op_type, "real": want, "predicted": got})
    real_parts = sum(1 for p in real["partitions"] if p["ep"] == provider)
    pred_parts = len(plan.partitions_on(provider))
    return {
        "agree": agree,
        "total": total,
        "real_partitions": real_parts,
        "predicted_partitions": pred_parts,
        "diffs": diffs,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--ep", action="append", choices=sorted(EPS))
    ap.add_argument("--level", action="append", choices=sorted(LEVELS))
    ap.add_argument("--node-cases", type=int, default=1, help="node test models per operator")
    ap.add_argument("--no-light", action="store_true")
    ap.add_argument("--no-transformers", action="store_true")
    ap.add_argument("--only", help="comma-separated substrings of model names to keep")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("-o", "--output")
    ap.add_argument(
        "--merge",
        nargs="+",
        metavar="JSON",
        help="combine earlier result files (later files win per ep/model/level) and summarise",
    )
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args.worker)
    if args.merge:
        merged: dict[tuple[str, str, str], dict[str, Any]] = {}
        for f in args.merge:
            for r in json.loads(Path(f).read_text())["rows"]:
                merged[(r["ep"], r["model"], r["level"])] = r
        rows = list(merged.values())
        summary = summarise(rows)
        print(format_summary(summary))
        if args.output:
            Path(args.output).write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
        return 0

    sys.path.insert(0, str(REPO / "benchmarks"))
    corpus: list[tuple[str, str, Any]] = []
    if not args.no_light:
        corpus += [("light", n, m) for n, m in light_models()]
    if not args.no_transformers:
        corpus += [("transformer", n, m) for n, m in transformer_models()]
    if args.node_cases:
        corpus += [("node", n, m) for n, m in node_cases(args.node_cases)]
    if args.only:
        wanted = [w for w in args.only.split(",") if w]
        corpus = [c for c in corpus if any(w in c[1] for w in wanted)]
    eps = args.ep or ["qnn"]
    levels = args.level or ["disabled", "basic"]
    tmp = Path(tempfile.mkdtemp(prefix="onnxlint-agreement-"))
    rows: list[dict[str, Any]] = []
    for ep in eps:
        spec = EPS[ep]
        runner = str(REPO / spec["runner"]) if spec["runner"] else sys.executable
        if not Path(runner).exists():
            print(f"skipping {ep}: runner {runner} missing", file=sys.stderr)
            continue
        jobs = []
        for _kind, name, model in corpus:
            path = tmp / f"{name}.onnx"
            if not path.exists():
                m = type(model)()
                m.CopyFrom(model)
                # the OpenVINO wheel bundles an older ORT that caps the IR version
                m.ir_version = min(m.ir_version, 10)
                path.write_bytes(m.SerializeToString())
            for level in levels:
                jobs.append(
                    {
                        "id": f"{name}|{level}",
                        "path": str(path),
                        "level": level,
                        "provider": spec["provider"],
                        "options": spec["options"],
                        "plugin": spec["plugin"],
                    }
                )
        t0 = time.time()
        real = run_real(jobs, runner, args.timeout)
        t_real = time.time() - t0
        t0 = time.time()
        for kind, name, model in corpus:
            try:
                plans = predict(model, ep)
            except Exception as exc:  # a prediction crash is a finding of its own
                plans = {}
                print(f"predict failed on {name}: {type(exc).__name__}: {exc}", file=sys.stderr)
            for level in levels:
                r = real.get(f"{name}|{level}", {})
                row: dict[str, Any] = {"ep": ep, "kind": kind, "model": name, "level": level}
                plan = plans.get(level)
                if not r.get("ok"):
                    row["session_error"] = r.get("error", "no result")
                    row["predicted_failure"] = bool(
                        plan is not None and any(p.fails for p in plan.partitions)
                    )
                elif plan is None:
                    row["prediction_missing"] = True
                else:
                    row.update(compare(plan, r, spec["provider"]))
                rows.append(row)
        print(
            f"{ep}: {len(jobs)} sessions in {t_real:.0f}s, predictions in {time.time() - t0:.0f}s",
            file=sys.stderr,
        )
    summary = summarise(rows)
    print(format_summary(summary))
    if args.output:
        Path(args.output).write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
    return 0


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    groups: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in rows:
        for key in ((r["ep"], r["level"], r["kind"]), (r["ep"], r["level"], "all")):
            g = groups.setdefault(
                key,
                {
                    "models": 0,
                    "compared": 0,
                    "nodes": 0,
                    "nodes_agree": 0,
                    "partitions_exact": 0,
                    "session_errors": 0,
                },
            )
            g["models"] += 1
            if "session_error" in r:
                g["session_errors"] += 1
                continue
            if "total" not in r:
                continue
            g["compared"] += 1
            g["nodes"] += r["total"]
            g["nodes_agree"] += r["agree"]
            g["partitions_exact"] += int(r["real_partitions"] == r["predicted_partitions"])
    out = {}
    for (ep, level, kind), g in sorted(groups.items()):
        g["node_agreement"] = (
            round(100.0 * g["nodes_agree"] / g["nodes"], 2) if g["nodes"] else None
        )
        g["partition_exact_pct"] = (
            round(100.0 * g["partitions_exact"] / g["compared"], 2) if g["compared"] else None
        )
        out[f"{ep}/{level}/{kind}"] = g
    return out


def format_summary(summary: dict[str, Any]) -> str:
    lines = [
        f"{'ep/level/corpus':<28} {'models':>6} {'errors':>6} {'nodes':>6} {'agree%':>7} {'parts exact%':>12}"
    ]
    for key, g in summary.items():
        lines.append(
            f"{key:<28} {g['models']:>6} {g['session_errors']:>6} {g['nodes']:>6} "
            f"{g['node_agreement'] if g['node_agreement'] is not None else '-':>7} "
            f"{g['partition_exact_pct'] if g['partition_exact_pct'] is not None else '-':>12}"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
