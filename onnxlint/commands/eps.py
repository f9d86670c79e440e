"""``onnxlint eps``: every known EP profile, where its facts come from, and which EPs
this environment can really create sessions on (for ``--confirm`` and ``probe``)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

NAME = "eps"
HELP = "list EP profiles with provenance, and which EPs are installed for --confirm"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument(
        "--no-discover",
        action="store_true",
        help="do not start runner interpreters to see which EPs are installed (fast)",
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per runner discovery")


def collect(
    discover: bool = True, timeout_s: float = 60.0, start: Path | None = None
) -> list[dict[str, Any]]:
    """One row per shipped profile; ``installed`` is None when discovery was skipped."""
    from onnxlint import config as config_mod
    from onnxlint import profiles

    cfg = config_mod.discover(start or Path.cwd())
    runners_info: dict[str, Any] = {}
    rows = []
    for info in profiles.list_profiles():
        prof = profiles.load_profile(info.id)
        row: dict[str, Any] = {
            "id": info.id,
            "ep": info.ep,
            "aliases": list(info.aliases),
            "describes": dict(info.describes),
            "kind": prof.kind,
            "static_shapes": prof.requires_static_shapes,
            "provenance": [p.describe() for p in prof.provenance.values() if p.kind != "measured"],
            "measured": [p.describe() for p in prof.provenance.values() if p.kind == "measured"],
            "ops": len(prof.ops),
            "installed": None,
            "runner": None,
        }
        if discover:
            from onnxlint.runtime import runners

            exe = runners.resolve_runner(info.ep, dict(cfg.runners), root=cfg.root)
            if exe not in runners_info:
                runners_info[exe] = runners.discover(exe, timeout_s=timeout_s)
            ri = runners_info[exe]
            row["runner"] = exe
            row["installed"] = bool(ri.ok and ri.has(info.ep))
            device = str(info.variant.get("device", "")).lower()
            if row["installed"] and device not in ("", "cpu"):
                # the provider loads here, but nothing tells us the GPU/NPU device exists
                row["installed"] = "provider only"
            if not ri.ok:
                row["runner_error"] = ri.error
        rows.append(row)
    return rows


def run(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from onnxlint.profiles import ProfileError

    try:
        rows = collect(discover=not args.no_discover, timeout_s=args.timeout)
    except ProfileError as exc:
        print(f"onnxlint: error: {exc}")
        return 2
    if args.format == "json":
        print(json.dumps(rows, indent=2))
        return 0
    table = []
    for r in rows:
        installed = r["installed"]
        if not isinstance(installed, str):
            installed = "-" if installed is None else ("yes" if installed else "no")
        describes = ", ".join(f"{k} {v}" for k, v in r["describes"].items())
        source = r["provenance"][0] if r["provenance"] else ""
        if len(r["provenance"]) > 1:
            source += f" (+{len(r['provenance']) - 1} more)"
        measured = "yes" if r["measured"] else ""
        table.append(
            [r["id"], r["ep"], r["kind"], r["ops"], describes, measured, installed, source]
        )
    print(
        tabulate(
            table,
            headers=[
                "profile",
                "ORT name",
                "kind",
                "ops",
                "describes",
                "measured",
                "installed",
                "source",
            ],
            maxcolwidths=[None, None, None, None, 24, None, None, 56],
        )
    )
    if any(r["installed"] is not None for r in rows):
        print(
            "\ninstalled: a session can be created on this EP here (used by --confirm and probe);"
        )
        print("configure other interpreters under [tool.onnxlint.runners].")
    return 0
