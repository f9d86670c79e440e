"""Refusals that ORT's default constant folding makes moot are hints, not warnings."""

from __future__ import annotations

import onnxlint
from onnxlint.diagnostics import Severity

from ..conftest import parse

# ConstantOfShape over a constant shape: folded by ORT at its default level, so QNN never sees it.
FOLDED = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[2,4] x) => (float[2,4] y) <int64[2] shp = {2, 4}> {
    [cos] c = ConstantOfShape <value: tensor = float[1] {1.0}> (shp)
    [add] y = Add(x, c)
}
"""
# the same op over a runtime shape: a real fallback
RUNTIME = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[2,4] x) => (float[2,4] y) {
    [sh] s = Shape(x)
    [cos] c = ConstantOfShape <value: tensor = float[1] {1.0}> (s)
    [add] y = Add(x, c)
}
"""
# BatchNormalization whose scale is computed from constants: a constant after folding
BN_FOLDED_SCALE = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,2,4,4] x) => (float[1,2,4,4] y)
  <int64[1] n = {2}, float[2] b = {0.0, 0.0}, float[2] m = {0.0, 0.0}, float[2] v = {1.0, 1.0}> {
    [scale] s = ConstantOfShape <value: tensor = float[1] {1.0}> (n)
    [bn] y = BatchNormalization(x, s, b, m, v)
}
"""


def _find(text: str, code: str, node: str) -> list[onnxlint.Diagnostic]:
    report = onnxlint.lint(parse(text), eps=["qnn"], config={})
    return [d for d in report.diagnostics if d.code == code and d.location.node_name == node]


def test_folded_constant_computation_is_a_hint() -> None:
    [d] = _find(FOLDED, "OL501", "cos")
    assert d.severity is Severity.HINT
    assert "optimizations disabled" in d.message


def test_runtime_computation_stays_a_warning() -> None:
    found = [d for d in _find(RUNTIME, "OL501", "cos") + _find(RUNTIME, "OL504", "cos")]
    assert found and all(d.severity is Severity.WARNING for d in found)


def test_constant_input_computed_from_constants_is_a_hint() -> None:
    found = _find(BN_FOLDED_SCALE, "OL504", "bn")
    assert found and all(d.severity is Severity.HINT for d in found)
