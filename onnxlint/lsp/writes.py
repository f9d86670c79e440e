"""What the language server writes or edits besides its replies: the rule docs it links
to, the configuration file a suppression goes into, and the new model a fix writes.

The server never writes over a user's file: a suppression is an edit the editor
applies, a fix writes a new file next to the model.
"""

from __future__ import annotations

import logging
import stat
from pathlib import Path
from typing import Any

from onnxlint.limits import Limits
from onnxlint.lsp.workspace import file_stamp, read_model_bytes
from onnxlint.version import __version__

log = logging.getLogger("onnxlint.lsp")

#: a configuration file larger than this gets no suppression edits
CONFIG_MAX_BYTES = 1 << 20


def suppression_target(model: Path, roots: list[Path]) -> tuple[Path, str | None, str] | None:
    """The configuration file a suppression goes into, its text (None: to create), the model's key.

    None when the configuration file exists but cannot be read as text (a FIFO, a
    device, not UTF-8, over a megabyte): no edit is offered for it.
    """
    from onnxlint.config import find_config_file

    found = find_config_file(model)
    if found is None:
        root = next((r for r in roots if r in model.parents), model.parent)
        found, text = root / "onnxlint.toml", None
    else:
        # read like a model: a FIFO or device named pyproject.toml never blocks the server
        raw = read_model_bytes(found, Limits(max_file_bytes=CONFIG_MAX_BYTES))
        if raw is None:
            what = file_stamp(found)
            if what is None or what[:2] != (stat.S_IFREG, 0):
                return None
            raw = b""  # an empty file (the reader only returns content)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
    try:
        rel = model.resolve().relative_to(found.parent.resolve()).as_posix()
    except ValueError:
        rel = model.name
    return found, text, rel


def fix_available() -> bool:
    """Whether the automated fixes package exists in this build (it is optional)."""
    import importlib.util

    return importlib.util.find_spec("onnxlint.fixes") is not None


def apply_fix(model: Path, fix: dict[str, Any]) -> Path:
    """Run the fix a diagnostic names and write the result beside ``model`` (a new file)."""
    from onnxlint.fixes import fix_shapes
    from onnxlint.fsutil import atomic_write_bytes
    from onnxlint.loader import load

    if fix.get("action") != "fix-shapes":
        raise ValueError(f"no automated fix for {fix.get('action')!r}")
    dims = (fix.get("args") or {}).get("dims") or {}
    if not dims or not all(isinstance(v, int) for v in dims.values()):
        raise ValueError("the fix needs a value for each dynamic dimension: run the command shown")
    loaded = load(model)  # never reads external data: references are kept as they are
    if loaded.model is None:
        raise ValueError(f"cannot load {model.name}")
    result = fix_shapes(loaded.model, dims=dims)
    out = new_file_beside(model, ".static")
    atomic_write_bytes(out, result.model.SerializeToString())
    return out


def new_file_beside(model: Path, tag: str) -> Path:
    """``model.static.onnx``, or ``model.static-2.onnx`` ... when that exists: never overwrite."""
    candidate = model.with_name(f"{model.stem}{tag}{model.suffix}")
    n = 2
    while candidate.exists():
        candidate = model.with_name(f"{model.stem}{tag}-{n}{model.suffix}")
        n += 1
    return candidate


# -- rule docs ----------------------------------------------------------------------------
def write_rule_docs(base: Path | None = None) -> Path | None:
    """Write each rule's documentation as Markdown into a per-user cache folder, once per version.

    ``codeDescription`` links point at these pages, so the docs open in the
    editor without a network. Returns None when nothing can be written.
    """
    from onnxlint.fsutil import atomic_write_text
    from onnxlint.rule import all_rules

    if base is None:
        from onnxlint.cachefs import cache_root, make_private_dir

        base = cache_root() / "rule-docs" / __version__
    try:
        make_private_dir(base)
        for cls in all_rules():
            page = base / f"{cls.code}.md"
            text = cls.docs_markdown()
            if not page.is_file() or page.read_text("utf-8") != text:
                atomic_write_text(page, text)
    except OSError as exc:
        log.warning("rule docs not written: %s", exc)
        return None
    return base
