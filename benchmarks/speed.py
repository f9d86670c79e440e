"""``python -m benchmarks speed``: onnxlint against the parse+check floor and ORT's checker.

The speed suite of issue 19, in one run: every figure is a whole command (a fresh
process), run ``--repeat`` times (5 by default) with the tools of one model
*interleaved* round by round, so that a load that comes and goes on a shared machine
falls on every tool alike; medians are compared as ratios within the run:

- ``floor``: python + ``onnx.load`` + ``onnx.checker.check_model(full_check=True)`` +
  strict shape inference (``benchmarks.__main__.FLOOR``);
- ``ort-mobile``: the installed ORT's ``check_onnx_model_mobile_usability``;
- ``onnxlint`` (cold: no cache at all, ORT's worker runs), ``onnxlint-warm`` (the same
  command run before: every cache filled, its kept output printed again,
  ``onnxlint.cli.replay``, or in a checkout without that the report read back from the
  report cache, as a user re-running it on an unchanged file gets) and
  ``onnxlint-relint`` (the analysis caches filled, ORT's level-1 graph among them, but
  no report kept, hence no output either: the lint itself, as in a process that lints a
  model it has seen), ``--ep qnn``;
- with ``--baseline REF``: the same onnxlint commands from the git revision ``REF``
  (``onnxlint-base``, ``onnxlint-base-warm``), for before/after ratios in one run;
- a folder of the light models and one-node models (``corpus.folder_corpus``) linted
  serially and with ``-j 2``, cold and warm (analysis caches filled, no reports kept:
  the work ``-j`` shares out), and serially with every report kept (``unchanged``);
- with ``--real-folder DIR``: the same on a folder of 100 real-world models (an even
  spread of the real-world corpus that ``benchmarks/realworld/build.py`` exports, which
  needs torch and transformers and so is not built by the suite itself).

The models: the onnx wheel's light models and the 12-layer BERT-base of the corpus.
The results (``results.{json,md}``) record the versions of Python, onnx,
onnxruntime, the cores and the load average; ``python -m benchmarks table`` writes
their budget table into ``docs/performance.md``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks import corpus
from benchmarks.__main__ import (
    FLOOR,
    PY,
    REPO,
    RESULTS,
    Measurement,
    machine,
    run_child,
    versions,
)
from onnxlint.fsutil import atomic_write_text

#: the onnxlint tools and what they are compared with
CURRENT, BASE = "onnxlint", "onnxlint-base"
EPS = ("qnn",)
#: the issue's budget (docs/performance.md): ratios to the floor, factors over ORT's checker
WARM_FLOOR_MAX = 1.3
COLD_FLOOR_MAX = 2.0
ORT_FASTER_MIN = 5.0
FOLDER_SPEEDUP_MIN = 1.6


def _env(pythonpath: Path, cache: Path | None) -> list[str]:
    env = ["env", f"PYTHONPATH={pythonpath}"]
    if cache is None:
        return [*env, "ONNXLINT_NO_CACHE=1"]
    return [*env, "ONNXLINT_NO_CACHE=0", f"ONNXLINT_CACHE_DIR={cache}"]


def block_reports(cache: Path) -> Path:
    """``cache`` (created) with a file where the report cache's folder would be: entries
    can be neither read nor written there, every other cache works as usual."""
    from onnxlint.report_cache import FOLDER

    cache.mkdir(parents=True, exist_ok=True)
    blocker = cache / FOLDER
    if not blocker.exists():
        blocker.write_text("no report cache for this benchmark command\n")
    return cache


def has_report_cache(root: Path) -> bool:
    """Whether the onnxlint checkout at ``root`` keeps reports (``onnxlint.report_cache``)."""
    return (root / "onnxlint" / "report_cache.py").is_file()


def lint_cmd(target: Path, pythonpath: Path, cache: Path | None, *extra: str) -> list[str]:
    cmd = [*_env(pythonpath, cache), PY, "-m", "onnxlint", str(target), "--no-progress"]
    cmd += ["--isolated"]
    for ep in EPS:
        cmd += ["--ep", ep]
    return cmd + list(extra)


def measure_round_robin(
    scenario: str,
    model: str,
    cmds: dict[str, list[str]],
    repeat: int,
    timeout: float,
    log: Callable[[str], None],
) -> list[Measurement]:
    """Each command ``repeat`` times, one of each per round (interleaved)."""
    ms = {tool: Measurement(scenario, model, tool, _display(cmd)) for tool, cmd in cmds.items()}
    for _ in range(repeat):
        for tool, cmd in cmds.items():
            m = ms[tool]
            if m.error:
                continue
            load = os.getloadavg()[0]
            wall, rss, rc, _ = run_child(cmd, timeout)
            m.exit_codes.append(rc)
            if rc not in (0, 1):
                m.error = f"exit code {rc}"
                continue
            m.runs.append(round(wall, 4))
            m.peak_rss_mb = round(max(m.peak_rss_mb, rss), 1)
            m.extra.setdefault("load_1min", []).append(round(load, 2))
    for m in ms.values():
        med = f"{m.median:.2f} s" if m.median is not None else "-"
        log(
            f"  {scenario:<10} {model:<22} {m.tool:<20} {med:>9}"
            + (f"  {m.error}" if m.error else "")
        )
    return list(ms.values())


def _display(cmd: Sequence[str]) -> str:
    """The command with this machine's paths replaced by names."""
    out = []
    for part in cmd:
        for path, name in (
            (str(corpus.default_cache()), "$CACHE"),
            (str(corpus.light_dir()), "$LIGHT"),
            (str(REPO), "$REPO"),
            (tempfile.gettempdir(), "$TMP"),
            (PY, "python"),
        ):
            part = part.replace(path, name)
        out.append("<floor script>" if part == FLOOR else part)
    return " ".join(out)


