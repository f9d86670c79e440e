"""``python -m benchmarks.accuracy``: onnxlint's prediction against real sessions on the real-world corpus.

The ground truth is committed (``benchmarks/realworld/truth/*.json``, recorded by
``benchmarks.realworld.truth`` with real ORT sessions); the models are not. Give the
folder the corpus was built into with ``--models DIR`` or ``$ONNXLINT_CORPUS_DIR``
(``benchmarks.realworld.build``); models missing there are skipped, and a model whose
SHA-256 differs from its truth file is skipped too (the truth is about another graph).

For every model, target (``cpu``, ``qnn``, ``qnn-fixed``: QNN with the named dims
fixed, ``openvino``) and session level (``disabled``, ``default``) it lints the model
for that one EP (``onnxlint.lint``, with ``assume_dims`` for ``qnn-fixed``), takes the
partition prediction for ``[EP, CPU]`` at the matching graph level (the exported graph
for ``disabled``, ORT's level-1 graph for ``default``) and reports:

- **node agreement**: nodes whose predicted EP is the EP ORT put them on, over the
  nodes both sides have (ORT's report normalised as ``--confirm`` does);
- **partition count exact**: models whose predicted number of accelerator partitions
  is ORT's;
- **failures predicted**: real session failures (error, crash, timeout) on models the
  lint gave an error-level finding for that EP;
- **false failure flags**: models whose sessions load at both levels, with such a
  finding anyway;
- **disagreement classes**: every node that disagrees, counted by direction
  (predicted -> real), op, domain, input dtypes, constness of its inputs and QNN's
  own reason for refusing it.

Results go to ``benchmarks/results/accuracy-realworld.{json,md}`` (``--output`` to
change). ``--only`` keeps models whose name contains one of the given substrings.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.realworld.truth import (
    ENV_DIR,
    LEVELS,
    MANIFEST,
    SHORT,
    TARGET_EP,
    TARGETS,
    TRUTH,
    sha256_file,
)
from onnxlint.fsutil import atomic_write_text

RESULTS = Path(__file__).resolve().parent / "results"
REPO = Path(__file__).resolve().parent.parent
#: the replay subset: corpus models small enough to commit (a few KB each) ...
REPLAY_DIR = REPO / "tests" / "data" / "realworld"
#: ... plus the sample models onnxruntime's own wheel ships (``onnxruntime/datasets``)
REPLAY_FROM_ORT = "whl-onnxruntime-"
REPLAY_FLOOR = RESULTS / "accuracy-replay.json"
#: the figures the replay compares with its committed floor
FLOOR_KEYS = ("nodes_agree", "partition_exact", "failures_predicted", "false_failure_flags")
PROVIDER = {short: provider for provider, short in SHORT.items()}
GRAPH_LEVEL = {"disabled": "exported", "default": "optimized"}
CLASS_KEYS = ("direction", "op", "domain", "dtypes", "constness", "qnn_reason")


@dataclass
class Row:
    """One model on one target at one level."""

    model: str
    family: str
    target: str
    level: str
    status: str
    compared: int = 0
    agree: int = 0
    real_partitions: int | None = None
    predicted_partitions: int | None = None
    error: str | None = None
    error_findings: list[str] = field(default_factory=list)
    disagreements: list[dict[str, str]] = field(default_factory=list)
    note: str | None = None
    create_s: float | None = None  # the real session's creation time

    def to_json(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if v not in (None, [], "")}
        out["status"] = self.status
        return out


def _short_reason(reason: str) -> str:
    """QNN's reason without the node-specific parts (names, numbers, shapes)."""
    text = re.sub(r"\[[^\]]*\]", "[..]", reason)
    text = re.sub(r"'[^']*'", "'..'", text)
    text = re.sub(r"\d+", "N", text)
    return " ".join(text.split())[:120]


def _sig(values: Iterable[Any]) -> str:
    return ",".join("-" if v is None else str(v) for v in values)


def _constness(facts: Any) -> str:
    n = len(getattr(facts, "input_dtypes", ()) or ())
    const = set(getattr(facts, "constant_inputs", ()) or ())
    absent = set(getattr(facts, "absent_inputs", ()) or ())
    return "".join("_" if i in absent else ("c" if i in const else "v") for i in range(n))


