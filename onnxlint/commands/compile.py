"""``onnxlint compile``: compile a model to an EPContext model in an isolated worker.

``onnxlint compile model.onnx --ep qnn -o model_ctx.onnx [--embed/--no-embed]``
runs ``ort.ModelCompiler`` in a worker (an EP crash ends the worker, not the
command), records the source model's SHA-256 and the compile options in the
compiled model's metadata (``onnxlint:source_sha256``, ``onnxlint:compile``:
the cache key that ORT's compatibility check does not cover), then validates
the result by linting it and by running one inference with random inputs in a
fresh worker, and reports the compile time.

Nothing the user owns is modified: the compile writes into a temporary folder
next to the output, and each file is moved into place atomically; an existing
output (or a sidecar of the same name) is replaced only with ``--overwrite``,
and the source model never.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from onnxlint.ep_names import CPU_EP

NAME = "compile"
HELP = "compile a model for an EP into an EPContext model (ORT ModelCompiler, isolated worker)"

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help="the source ONNX model")
    parser.add_argument("--ep", default="qnn", help="execution provider to compile for (qnn)")
    parser.add_argument("-o", "--output", required=True, help="the compiled model to write")
    parser.add_argument(
        "--embed",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="embed the EP context binary in the model instead of a sidecar file (default: no)",
    )
    parser.add_argument(
        "--ep-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="EP option for the compile session (repeatable; later keys win)",
    )
    parser.add_argument(
        "--validate",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="lint the result and run one inference with random inputs (default: yes)",
    )
    parser.add_argument(
        "--optimization",
        choices=("disabled", "basic", "extended", "default"),
        default="disabled",
        help="graph optimizations before compiling (ModelCompiler's default: disabled)",
    )
    parser.add_argument("--overwrite", action="store_true", help="replace an existing output")
    parser.add_argument("--runner", default=None, help="Python interpreter that has the EP")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds before giving up")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def _fail(msg: str, code: int = EXIT_USAGE) -> int:
    print(f"onnxlint compile: {msg}", file=sys.stderr)
    return code


def _options(items: list[str]) -> dict[str, str] | None:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            return None
        out[key.strip()] = value.strip()
    return out


def run(args: argparse.Namespace) -> int:
    from onnxlint import config as cfg
    from onnxlint.compiled import COMPILE_OPTIONS_KEY, SOURCE_HASH_KEY
    from onnxlint.fsutil import check_writable, write_error
    from onnxlint.loader import load
    from onnxlint.runtime.batch import WorkerItem, run_items
    from onnxlint.runtime.runners import EpSpec, resolve_runner

    source = Path(args.model)
    output = Path(args.output)
    options = _options(args.ep_option)
    if options is None:
        return _fail("--ep-option expects KEY=VALUE")
    try:
        spec = EpSpec.for_ep(args.ep, options)
    except ValueError as exc:
        return _fail(str(exc))
    try:
        config = cfg.discover(source)
    except cfg.ConfigError as exc:
        return _fail(str(exc))
    loaded = load(source, config.limits)
    if loaded.fatal or loaded.path is None:
        why = "; ".join(d.message for d in loaded.diagnostics) or "cannot be read"
        return _fail(f"{source}: {why}")
    unsafe = [d for d in loaded.diagnostics if d.code in ("OL010", "OL011", "OL012")]
    if unsafe:
        return _fail(f"{source}: not compiled: {unsafe[0].message}")
    if output.resolve() == source.resolve():
        return _fail(f"cannot write {output}: the output must not be the source model")
    if output.exists() and not args.overwrite:
        return _fail(f"{output} exists (use --overwrite to replace it)")
    runner = args.runner or resolve_runner(spec.provider, config.runners, root=config.root)
    folder = output.resolve().parent
    if not folder.is_dir():
        return _fail(f"output folder {folder} does not exist")
    try:  # a folder, a link, a hard link to the source, a read-only folder
        check_writable(output, (source,))
    except OSError as exc:
        return _fail(write_error(output, exc))

    try:
        tmp = Path(tempfile.mkdtemp(prefix=".onnxlint-compile-", dir=folder))
    except OSError as exc:  # a read-only or full folder: nothing was written
        return _fail(write_error(output, exc))
    text_copy: Path | None = None
    try:
        staged = tmp / output.name
        model_path = source.resolve()
        if loaded.is_text and loaded.model is not None:
            from onnxlint.fsutil import atomic_write_bytes

            # ORT reads only binary protobuf: it gets the parsed model, from a private
            # folder (never next to the user's files, never among the outputs)
            text_copy = Path(tempfile.mkdtemp(prefix="onnxlint-compile-src-"))
            model_path = text_copy / (source.stem + ".onnx")
            atomic_write_bytes(model_path, loaded.model.SerializeToString())
        res = run_items(
            [
                WorkerItem(
                    "compile",
                    "compile",
                    {
                        "model_path": str(model_path),
                        "output_path": str(staged),
                        "embed": bool(args.embed),
                        "optimization": args.optimization,
                    },
                )
            ],
            spec=spec,
            runner=runner,
            timeout_s=args.timeout,
        )[0]
        result: dict[str, Any] = {
            "source": str(source),
            "output": str(output),
            "ep": spec.provider,
            "options": spec.options,
            "embed": bool(args.embed),
            "runner": runner,
            "status": res.status,
            "compile_s": res.facts.get("compile_s"),
            "versions": {k: v for k, v in res.versions.items() if k != "executable"},
        }
        if not res.ok:
            result["error"] = res.error
            result["log_tail"] = res.log_tail[-5:]
            _print(args, result)
            return EXIT_FAILED
        record = _record_metadata(
            staged,
            {SOURCE_HASH_KEY: loaded.content_hash},
            COMPILE_OPTIONS_KEY,
            {
                "ep": spec.provider,
                "options": spec.options,
                "embed": bool(args.embed),
                "optimization": args.optimization,
                "onnxruntime": res.versions.get("onnxruntime"),
                "packages": res.versions.get("packages", {}),
                "source_name": source.name,
            },
        )
        result["epcontext_nodes"] = record["epcontext_nodes"]
        produced = sorted(p for p in tmp.iterdir() if p.is_file())
        clashes = [p.name for p in produced if (folder / p.name).exists() and not args.overwrite]
        if clashes:
            result["error"] = f"would replace existing files {clashes} (use --overwrite)"
            _print(args, result)
            return EXIT_USAGE
        for p in produced:
            p.replace(folder / p.name)  # same folder: an atomic rename per file
        result["files"] = [str(folder / p.name) for p in produced]
    except OSError as exc:  # the staging folder filled up, or a folder is in the way
        return _fail(write_error(output, exc))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if text_copy is not None:
            shutil.rmtree(text_copy, ignore_errors=True)

    code = EXIT_OK
    if result["epcontext_nodes"] == 0:
        result["warning"] = (
            f"{spec.provider} compiled no partition: the output has no EPContext node and "
            "runs entirely on CPU"
        )
        code = EXIT_FAILED
    if args.validate:
        result["validation"] = _validate(output, spec, runner, args.timeout)
        if not result["validation"]["ok"]:
            code = EXIT_FAILED
    _print(args, result)
    return code


def _record_metadata(
    path: Path, props: dict[str, str], options_key: str, options: dict[str, Any]
) -> dict[str, Any]:
    """Add our metadata to the compiled model (rewritten atomically in the staging folder)."""
    import onnx

    from onnxlint.fsutil import atomic_write_bytes

    mode = path.stat().st_mode & 0o777  # ORT created it with the user's umask; keep that
    model = onnx.load(str(path), load_external_data=False)
    wanted = {**props, options_key: json.dumps(options, sort_keys=True)}
    kept = [p for p in model.metadata_props if p.key not in wanted]
    del model.metadata_props[:]
    model.metadata_props.extend(kept)
    for key, value in wanted.items():
        model.metadata_props.add(key=key, value=value)
    atomic_write_bytes(path, model.SerializeToString())
    path.chmod(mode)
    count = sum(
        1 for n in model.graph.node if n.op_type == "EPContext" and n.domain == "com.microsoft"
    )
    return {"epcontext_nodes": count}


def _validate(output: Path, spec: Any, runner: str, timeout_s: float) -> dict[str, Any]:
    """Lint the compiled model and run one inference on it with random inputs."""
    from onnxlint.engine import lint
    from onnxlint.runtime.batch import WorkerItem, run_items

    report = lint(output, eps=[spec.short] if spec.short != "cpu" else [], path_label=str(output))
    # what fails validation: the file itself (load) and the compiled-model checks; other
    # families judge the CPU nodes and inputs the source model already had, and are shown
    # apart, never under "validation ok" as if they were the compiled model's
    own = [d for d in report.diagnostics if d.category.value in ("load", "compiled-model")]
    blocking = [d for d in own if d in report.errors]
    findings = [f"{d.code} {d.severity.label}: {d.message}" for d in own]
    inherited = [
        f"{d.code} {d.severity.label}: {d.message}" for d in report.diagnostics if d not in own
    ]
    res = run_items(
        [
            WorkerItem(
                "validate",
                "session",
                {
                    "model_path": str(output.resolve()),
                    "optimization": "disabled",
                    "record_assignment": True,
                    "run_inputs": True,
                    "random_inputs": True,
                },
            )
        ],
        spec=spec,
        runner=runner,
        timeout_s=timeout_s,
    )[0]
    run = res.run or {}
    ok = (
        res.ok
        and bool(run.get("ok"))
        and not blocking
        and not (res.fallback.any and spec.provider != CPU_EP)
    )
    return {
        "ok": ok,
        "lint": findings,
        "lint_errors": len(blocking),
        # the source model's own findings, still true of the compiled model's CPU part
        "source_findings": inherited,
        "session": res.status,
        "session_error": res.error,
        "create_s": res.create_s,
        "inference": run,
        "fallback": res.fallback.message or None,
    }


def _print(args: argparse.Namespace, result: dict[str, Any]) -> None:
    if args.json:
        print(json.dumps(result, indent=2, default=str))
        return
    if result.get("error"):
        print(f"onnxlint compile: {result['source']} -> {result['ep']} failed: {result['error']}")
        for line in result.get("log_tail") or []:
            print(f"  | {line}")
        return
    print(
        f"compiled {result['source']} for {result['ep']} in {result['compile_s']} s "
        f"({result.get('epcontext_nodes', 0)} EPContext node(s), "
        f"{'embedded' if result['embed'] else 'sidecar'}): {', '.join(result.get('files', []))}"
    )
    if result.get("warning"):
        print(f"warning: {result['warning']}")
    v = result.get("validation")
    if v:
        inf = v["inference"] or {}
        status = "ok" if v["ok"] else "FAILED"
        print(
            f"validation {status}: session {v['session']} in {v['create_s']} s, inference "
            f"{'ok in ' + str(inf.get('run_s')) + ' s' if inf.get('ok') else inf.get('error') or v['session_error']}"
        )
        for line in v["lint"]:
            print(f"  lint: {line}")
        inherited = v.get("source_findings") or []
        if inherited:
            print(
                f"  not counted by validation: {len(inherited)} finding(s) of the source model "
                "that compiling does not change (lint the source model to fix them):"
            )
            for line in inherited:
                print(f"    {line}")