def checkout(ref: str, into: Path) -> str:
    """``onnxlint/`` and ``rules/`` of git revision ``ref`` under ``into``; its short hash."""
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", ref],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    archive = into / "src.tar"
    with open(archive, "wb") as fh:
        subprocess.run(
            ["git", "-C", str(REPO), "archive", "--format=tar", ref, "onnxlint", "rules"],
            stdout=fh,
            check=True,
        )
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    archive.unlink()
    import compileall

    compileall.compile_dir(str(into / "onnxlint"), quiet=1)
    return commit


def models(
    cache: Path | None, quick: bool, names: Sequence[str] | None, log: Callable[[str], None]
) -> list[corpus.CorpusModel]:
    """The light models and (unless ``quick``) the BERT-base of the corpus; ``names``:
    only these."""
    light = [m for m in corpus.light_models() if not names or m.name in names]
    wants_bert = not quick and (not names or "bert_base" in names)
    return light + ([corpus.bert(cache, log)] if wants_bert else [])


def run(
    args: argparse.Namespace,
    log: Callable[[str], None],
    checkpoint: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """The suite; ``checkpoint`` gets the results so far after every model and the folder."""
    from benchmarks.__main__ import precompile

    started = time.time()
    mach = machine()
    log(f"machine: {mach}")
    precompile()
    work = Path(tempfile.mkdtemp(prefix="onnxlint-speed-"))
    roots: dict[str, Path] = {CURRENT: REPO}
    base_commit = None
    if args.baseline:
        roots[BASE] = work / "base"
        roots[BASE].mkdir()
        base_commit = checkout(args.baseline, roots[BASE])
        log(f"baseline: {args.baseline} ({base_commit})")
    caches = {tool: work / f"cache-{tool}" for tool in roots}
    ms: list[Measurement] = []

    def results() -> dict[str, Any]:
        return {
            "mode": "speed" if not args.quick else "speed-quick",
            "started": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(started)),
            "finished": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
            "duration_s": round(time.time() - started, 1),
            "repeat": args.repeat,
            "folder_repeat": args.folder_repeat,
            "machine": mach,
            "load_average_end": [round(x, 2) for x in os.getloadavg()],
            "versions": versions(),
            "baseline": {"ref": args.baseline, "commit": base_commit} if args.baseline else None,
            "measurements": [m.to_dict() for m in ms],
        }

    try:
        ms += _startup(args.repeat, log)
        for cm in models(args.cache, args.quick, args.models, log):
            cmds: dict[str, list[str]] = {}
            for tool, root in roots.items():
                if tool == BASE and not (cm.name.startswith("light_") or cm.name == "bert_base"):
                    continue  # the baseline on the light models, BERT-base and the folder only
                cmds[tool] = lint_cmd(cm.path, root, None)
                warm = lint_cmd(cm.path, root, caches[tool])
                run_child(warm, 900)  # fills this tool's level-1 cache; not timed
                cmds[f"{tool}-warm"] = warm
                if tool == CURRENT or has_report_cache(root):
                    # a baseline with a report cache gets its own relint rows: its warm
                    # rows are reports read back, not a before for this relint
                    relint = lint_cmd(cm.path, root, block_reports(work / f"cache-relint-{tool}"))
                    run_child(relint, 900)  # fills the analysis caches; not timed
                    cmds[f"{tool}-relint"] = relint
            cmds["floor"] = [PY, "-c", FLOOR, str(cm.path)]
            cmds["ort-mobile"] = [
                PY,
                "-m",
                "onnxruntime.tools.check_onnx_model_mobile_usability",
                str(cm.path),
            ]
            ms += measure_round_robin("lint-1ep", cm.name, cmds, args.repeat, 900, log)
            if checkpoint is not None:
                checkpoint(results())
        if not args.quick and args.folder_repeat > 0:
            ms += _folder(args, roots, caches, log)
            if args.real_folder is not None:
                real = spread(args.real_folder, args.real_folder_count, work / "realworld")
                ms += _folder(args, roots, caches, log, real, "realworld")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return results()


