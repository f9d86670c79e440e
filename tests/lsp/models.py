"""Small models for the language-server tests, written as ONNX text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import onnx

OPSET = '<ir_version: 8, opset_import: ["" : 17]>'

GOOD = f"""{OPSET}
good (float[N,4] x) => (float[N,4] y) {{
   [relu0] y = Relu (x)
}}
"""

# FancyOp does not exist in ai.onnx: OL204 on main/mystery0
BAD = f"""{OPSET}
bad (float[N,4] x) => (float[N,4] y) {{
   [relu0] r = Relu (x)
   [mystery0] y = FancyOp (r)
}}
"""

NESTED = f"""{OPSET}
nested (float[4] x, bool c) => (float[4] y) {{
   [neg0] n = Neg (x)
   [if0] y = If (c) <
      then_branch = then_g () => (float[4] t) {{
         [then_abs] t = Abs (n)
      }},
      else_branch = else_g () => (float[4] e) {{
         [else_fancy] e = FancyOp (n)
      }}
   >
}}
"""


def write_model(path: Path, text: str) -> Path:
    onnx.save(onnx.parser.parse_model(text), str(path))
    return path


def count_shapes(monkeypatch: Any) -> list[bool]:
    """Each Shapes analysis computed from now on (not taken over from an edit's previous
    result), as whether ORT's symbolic answer was part of it."""
    from onnxlint.analyses.shapes import Shapes

    computed: list[bool] = []
    original = Shapes._compute

    def compute(self: Shapes, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        computed.append(self.used_symbolic)

    monkeypatch.setattr(Shapes, "_compute", compute)
    return computed


def lint_edit(doc: Path, text: str, settings: Any, prior: Any = None) -> Any:
    """The language server's analysis of ``text`` as the document ``doc``, from ``prior``
    (the previous state of that document, whose edit the server may take over) or afresh."""
    from onnxlint.lsp.workspace import analyse, path_to_uri

    return analyse(
        path_to_uri(doc),
        doc,
        text.encode(),
        settings,
        previous=prior.source if prior is not None else None,
        prior=prior,
    )