def _lint(path: Path, ep: str, dims: dict[str, int]) -> tuple[Any, Any]:
    """(report, lint context) of one lint of ``path`` for ``ep`` alone."""
    from onnxlint import engine
    from onnxlint.config import Config

    captured: list[Any] = []

    def keep(ctx: Any, report: Any) -> None:
        captured.append(ctx)

    cfg = Config(eps=(ep,), assume_dims=dict(dims))
    report = engine.lint(str(path), eps=[ep], config=cfg, what_if=False, observe=keep)
    return report, (captured[0] if captured else None)


def _predict(ctx: Any, ep: str, graph_level: str) -> tuple[Any, Any] | None:
    """(plan, level assignment) for ``[ep, CPU]`` at ``graph_level``; None when unavailable."""
    from onnxlint.analyses.assignment import Assignment, assign_level
    from onnxlint.analyses.partition import plan_level

    profile = next((p for p in ctx.eps if p.ep == ep), None)
    if profile is None:
        return None
    shared = ctx.analysis(Assignment).level(graph_level)
    if shared is None:
        return None
    la = assign_level(shared.graph, [profile])
    return plan_level(la, ctx.config.assume_dims), la


def _real(truth: dict[str, Any], session: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    """ORT's reported nodes (in its order) and QNN's refusals of one recorded session."""
    from onnxlint.runtime.results import AssignedNode, NodeVerdict

    table = truth.get("node_table", [])
    codes = truth.get("ep_codes", {})
    nodes = []
    for i, code in zip(session.get("nodes", []), session.get("eps", ""), strict=False):
        name, op, dom = table[i]
        short = codes.get(code, code)
        nodes.append(AssignedNode(name, op, dom, PROVIDER.get(short, short)))
    verdicts = [
        NodeVerdict(op_type=op, name=name, index=-1, passed=False, reason=reason or None)
        for op, name, reason in session.get("refusals", [])
    ]
    return nodes, verdicts


def _error_findings(report: Any, profile_ids: set[str]) -> list[str]:
    from onnxlint.diagnostics import Severity

    return sorted(
        {
            d.code
            for d in report.diagnostics
            if d.severity >= Severity.ERROR and (d.ep is None or d.ep in profile_ids)
        }
    )


def evaluate_model(
    truth: dict[str, Any], path: Path, family: str, targets: Iterable[str]
) -> list[Row]:
    """Every row of one model (the lints run here)."""
    from onnxlint.confirm.diff import reasons_by_path, reported_to_paths
    from onnxlint.runtime.results import SessionResult

    rows: list[Row] = []
    sessions = truth["sessions"]
    for target in targets:
        if f"{target}/disabled" not in sessions:
            continue
        ep = PROVIDER[TARGET_EP[target]]
        dims = truth.get("fixed_dims", {}) if target == "qnn-fixed" else {}
        try:
            report, ctx = _lint(path, TARGET_EP[target], dims)
        except Exception as exc:  # the benchmark reports a crashing lint, it does not stop
            for level in LEVELS:
                rows.append(
                    Row(truth["model"], family, target, level, "lint-crash", note=repr(exc)[:300])
                )
            continue
        # the CPU EP is the fallback of every target's list: a node it cannot run either
        # (OL508, which names the CPU EP) fails this target's session too
        ids = {p.id for p in (ctx.eps if ctx else [])} | {ep, TARGET_EP[target], PROVIDER["cpu"]}
        errors = _error_findings(report, ids)
        for level in LEVELS:
            s = sessions.get(f"{target}/{level}")
            if s is None:
                continue
            row = Row(truth["model"], family, target, level, s["status"], error_findings=errors)
            row.create_s = s.get("create_s")
            rows.append(row)
            if s["status"] != "ok":
                row.error = s.get("error")
                continue
            got = _predict(ctx, ep, GRAPH_LEVEL[level]) if ctx is not None else None
            if got is None:
                row.note = NO_PREDICTION
                continue
            plan, la = got
            index = plan.graph.index
            nodes, verdicts = _real(truth, s)
            actual, _inserted, _unreported = reported_to_paths(
                index, nodes, plan.graph.inlined_late, ctx.index
            )
            res = SessionResult(request_id="", status="ok", provider=ep, verdicts=verdicts)
            reasons = reasons_by_path(index, res)
            for path_, real_ep in actual.items():
                pred_ep = plan.node_ep.get(path_)
                if pred_ep is None:
                    continue
                row.compared += 1
                if pred_ep == real_ep:
                    row.agree += 1
                    continue
                na = la.get(path_)
                facts = na.facts if na is not None else None
                verdict = na.verdict_for(ep) if na is not None else None
                why = reasons.get(path_) or []
                row.disagreements.append(
                    {
                        "node": path_,
                        "direction": f"{_ep(pred_ep)}->{_ep(real_ep)}",
                        "op": facts.op_type if facts else "?",
                        "domain": facts.domain if facts else "?",
                        "dtypes": _sig(facts.input_dtypes) if facts else "?",
                        "constness": _constness(facts) if facts else "?",
                        "qnn_reason": _short_reason(why[0]) if why else "",
                        "predicted_reason": (verdict.reason[:160] if verdict else ""),
                    }
                )
            if ep != PROVIDER["cpu"]:
                row.real_partitions = len(s.get("partitions", {}).get(TARGET_EP[target], []))
                row.predicted_partitions = len(plan.partitions_on(ep))
    return rows


def _ep(provider: str) -> str:
    return {v: k for k, v in PROVIDER.items()}.get(provider, provider)


# ---------------------------------------------------------------------------
# Summary


#: a row's note when the lint made no prediction at the session's graph level
NO_PREDICTION = "no prediction at this graph level"


def summarise(rows: list[Row]) -> dict[str, Any]:
    """Per target/level: the four figures, and the disagreement classes."""
    groups: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        groups[f"{r.target}/{r.level}"].append(r)
    # failures and false flags are about a model on a target (both levels together)
    per_model: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for r in rows:
        per_model[(r.target, r.model)].append(r)
    out: dict[str, Any] = {}
    for key in sorted(groups, key=lambda k: (TARGETS.index(k.split("/")[0]), k)):
        rs = groups[key]
        ok = [r for r in rs if r.status == "ok" and r.compared]
        failed = [r for r in rs if r.status not in ("ok", "lint-crash")]
        target = key.split("/")[0]
        loads = [
            m
            for (t, m), mrs in per_model.items()
            if t == target and all(r.status == "ok" for r in mrs)
        ]
        flagged = [
            m
            for (t, m), mrs in per_model.items()
            if t == target and m in loads and mrs[0].error_findings
        ]
        flag_codes = Counter(
            c
            for (t, m), mrs in per_model.items()
            if t == target and m in flagged
            for c in mrs[0].error_findings
        )
        failure_kinds = Counter(_failure_kind(r.error or r.status) for r in failed)
        nodes = sum(r.compared for r in ok)
        agree = sum(r.agree for r in ok)
        with_parts = [r for r in ok if r.real_partitions is not None]
        classes: dict[str, Counter[str]] = {k: Counter() for k in CLASS_KEYS}
        full: Counter[str] = Counter()
        for r in ok:
            for d in r.disagreements:
                for k in CLASS_KEYS:
                    if d[k]:
                        classes[k][d[k]] += 1
                full[" | ".join(d[k] or "-" for k in CLASS_KEYS)] += 1
        by_family: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for r in ok:
            by_family[r.family][0] += r.agree
            by_family[r.family][1] += r.compared
        out[key] = {
            "models": len({r.model for r in rs}),
            "by_family": {
                fam: {"nodes": n, "node_agreement_pct": round(100.0 * a / n, 2)}
                for fam, (a, n) in sorted(by_family.items())
                if n
            },
            "compared_models": len(ok),
            "nodes": nodes,
            "nodes_agree": agree,
            "node_agreement_pct": round(100.0 * agree / nodes, 2) if nodes else None,
            "partition_exact": sum(
                1 for r in with_parts if r.real_partitions == r.predicted_partitions
            ),
            "partition_models": len(with_parts),
            "failures": len(failed),
            "failures_predicted": sum(1 for r in failed if r.error_findings),
            "loading_models": len(loads),
            "false_failure_flags": len(flagged),
            "false_flag_codes": dict(flag_codes.most_common()),
            "failure_kinds": dict(failure_kinds.most_common()),
            "lint_crashes": sum(1 for r in rs if r.status == "lint-crash"),
            # a session that loaded and a lint that gave no prediction at its level (ORT's
            # level-1 graph not built): no node of it is compared, so it is counted here
            "no_prediction": sum(1 for r in rs if r.status == "ok" and r.note == NO_PREDICTION),
            "create_s_median": _median([r.create_s for r in rs if r.create_s is not None]),
            "classes": {k: dict(c.most_common(15)) for k, c in classes.items()},
            "top_classes": dict(full.most_common(25)),
        }
    return out


def _median(values: list[float]) -> float | None:
    import statistics

    return round(statistics.median(values), 4) if values else None


def _failure_kind(error: str) -> str:
    """A session error reduced to its class: the cause, without names and numbers.

    OpenVINO nests its causes (``Exception from file.cpp:N: ...`` and frontend
    ``GeneralFailure:`` blocks): the innermost one is kept, with the transformation
    pass and the op it was on when it names them.
    """
    text = error
    if "[OpenVINO-EP]" in text:
        text = text[text.index("[OpenVINO-EP]") + len("[OpenVINO-EP]") :]
        where = re.search(r"\[(\w+)\] END: node: (\S+)", text)
        text = text.split("CALLBACK HAS THROWN:")[-1]
        text = re.split(r"Exception from \S+:\d+:|GeneralFailure:", text)[-1]
        if where:
            text = f"{where.group(1)} on {where.group(2)}: {text}"
    else:
        text = re.split(r"\b[A-Z_]+ : ", text)[-1]
    # generated graph names say nothing about the cause
    text = re.sub(r"\S*(ExecutionProvider_|EP-subgraph_)\S*", "<graph>", text)
    return _short_reason(text)[:120]


def format_table(summary: dict[str, Any]) -> str:
    lines = [
        "| target, level | models | node agreement | partition count exact | "
        "real failures flagged by an error | false failure flags |",
        "|---|---|---|---|---|---|",
    ]
    for key, g in summary.items():
        pct = "-" if g["node_agreement_pct"] is None else f"{g['node_agreement_pct']:.1f} %"
        parts = f"{g['partition_exact']}/{g['partition_models']}" if g["partition_models"] else "-"
        fails = f"{g['failures_predicted']}/{g['failures']}" if g["failures"] else "-"
        flags = f"{g['false_failure_flags']}/{g['loading_models']}"
        models = str(g["models"])
        if g.get("no_prediction"):
            models += f" ({g['no_prediction']} without a prediction)"
        lines.append(
            f"| {key} | {models} | {pct} ({g['nodes_agree']}/{g['nodes']}) | {parts} | "
            f"{fails} | {flags} |"
        )
    return "\n".join(lines)


def format_classes(summary: dict[str, Any], top: int = 8) -> str:
    lines = []
    for key, g in summary.items():
        if g["false_flag_codes"]:
            lines.append(f"\n{key}: codes of the false failure flags: {g['false_flag_codes']}")
        for kind, n in g["failure_kinds"].items():
            lines.append(f"{key}: session failure x{n}: {kind}")
        if not g["top_classes"]:
            continue
        lines.append(f"\n{key}: top disagreement classes ({' | '.join(CLASS_KEYS)})")
        for cls, n in list(g["top_classes"].items())[:top]:
            lines.append(f"  {n:>5}  {cls}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------


def load_truth(only: list[str] | None = None) -> list[dict[str, Any]]:
    out = []
    for f in sorted(TRUTH.glob("*.json")):
        doc = json.loads(f.read_text())
        if only and not any(w in doc["model"] for w in only):
            continue
        out.append(doc)
    return out


def families() -> dict[str, str]:
    if not MANIFEST.exists():
        return {}
    return {m["name"]: m["family"] for m in json.loads(MANIFEST.read_text())["models"]}


def run(
    model_dir: Path, only: list[str] | None = None, targets: Iterable[str] = TARGETS
) -> tuple[list[Row], list[str]]:
    """Rows for every truth file whose model is present and unchanged; skipped names."""
    fam = families()
    rows: list[Row] = []
    skipped: list[str] = []
    for truth in load_truth(only):
        path = model_dir / f"{truth['model']}.onnx"
        if not path.exists() or sha256_file(path) != truth["sha256"]:
            skipped.append(truth["model"])
            continue
        rows += evaluate_model(truth, path, fam.get(truth["model"], "?"), targets)
        print(f"  {truth['model']}", file=sys.stderr, flush=True)
    return rows, skipped


def replay_models() -> dict[str, Path]:
    """Model name -> file for the replay subset, wherever the file is on this machine."""
    out = {p.stem: p for p in sorted(REPLAY_DIR.glob("*.onnx"))}
    try:
        import onnxruntime
    except ImportError:
        return out
    base = Path(onnxruntime.__file__).parent / "datasets"
    for p in sorted(base.glob("*.onnx")):
        out[REPLAY_FROM_ORT + p.stem.replace("_", "-").lower()] = p
    return out


def replay() -> tuple[dict[str, Any], list[str]]:
    """The summary of the replay subset (models whose file matches its truth), and its names."""
    fam = families()
    files = replay_models()
    rows: list[Row] = []
    names: list[str] = []
    for truth in load_truth(list(files)):
        path = files.get(truth["model"])
        if path is None or sha256_file(path) != truth["sha256"]:
            continue
        names.append(truth["model"])
        rows += evaluate_model(truth, path, fam.get(truth["model"], "?"), TARGETS)
    return summarise(rows), names


def floor_of(summary: dict[str, Any]) -> dict[str, dict[str, int]]:
    """The figures of ``summary`` the replay test holds the prediction to."""
    return {
        key: {k: g[k] for k in (*FLOOR_KEYS, "nodes", "failures", "loading_models")}
        for key, g in summary.items()
    }


def versions(truths: list[dict[str, Any]]) -> dict[str, Any]:
    from importlib import metadata

    import onnxlint

    seen: dict[str, Any] = {}
    for t in truths:
        for ep, v in t.get("versions", {}).items():
            seen.setdefault(ep, v)
    return {
        "onnxlint": onnxlint.__version__,
        "onnx": metadata.version("onnx"),
        "sessions": seen,
    }


def _rows_per_line(doc: dict[str, Any]) -> str:
    """JSON with the summary indented and one row per line (a re-run is a readable diff)."""
    head = {k: v for k, v in doc.items() if k != "rows"}
    text = json.dumps(head, indent=1)[:-2]
    rows = ",\n".join(json.dumps(r, separators=(",", ":")) for r in doc["rows"])
    return f'{text},\n "rows": [\n{rows}\n ]\n}}\n'


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=os.environ.get(ENV_DIR), help=f"default ${ENV_DIR}")
    ap.add_argument("--only", help="comma-separated substrings of model names")
    ap.add_argument("--target", action="append", choices=TARGETS)
    ap.add_argument("--output", default=str(RESULTS / "accuracy-realworld"), help="path stem")
    ap.add_argument("--no-write", action="store_true", help="print only")
    ap.add_argument(
        "--write-replay-floor",
        action="store_true",
        help="measure the replay subset (committed models, no --models needed) and write "
        "the floor the replay test holds the prediction to",
    )
    args = ap.parse_args(argv)
    if args.write_replay_floor:
        summary, names = replay()
        print(format_table(summary))
        before = (
            json.loads(REPLAY_FLOOR.read_text(encoding="utf-8")) if REPLAY_FLOOR.exists() else {}
        )
        missing = sorted(set(before.get("models", [])) - set(names))
        if not names or missing:
            # a floor measured on fewer models would hide every regression on the others
            print(f"not written: replay models missing or changed: {missing or 'all'}")
            return 1
        doc = {"models": names, "floor": floor_of(summary)}
        atomic_write_text(REPLAY_FLOOR, json.dumps(doc, indent=1, sort_keys=True) + "\n")
        return 0
    if not args.models:
        ap.error(f"give --models or set {ENV_DIR}")
    only = [w for w in (args.only or "").split(",") if w]
    t0 = time.monotonic()
    rows, skipped = run(Path(args.models), only, args.target or TARGETS)
    summary = summarise(rows)
    table = format_table(summary)
    print(table)
    print(format_classes(summary))
    if skipped:
        print(f"\nskipped (missing or changed): {len(skipped)}", file=sys.stderr)
    print(
        f"\n{len({r.model for r in rows})} models in {time.monotonic() - t0:.0f}s", file=sys.stderr
    )
    if not args.no_write:
        stem = Path(args.output)
        doc = {
            "corpus": "real-world corpus (benchmarks/realworld)",
            "versions": versions(load_truth(only)),
            "models": len({r.model for r in rows}),
            "skipped": skipped,
            "summary": summary,
            "rows": [r.to_json() for r in rows],
        }
        atomic_write_text(stem.with_suffix(".json"), _rows_per_line(doc))
        md = (
            f"# Accuracy on the real-world corpus\n\n{len({r.model for r in rows})} models; "
            f"versions: `{json.dumps(doc['versions']['sessions'], sort_keys=True)}`\n\n"
            f"{table}\n\n```\n{format_classes(summary)}\n```\n"
        )
        atomic_write_text(stem.with_suffix(".md"), md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