def _startup(repeat: int, log: Callable[[str], None]) -> list[Measurement]:
    cmds = {
        "python": [PY, "-c", "pass"],
        "import-onnx": [PY, "-c", "import onnx"],
        "onnxlint-version": [*_env(REPO, None), PY, "-m", "onnxlint", "--version"],
    }
    return measure_round_robin("startup", "-", cmds, repeat, 120, log)


def _folder(
    args: argparse.Namespace,
    roots: dict[str, Path],
    caches: dict[str, Path],
    log: Callable[[str], None],
    folder: Path | None = None,
    name: str | None = None,
) -> list[Measurement]:
    """``folder`` (default: the corpus's folder of light and one-node models) linted
    serially and with ``-j 2``, cold and warm, by every tool."""
    folder = folder or corpus.folder_corpus(args.cache)
    n = len(list(folder.glob("*.onnx")))
    label = f"{name or 'folder'}_{n}"
    cmds: dict[str, list[str]] = {}
    for tool, root in roots.items():
        for jobs in (1, 2):
            cmds[f"{tool}-j{jobs}"] = lint_cmd(folder, root, None, "-j", str(jobs))
        # warm too for the baseline, so that a before/after of -j is a ratio in one run;
        # without reports kept: with them, nothing is left for -j to share out
        warm = block_reports(caches[tool].with_name(f"{caches[tool].name}-{label}"))
        run_child(lint_cmd(folder, root, warm), 1800)  # fill the caches
        for jobs in (1, 2):
            cmds[f"{tool}-warm-j{jobs}"] = lint_cmd(folder, root, warm, "-j", str(jobs))
        if tool == CURRENT and name is None:
            kept = caches[tool].with_name(f"{caches[tool].name}-unchanged")
            run_child(lint_cmd(folder, root, kept), 1800)  # every report kept
            cmds[f"{tool}-unchanged-j1"] = lint_cmd(folder, root, kept)
    return measure_round_robin("folder", label, cmds, args.folder_repeat, 1800, log)


