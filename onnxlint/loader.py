"""Loading a model for a lint: the guarded read, then its problems as diagnostics.

:func:`onnxlint.modelfile.read.read` reads the bytes and reports what was wrong as
plain records (code, message id, arguments); this module turns those records into the
load rules' diagnostics (``onnxlint.rules.load``). Front ends and the engine load here;
the layers below the rules read with :mod:`onnxlint.modelfile` and never see a rule.
"""

from __future__ import annotations

import os

import onnx

from onnxlint.limits import Limits
from onnxlint.modelfile.read import TEXT_SUFFIXES as TEXT_SUFFIXES
from onnxlint.modelfile.read import LoadedModel as LoadedModel
from onnxlint.modelfile.read import read, read_text
from onnxlint.rules.load import load_diagnostics


def load(
    source: str | os.PathLike[str] | bytes | onnx.ModelProto,
    limits: Limits | None = None,
    root: str | os.PathLike[str] | None = None,
    *,
    hash_proto: bool = True,
    keep_wire: bool = False,
) -> LoadedModel:
    """Load a model from a path, bytes or a ModelProto; never raises for bad input.

    As :func:`~onnxlint.modelfile.read.read`, with ``diagnostics`` holding the load
    rules' findings for the problems it found (``hash_proto``, ``keep_wire``: as there).
    """
    loaded = read(source, limits, root, hash_proto=hash_proto, keep_wire=keep_wire)
    loaded.diagnostics = load_diagnostics(loaded.problems)
    return loaded


def load_text(data: bytes, limits: Limits, label: str = "<document>") -> LoadedModel:
    """An ONNX text document (the language server's editor buffers) as
    :func:`~onnxlint.modelfile.read.read_text` reads it, its records worded by the load
    rules as :func:`load` words a file's."""
    loaded = read_text(data, limits, label)
    loaded.diagnostics = load_diagnostics(loaded.problems)
    return loaded
