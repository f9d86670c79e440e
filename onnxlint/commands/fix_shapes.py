"""``onnxlint fix-shapes``: write a copy of a model with its dynamic dims fixed, then lint it.

    onnxlint fix-shapes in.onnx -o out.onnx --dim batch=1 --dim sequence=128
    onnxlint fix-shapes in.onnx -o out.onnx --input pixel_values=1,3,224,224

The input file is never modified unless ``--in-place`` is given; the output is
written atomically (a temporary file renamed into place), and an existing
output file is only replaced with ``--force``. The equivalent ONNX Runtime
session options are printed for those who would rather not rewrite the model.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import stat
import sys
from pathlib import Path

NAME = "fix-shapes"
HELP = "write a copy of a model with dynamic dims made static (and lint it)"

EXIT_OK, EXIT_USAGE = 0, 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help="the model to read (.onnx or .onnxtxt)")
    parser.add_argument("-o", "--output", help="where to write the fixed model")
    parser.add_argument(
        "--dim",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="fix a named (symbolic) dim everywhere it occurs, e.g. --dim batch=1 (repeatable)",
    )
    parser.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=D0,D1,...",
        help="give a graph input a whole static shape, e.g. --input x=1,3,224,224 (repeatable)",
    )
    parser.add_argument(
        "--in-place", action="store_true", help="overwrite the input model (atomically)"
    )
    parser.add_argument("--force", action="store_true", help="replace an existing output file")
    parser.add_argument(
        "--no-fold",
        action="store_true",
        help="only fix the dims; keep Shape->...->Reshape size computations as they are",
    )
    parser.add_argument(
        "--ep",
        action="append",
        dest="eps",
        default=[],
        metavar="EP",
        help="lint the result for these execution providers (repeatable)",
    )
    parser.add_argument("--no-lint", action="store_true", help="do not lint the result")


def _parse_dims(items: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ValueError(f"--dim expects NAME=VALUE, got {item!r}")
        try:
            number = int(value.strip())
        except ValueError:
            raise ValueError(
                f"--dim {item}: the value must be a positive integer (the size you deploy with)"
            ) from None
        if number < 1:
            raise ValueError(f"--dim {item}: the value must be a positive integer")
        if name in out and out[name] != number:
            raise ValueError(f"--dim {name} given twice with different values")
        out[name] = number
    return out


def _parse_inputs(items: list[str]) -> dict[str, tuple[int, ...]]:
    out: dict[str, tuple[int, ...]] = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name or not value.strip():
            raise ValueError(f"--input expects NAME=D0,D1,..., got {item!r}")
        try:
            dims = tuple(int(v) for v in value.split(",") if v.strip() != "")
        except ValueError:
            raise ValueError(f"--input {item}: dims must be integers separated by commas") from None
        if any(d < 0 for d in dims):
            raise ValueError(f"--input {item}: dims must be non-negative")
        out[name] = dims
    return out


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (b.exists() and a.samefile(b))
    except OSError:
        return False


def _mode_for(src: Path, out: Path) -> int:
    """Permissions for the written model: the input's when replacing it, else the umask's."""
    if _same_file(src, out):
        with contextlib.suppress(OSError):
            return stat.S_IMODE(src.stat().st_mode)
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _err(message: str) -> int:
    print(f"onnxlint fix-shapes: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def run(args: argparse.Namespace) -> int:
    import onnx

    from onnxlint.fixes.shapes import FixShapesError, fix_shapes, ort_session_options
    from onnxlint.fsutil import atomic_write_bytes, atomic_write_text, check_writable, write_error
    from onnxlint.loader import load
    from onnxlint.tensors import has_external_data

    src = Path(args.model)
    try:
        dims = _parse_dims(args.dim)
        inputs = _parse_inputs(args.input)
    except ValueError as exc:
        return _err(str(exc))
    if not dims and not inputs:
        return _err("nothing to fix: give at least one --dim NAME=VALUE or --input NAME=D0,D1,...")
    if args.output is None and not args.in_place:
        return _err("give -o OUTPUT (or --in-place to overwrite the input)")
    out = Path(args.output) if args.output else src
    if _same_file(src, out) and not args.in_place:
        return _err(
            f"cannot write {out}: refusing to overwrite the input model {src}; "
            "pass --in-place to do that"
        )
    if out.exists() and not _same_file(src, out) and not args.force:
        return _err(f"{out} exists; pass --force to replace it")
    try:  # a folder, a link, a read-only folder: before the work, not after it
        check_writable(out, () if args.in_place else (src,))
    except OSError as exc:
        return _err(write_error(out, exc))

    from onnxlint.config import discover

    try:
        limits = discover(src).limits
    except ValueError as exc:  # ConfigError is a ValueError
        return _err(str(exc))
    loaded = load(src, limits)
    if loaded.model is None:
        for d in loaded.diagnostics:
            print(f"{d.code} {d.message}", file=sys.stderr)
        return _err(f"cannot read {src}")
    model = loaded.model
    external = has_external_data(model)  # any tensor: Constants and subgraphs too
    if external and not _same_file(src.parent, out.parent):
        return _err(
            "the model keeps its weights in external files, which are referenced relative to "
            "the model: write the output into the same folder as the input"
        )

    try:
        result = fix_shapes(model, dims, inputs, fold=not args.no_fold)
    except FixShapesError as exc:
        return _err(str(exc))

    mode = _mode_for(src, out)
    try:
        if out.suffix.lower() in (".onnxtxt", ".onnxtext"):
            atomic_write_text(out, onnx.printer.to_text(result.model))
        else:
            atomic_write_bytes(out, result.model.SerializeToString())
    except OSError as exc:  # full disk, read-only folder, a folder named like the output
        return _err(write_error(out, exc))
    with contextlib.suppress(OSError):
        os.chmod(out, mode)  # the temporary file behind the atomic write is private (0600)

    print(f"wrote {out}")
    for name, value in result.dims.items():
        print(f"  dim {name!r} = {value}")
    for name, shape in result.inputs.items():
        print(f"  input {name!r}: {list(shape)}")
    if result.folded:
        print(f"  replaced {len(result.folded)} computed size input(s) by constants:")
        for line in result.folded:
            print(f"    {line}")
    if result.removed_nodes:
        print(f"  removed {result.removed_nodes} node(s) left unused by that")
    for left in result.remaining.values():
        print(f"  still dynamic: {', '.join(left)}")
    for error in result.inference_errors[:1]:
        print(f"  shape inference on the result reported: {error}")
    if result.dims:
        print("\nThe same without rewriting the model (ONNX Runtime session options):")
        print("  " + ort_session_options(result.dims).replace("\n", "\n  "))

    if not args.no_lint:
        from onnxlint.engine import UsageError, lint
        from onnxlint.render import render

        try:
            report = lint(out, eps=args.eps, config=discover(out), path_label=str(out))
        except (UsageError, ValueError) as exc:  # ConfigError is a ValueError
            return _err(str(exc))
        print()
        sys.stdout.write(render([report], "table", color=False))
    return EXIT_OK