def spread(source: Path, count: int, into: Path) -> Path:
    """``count`` of ``source``'s ``.onnx`` files, evenly spread over their sorted names
    (so that every family of a corpus built family by family is in), copied into ``into``."""
    names = sorted(p.name for p in source.glob("*.onnx") if p.is_file())
    if not names:
        raise SystemExit(f"no .onnx files in {source}")
    count = min(count, len(names))
    into.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        name = names[i * len(names) // count]
        shutil.copyfile(source / name, into / name)
    return into


# -- what the run says ------------------------------------------------------------------------


def _by(data: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {(m["scenario"], m["model"], m["tool"]): m for m in data["measurements"]}


def _median(m: dict[str, Any] | None) -> float | None:
    if not m or not m.get("runs"):
        return None
    return float(statistics.median(m["runs"]))


def ratios(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Per model: each onnxlint command against the floor and ORT's checker, and against
    the baseline's same command."""
    by = _by(data)
    rows = []
    for model in sorted({m for (s, m, _) in by if s == "lint-1ep"}):
        floor = _median(by.get(("lint-1ep", model, "floor")))
        ort = _median(by.get(("lint-1ep", model, "ort-mobile")))
        for tool in (
            CURRENT,
            f"{CURRENT}-warm",
            f"{CURRENT}-relint",
            BASE,
            f"{BASE}-warm",
            f"{BASE}-relint",
        ):
            ours = _median(by.get(("lint-1ep", model, tool)))
            if ours is None or floor is None:
                continue
            row: dict[str, Any] = {
                "model": model,
                "tool": tool,
                "median_s": round(ours, 4),
                "vs_floor": round(ours / floor, 3),
                "ort_checker_over_this": round(ort / ours, 3) if ort else None,
            }
            # the baseline's warm run is a relint when it has no report cache (then it
            # has no relint rows): the before/after of -warm is what a user re-running
            # the command sees, that of -relint the lint's own work before and after
            base_tool = tool.replace(CURRENT, BASE, 1)
            before = _median(by.get(("lint-1ep", model, base_tool)))
            if before is None and base_tool.endswith("-relint"):
                before = _median(by.get(("lint-1ep", model, f"{BASE}-warm")))
            if tool.startswith(CURRENT) and not tool.startswith(BASE) and before:
                row["before_over_after"] = round(before / ours, 3)
            rows.append(row)
    return rows


def folder_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    by = _by(data)
    rows = []
    for (scenario, model, tool), m in sorted(by.items()):
        if scenario != "folder" or not tool.endswith("-j1"):
            continue
        serial = _median(m)
        parallel = _median(by.get((scenario, model, tool[:-1] + "2")))
        if serial and parallel:
            rows.append(
                {
                    "model": model,
                    "tool": tool[:-3],
                    "serial_s": round(serial, 3),
                    "j2_s": round(parallel, 3),
                    "speedup": round(serial / parallel, 3),
                }
            )
    return rows


def targets(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's "done when" lines, judged on this run's medians (worst model shown)."""
    rows = ratios(data)
    out: list[dict[str, Any]] = []

    def add(target: str, measured: str, budget: str, met: bool | None) -> None:
        out.append({"target": target, "measured": measured, "budget": budget, "met": met})

    for tool, how, limit in (
        (f"{CURRENT}-warm", "warm", WARM_FLOOR_MAX),
        (CURRENT, "cold", COLD_FLOOR_MAX),
    ):
        mine = [r for r in rows if r["tool"] == tool]
        if not mine:
            continue
        worst = max(mine, key=lambda r: r["vs_floor"])
        met = sum(r["vs_floor"] <= limit for r in mine)
        add(
            f"one EP, {how}: time vs floor, every model",
            f"worst {worst['vs_floor']:.2f}x ({worst['model']}); {met}/{len(mine)} within",
            f"<= {limit}x",
            worst["vs_floor"] <= limit,
        )
    for tool, how in ((f"{CURRENT}-warm", "warm"), (CURRENT, "cold")):
        mine = [r for r in rows if r["tool"] == tool and r["ort_checker_over_this"]]
        if not mine:
            continue
        worst = min(mine, key=lambda r: r["ort_checker_over_this"])
        met = sum(r["ort_checker_over_this"] >= ORT_FASTER_MIN for r in mine)
        add(
            f"one EP, {how}: faster than ORT's checker, every model",
            f"worst {worst['ort_checker_over_this']:.2f}x ({worst['model']}); "
            f"{met}/{len(mine)} within",
            f">= {ORT_FASTER_MIN:g}x",
            worst["ort_checker_over_this"] >= ORT_FASTER_MIN,
        )
    for r in folder_rows(data):
        if r["tool"].startswith(BASE):
            continue
        how = "warm" if r["tool"].endswith("warm") else "cold"
        # issue 19's line is a folder of 100 real models; the folder of light and
        # one-node models is a stricter case of ours (start-up is a quarter of its run)
        what = "" if r["model"].startswith("realworld") else ", light and one-node models"
        add(
            f"{r['model']}: -j 2 vs serial ({how}{what})",
            f"{r['speedup']:.2f}x ({r['serial_s']:.1f} s / {r['j2_s']:.1f} s)",
            f">= {FOLDER_SPEEDUP_MIN}x",
            r["speedup"] >= FOLDER_SPEEDUP_MIN,
        )
    return out


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def _load_remark(mach: dict[str, Any], data: dict[str, Any]) -> str:
    """What the load averages say about the run's absolute times (the ratios hold either way)."""
    loads = [mach["load_average"][0], data["load_average_end"][0]]
    if max(loads) > 0.75 * mach["cores"]:
        return (
            "The machine is shared and was loaded by other engineers' work: absolute times "
            "are inflated and noisy, the ratios within the run are the figures to read."
        )
    return (
        "The machine was quiet (1-minute load under three quarters of the cores at the "
        "start and the end); the ratios within the run are still the figures to read."
    )


def markdown(data: dict[str, Any]) -> str:
    mach, ver = data["machine"], data["versions"]
    base = data.get("baseline")
    lines = [
        f"# onnxlint benchmark ({data['mode']})",
        "",
        f"Run {data['started']} to {data['finished']} UTC, {data['duration_s']:.0f} s, "
        f"{data['repeat']} runs of every command ({data.get('folder_repeat', data['repeat'])} "
        "of the folder's), interleaved round by round. Generated by "
        "`python -m benchmarks speed`; method and budget in `docs/performance.md`.",
        "",
        f"Machine: {mach['cpu']}, {mach['cores']} cores, {mach['memory_gib']} GiB, {mach['os']}, "
        f"Python {mach['python']}; load average at start {mach['load_average']}, at end "
        f"{data['load_average_end']}. " + _load_remark(mach, data),
        "",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in ver.items() if v),
    ]
    if base:
        lines += ["", f"Baseline (`onnxlint-base`): git {base['ref']} ({base['commit']})."]
    lines += [
        "",
        "## Budget",
        "",
        *budget_table(data),
        "",
        "## One EP (`--ep qnn`), against the floor and ORT's checker",
        "",
        "| model | tool | median | vs floor | ORT checker / this | before / after |",
        "|---|---|---|---|---|---|",
    ]
    for r in ratios(data):
        lines.append(
            f"| {r['model']} | {r['tool']} | {r['median_s']:.2f} s | {r['vs_floor']:.2f}x | "
            f"{_fmt(r['ort_checker_over_this'])} | {_fmt(r.get('before_over_after'))} |"
        )
    lines += [
        "",
        "## Folder: serial against -j 2",
        "",
        "| folder | tool | serial | -j 2 | speedup |",
        "|---|---|---|---|---|",
    ]
    for r in folder_rows(data):
        lines.append(
            f"| {r['model']} | {r['tool']} | {r['serial_s']:.2f} s | {r['j2_s']:.2f} s | "
            f"{r['speedup']:.2f}x |"
        )
    lines += [
        "",
        "## Every command",
        "",
        "| scenario | model | tool | runs | median | min | max | peak RSS | load (1 min) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for m in data["measurements"]:
        load = m.get("extra", {}).get("load_1min") or []
        lines.append(
            f"| {m['scenario']} | {m['model']} | {m['tool']} | {len(m['runs'])} | "
            + " | ".join(
                "-" if v is None else f"{v:.3f} s" for v in (m["median_s"], m["min_s"], m["max_s"])
            )
            + f" | {m['peak_rss_mb']:.0f} MiB | "
            + (f"{min(load):.1f}-{max(load):.1f}" if load else "-")
            + (f" {m['error']}" if m.get("error") else "")
            + " |"
        )
    return "\n".join(lines) + "\n"


def budget_table(data: dict[str, Any]) -> list[str]:
    """The budget table's lines (``docs/performance.md`` carries the committed run's)."""
    lines = ["| target | measured | budget | met |", "|---|---|---|---|"]
    for t in data.get("targets") or targets(data):
        met = {True: "yes", False: "**no**", None: "-"}[t["met"]]
        lines.append(f"| {t['target']} | {t['measured']} | {t['budget']} | {met} |")
    return lines


def main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks speed", description=__doc__.splitlines()[0]
    )
    ap.add_argument("--repeat", type=int, default=5, help="runs of every command (default 5)")
    ap.add_argument(
        "--folder-repeat", type=int, default=5, help="runs of every folder command (0: none)"
    )
    ap.add_argument(
        "--real-folder",
        type=Path,
        default=None,
        metavar="DIR",
        help="also time -j 2 on real models: a spread of --real-folder-count .onnx files "
        "of DIR (the real-world corpus, benchmarks/realworld/build.py)",
    )
    ap.add_argument(
        "--real-folder-count",
        type=int,
        default=100,
        metavar="N",
        help="how many of --real-folder's models (default 100)",
    )
    ap.add_argument("--quick", action="store_true", help="light models only, no folder")
    ap.add_argument("--baseline", metavar="REF", help="also time onnxlint at this git revision")
    ap.add_argument("--cache", type=Path, default=None, help="corpus folder")
    ap.add_argument(
        "--models",
        type=lambda v: [x.strip() for x in v.split(",") if x.strip()],
        default=None,
        help="comma-separated corpus names (default: the light models and bert_base)",
    )
    ap.add_argument("--out", type=Path, default=RESULTS, help="where results.json/.md go")
    args = ap.parse_args(argv)
    log = lambda s: print(s, flush=True)  # noqa: E731
    stem = "results" if not args.quick else "quick"
    args.out.mkdir(parents=True, exist_ok=True)

    def write(data: dict[str, Any]) -> None:
        import json

        data["targets"] = targets(data)
        atomic_write_text(args.out / f"{stem}.json", json.dumps(data, indent=1) + "\n")
        atomic_write_text(args.out / f"{stem}.md", markdown(data))

    data = run(args, log, checkpoint=write)
    write(data)
    log(f"wrote {args.out / stem}.json and .md in {data['duration_s']:.0f} s")
    for t in data["targets"]:
        log(
            f"  {'MET ' if t['met'] else 'MISS'} {t['target']}: {t['measured']} (budget {t['budget']})"
        )
    return 0
