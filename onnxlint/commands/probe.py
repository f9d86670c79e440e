"""``onnxlint probe``: measure which single-node models a real EP claims."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

NAME = "probe"
HELP = "measure a real, installed execution provider op by op (creates real ORT sessions)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ep", required=True, help="execution provider: cpu, qnn, openvino, ...")
    parser.add_argument(
        "--opset", type=int, default=None, help="only probe test cases at or below this opset"
    )
    parser.add_argument(
        "-o", "--output", default=None, help="write the measurements (JSON) to this file"
    )
    parser.add_argument("--limit", type=int, default=None, help="probe only the first N models")
    parser.add_argument(
        "--op", action="append", default=None, help="probe only this op type (repeatable)"
    )
    parser.add_argument(
        "--no-variants", action="store_true", help="skip the generated dtype variants"
    )
    parser.add_argument(
        "--runner", default=None, help="Python interpreter that has the EP (default: configured)"
    )
    parser.add_argument(
        "--optimization",
        choices=("disabled", "basic", "default"),
        default="disabled",
        help="graph optimization level of the probe sessions (default: disabled)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        help="seconds per session before the worker is killed",
    )
    parser.add_argument(
        "--compare",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="compare the measurement with the shipped profile (default: on)",
    )
    parser.add_argument(
        "--from-models",
        nargs="+",
        metavar="MODEL",
        default=None,
        help="probe the distinct node signatures of these models (files or folders) "
        "instead of ONNX's node test cases",
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")


def _configured_runners() -> tuple[dict[str, str], Path | None]:
    """``[tool.onnxlint.runners]`` from the configuration that applies here."""
    try:
        from onnxlint import config

        cfg = config.discover(Path.cwd())
    except Exception as exc:  # a broken config must not stop a measurement
        print(f"onnxlint probe: ignoring configuration: {exc}", file=sys.stderr)
        return {}, None
    return {str(k): str(v) for k, v in cfg.runners.items()}, cfg.root


def run(args: argparse.Namespace) -> int:
    from onnxlint.fsutil import check_writable, write_error
    from onnxlint.probe import probe
    from onnxlint.probe.compare import compare_with_profile
    from onnxlint.probe.report import write_report

    def say(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    runners, root = _configured_runners()
    if args.output:
        try:  # before the probe: a long measurement must not be lost to a bad -o
            Path(args.output).parent.mkdir(parents=True, exist_ok=True)
            check_writable(Path(args.output))
        except OSError as exc:
            print(f"onnxlint probe: {write_error(args.output, exc)}", file=sys.stderr)
            return 2
    try:
        report = probe(
            args.ep,
            runner=args.runner,
            runners=runners,
            root=root,
            opset=args.opset,
            ops=args.op,
            limit=args.limit,
            variants=not args.no_variants,
            optimization=args.optimization,
            timeout_s=args.timeout,
            progress=say,
            models=args.from_models,
        )
    except (RuntimeError, ValueError) as exc:
        print(f"onnxlint probe: {exc}", file=sys.stderr)
        return 2
    if args.output:
        try:
            write_report(report, args.output)
        except OSError as exc:
            print(f"onnxlint probe: {write_error(args.output, exc)}", file=sys.stderr)
            return 2
        say(f"wrote {args.output}")
    summary = report.summary()
    comparison = None
    if args.compare:
        comparison = compare_with_profile(report)
    if args.json:
        out: dict[str, Any] = {"ep": report.ep, "versions": report.versions, "summary": summary}
        if comparison is not None:
            agreement, disagreements = comparison
            out["agreement"] = round(agreement, 4)
            out["disagreements"] = [d.__dict__ for d in disagreements]
        print(json.dumps(out, indent=2))
        return 0
    print(f"{report.provider} ({report.ep}), {report.date}, optimizations {report.optimization}")
    print("versions: " + ", ".join(f"{k}={v}" for k, v in sorted(report.versions.items())))
    print(
        f"models: {summary['models']} over {summary['ops']} ops; claimed {summary['claimed']}, "
        f"refused {summary['refused']}, unknown {summary['unknown']}, "
        f"claimed then failed {summary['claimed_then_failed']}"
    )
    print("statuses: " + ", ".join(f"{k}={v}" for k, v in summary["statuses"].items()))
    if "create_s" in summary:
        t = summary["create_s"]
        print(
            f"session creation: median {t['median']} s, p95 {t['p95']} s, "
            f"max {t['max']} s, total {t['total']} s"
        )
    if comparison is None:
        if args.compare:
            print("no shipped profile to compare with")
        return 0
    agreement, disagreements = comparison
    print(f"agreement with the shipped profile: {agreement:.1%} ({len(disagreements)} disagree)")
    for d in disagreements:
        side = (
            "profile says claimed, EP refused"
            if d.predicted
            else "profile says refused, EP claimed"
        )
        extra = (
            f": {d.reason}"
            if d.reason
            else (f" (profile: {d.profile_reason})" if d.profile_reason else "")
        )
        print(f"  {d.name} {d.op} opset {d.opset} [{','.join(d.dtypes)}]: {side}{extra}")
    return 1 if disagreements else 0
