"""Which files a lint reads and writes: model files under the paths given, and the outputs
that must not replace a model or its weights."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

MODEL_SUFFIXES = (".onnx", ".onnxtxt")


_SKIP_DIRS = {".git", ".venv", "node_modules", "__pycache__", ".onnxlint-cache"}


def iter_model_files(paths: Sequence[str]) -> Iterator[Path]:
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = []
            for root, dirs, files in os.walk(p):
                dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
                found += [Path(root) / f for f in files if f.lower().endswith(MODEL_SUFFIXES)]
            yield from sorted(found)
        else:
            yield p  # missing files become OL001 diagnostics


def _weights_of(files: list[Path], targets: list[Path]) -> list[Path]:
    """The external-data files of the binary models among ``files`` that an existing
    ``targets`` file could be: only models whose folder holds a target are read (through
    the loader), so a run that writes elsewhere decodes nothing twice."""
    from onnxlint.loader import TEXT_SUFFIXES, load
    from onnxlint.modelfile.external import external_data_files

    existing = [t.resolve() for t in targets if t.is_file()]
    out: list[Path] = []
    for f in files:
        if f.suffix.lower() in TEXT_SUFFIXES:
            continue
        folder = f.resolve().parent
        if not any(folder in t.parents for t in existing):
            continue  # external data lives in the model's folder or below it
        try:
            out += external_data_files(load(f))
        except Exception:  # the lint itself reports what is wrong with the file
            continue
    return out


def check_outputs(args: argparse.Namespace, files: list[Path]) -> str | None:
    """Why a file this run would write (``-o``, ``--html``, ``--write-baseline``) cannot
    be written, checked before any linting: a folder, a link, a model of this run, a
    read-only folder. None when all can be."""
    from onnxlint.fsutil import check_writable, write_error

    targets = [("", args.output), ("", getattr(args, "html", None))]
    targets.append(("baseline ", getattr(args, "write_baseline", None)))
    named = [Path(target) for _, target in targets if target]
    if named:
        files = [*files, *_weights_of(files, named)]
    for what, target in targets:
        if target:
            try:
                check_writable(Path(target), files)
            except OSError as exc:
                return write_error(f"{what}{target}", exc)
    return None
