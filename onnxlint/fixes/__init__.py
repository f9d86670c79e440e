"""Automated fixes: graph rewrites that return a new model and say what they changed.

A fix never mutates the model it is given and never writes files; front ends
(``onnxlint fix-shapes``, the language server's code actions) decide where the
result goes, always through :mod:`onnxlint.fsutil`.
"""

from __future__ import annotations

from onnxlint.fixes.shapes import (
    FixShapesError,
    FixShapesResult,
    dynamic_dims,
    fix_command,
    fix_shapes,
    ort_session_options,
    request_from_fix_args,
)

__all__ = [
    "FixShapesError",
    "FixShapesResult",
    "dynamic_dims",
    "fix_command",
    "fix_shapes",
    "ort_session_options",
    "request_from_fix_args",
]
