"""``onnxlint eps``: every known EP profile, where its facts come from, and which EPs
this environment can really create sessions on (for ``--confirm`` and ``probe``).

Each profile's facts are counted by the kind of their provenance: *measured* (with
``onnxlint probe``), *queried* (from an installed package at generation time) and
*upstream* (read from upstream sources or written from cited documents). An EP is
*installed* only when a session on it, with the profile's provider options, really
runs a small graph on it here: a provider that loads but has no device (QNN's GPU
backend on a machine without an Adreno GPU, OpenVINO's GPU/NPU) is not installed.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onnxlint.ep_names import CPU_EP

if TYPE_CHECKING:
    import onnx

    from onnxlint.profiles import Profile

NAME = "eps"
#: provenance kinds (rules/schema/ep-profile.schema.json) -> how ``eps`` counts them
FACT_GROUPS = {
    "measured": "measured",
    "runtime": "queried",
    "source": "upstream",
    "manual": "upstream",
}
HELP = "list EP profiles with provenance, and which EPs are installed for --confirm"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument(
        "--no-discover",
        action="store_true",
        help="do not start runner interpreters to see which EPs are installed (fast)",
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per runner discovery")


def fact_counts(prof: Profile) -> dict[str, int]:
    """How many of the profile's facts are measured, queried and from upstream sources.

    A fact is one op entry, one constraint (an op's or a global one), one opset limit
    or the tensor type rule; each counts under the kind of the provenance it cites
    (a constraint without its own, under its op's).
    """
    kinds = {pid: p.kind for pid, p in prof.provenance.items()}
    cited: list[str | None] = []
    for op in prof.ops.values():
        cited.append(op.provenance)
        cited += [c.provenance or op.provenance for c in op.constraints]
    cited += [c.provenance for c in prof.global_constraints]
    cited += [lim.provenance for lim in prof.opsets.values()]
    if prof.tensor_dtypes is not None:
        cited.append(prof.tensor_dtypes.provenance)
    counts = Counter(FACT_GROUPS.get(kinds.get(pid or "", ""), "upstream") for pid in cited)
    return {group: counts.get(group, 0) for group in ("measured", "queried", "upstream")}


def _probe_model() -> onnx.ModelProto:
    """Three float ops on a static input: every EP here claims them as one partition
    (a single node would be dropped by OpenVINO, a constant-only one fails on QNN)."""
    import onnx
    import onnx.helper as oh

    graph = oh.make_graph(
        [
            oh.make_node("Relu", ["x"], ["r"], name="relu"),
            oh.make_node("Sigmoid", ["r"], ["s"], name="sigmoid"),
            oh.make_node("Mul", ["s", "x"], ["y"], name="mul"),
        ],
        "eps_probe",
        [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 8])],
        [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 8])],
    )
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 13)])
    model.ir_version = 7
    return model


def session_check(
    ep: str, variant: dict[str, Any], runner: str, timeout_s: float
) -> tuple[bool, str | None]:
    """Whether a session with the profile's provider options runs the probe graph on the
    EP under ``runner`` (not merely loads the provider), and why not."""
    from onnxlint.runtime.client import SessionRequest, run_sessions
    from onnxlint.runtime.runners import EpSpec

    options = {str(k): str(v) for k, v in (variant.get("provider_options") or {}).items()}
    spec = EpSpec.for_ep(ep, options)
    request = SessionRequest(_probe_model(), run_inputs=True, log_severity=3, log_lines=0)
    [res] = run_sessions([request], spec, runner=runner, timeout_s=timeout_s)
    placed = {n.ep for n in res.assignment if n.op_type != "Constant"}
    ran = bool((res.run or {}).get("ok"))
    if res.ok and ran and not res.fallback.any and spec.provider in placed:
        return True, None
    why = res.error or res.fallback.message or (res.run or {}).get("error")
    return False, str(why or f"{spec.provider} ran none of the probe graph's nodes")


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
            "facts": fact_counts(prof),
            "installed": None,
            "runner": None,
        }
        if discover:
            from onnxlint.runtime import discovery, runners

            exe = runners.resolve_runner(info.ep, dict(cfg.runners), root=cfg.root)
            if exe not in runners_info:
                runners_info[exe] = discovery.discover(exe, timeout_s=timeout_s)
            ri = runners_info[exe]
            row["runner"] = exe
            row["installed"] = bool(ri.ok and ri.has(info.ep))
            if row["installed"] and info.ep != CPU_EP:
                # the provider loads; whether its device exists only a session can tell
                works, why = session_check(info.ep, dict(info.variant), exe, timeout_s)
                row["installed"] = works
                if why:
                    row["not_installed_reason"] = why
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
        f = r["facts"]
        facts = f"{f['measured']} / {f['queried']} / {f['upstream']}"
        table.append([r["id"], r["ep"], r["kind"], r["ops"], describes, facts, installed, source])
    print(
        tabulate(
            table,
            headers=[
                "profile",
                "ORT name",
                "kind",
                "ops",
                "describes",
                "facts: measured / queried / upstream",
                "installed",
                "source",
            ],
            maxcolwidths=[None, None, None, None, 24, 14, None, 56],
        )
    )
    print(
        "\nfacts: op entries, constraints and limits by where they come from: measured on the "
        "real EP (onnxlint probe), queried from an installed package, or read from upstream "
        "sources"
    )
    if any(r["installed"] is not None for r in rows):
        print(
            "installed: a session with the profile's options runs a small graph on this EP here "
            "(used by --confirm and probe);"
        )
        print("configure other interpreters under [tool.onnxlint.runners].")
    return 0
