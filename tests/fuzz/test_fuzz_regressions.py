"""Regression cases for crashes the fuzzer found, one row each, replayed through the
same invariant check as the fuzz run (no escaped exception, exit code, no OL099, time).

Rows for bugs in code this suite does not own are ``xfail(strict=True)`` with the reason,
so they turn into failures (and must be un-marked) once the owner fixes them.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import onnx
import pytest

from tests.fuzz import corpus
from tests.fuzz.test_fuzz_models import check_input


def _relu_with_opset(version: int) -> bytes:
    model = onnx.parser.parse_model(corpus._TEXT_SEEDS["relu"])
    model.opset_import[0].version = version
    return model.SerializeToString()


CASES: list[tuple[str, Callable[[], bytes], int]] = [
    # OL204 passed an opset over 2^31 to onnx.defs.get_schema (TypeError, OL099)
    ("opset-2^62", lambda: _relu_with_opset(2**62), 1),
    # OL204 looked up every opset from 10**6 down to 1 (a million schema lookups)
    ("opset-10^6", lambda: _relu_with_opset(10**6), 1),
]


@pytest.mark.parametrize(("build", "exit_code"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_fuzz_regression(build: Callable[[], bytes], exit_code: int) -> None:
    start = time.perf_counter()
    assert check_input(build()) == exit_code
    assert time.perf_counter() - start < 10


def _reference_attribute() -> bytes:
    """A LeakyRelu whose ``alpha`` is a reference (``ref_attr_name``) outside any function."""
    model = onnx.parser.parse_model(corpus._TEXT_SEEDS["relu"])
    node = model.graph.node[0]
    node.op_type = "LeakyRelu"
    attr = node.attribute.add(name="alpha", type=onnx.AttributeProto.FLOAT)
    attr.ref_attr_name = "missing"
    return model.SerializeToString()


@pytest.mark.parametrize("ep", ["cpu", "qnn"])
def test_reference_attribute_outside_a_function_does_not_crash_ep_rules(ep: str) -> None:
    """Found by the fuzzer (attribute-type mutation on the 'relu' seed, --ep cpu). Checked
    directly, because the fuzz run lists this crash as known (KNOWN_FAILURES)."""
    import onnxlint

    report = onnxlint.lint(_reference_attribute(), eps=[ep], config={})
    assert [d.message for d in report.diagnostics if d.code == "OL099"] == []


_FUNCTION_CALL = """\
<ir_version: 8, opset_import: ["" : 17, "local" : 1]>
g (float[{dim}] x) => (float[{dim}] y) {{
    [call] y = local.Double(x)
}}
<domain: "local", opset_import: ["" : 17]>
Double (a) => (b) {{
    b = Add(a, a)
}}
"""


@pytest.mark.slow
def test_huge_tensor_into_a_local_function_stays_bounded() -> None:
    """Found by the fuzzer (dims mutation on the 'function' seed). Under the memory
    ceiling of conftest.py the allocation fails inside onnx and shows up as bad_alloc."""
    import onnxlint

    model = onnx.parser.parse_model(_FUNCTION_CALL.format(dim=10**9))
    start = time.perf_counter()
    report = onnxlint.lint(model, config={})
    messages = [d.message for d in report.diagnostics]
    assert not any("bad_alloc" in m for m in messages), messages
    assert time.perf_counter() - start < 10


def _oversized_constant() -> bytes:
    """The fuzzer's seed 4 with a Constant that declares 2^31 int64 elements and holds one."""
    model = onnx.parser.parse_model(
        """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (float[2] y) {
    [z] zero = Constant <value = int64[1] {0}> ()
    [seq] s = SequenceConstruct (x, x)
    [at] y = SequenceAt (s, zero)
}
"""
    )
    model.graph.node[0].attribute[0].t.dims[:] = [2**31]
    return model.SerializeToString()


def test_tensor_larger_than_its_data_never_reaches_ort() -> None:
    """Found by the fuzzer on the oldest supported ORT (1.24.1): the level-1 worker handed
    this model to ORT, which tried to allocate the declared 16 GiB (bad_alloc, OL605).
    It is now an OL109 error, and neither the level-1 worker nor a session sees it."""
    import onnxlint
    from onnxlint.analyses.level1 import skip_reason

    data = _oversized_constant()
    assert "OL109" in (skip_reason(onnx.load_from_string(data)) or "")
    assert check_input(data, eps=("cuda",)) == 1
    report = onnxlint.lint(data, eps=["cuda"], config={})
    codes = {d.code for d in report.diagnostics}
    assert "OL109" in codes and "OL605" not in codes, codes
