"""Case table for the opset rules (OL2xx); each message names the opset that would work."""

from __future__ import annotations

import pytest

import onnxlint
from onnxlint.data import load_json
from onnxlint.diagnostics import Severity

from ..conftest import parse

NEWEST_ROW = load_json("ort_versions.json")["releases"][-1]
NEWEST = NEWEST_ROW["ort"]
BODY = "g (float[1,4] x) => (float[1,4] y) {\n [r] y = Relu(x)\n}"

#: a QOperator Gemm whose bias (input 6) has the element type ``bias``
QGEMM = (
    '<ir_version: 8, opset_import: ["" : 17, "com.microsoft" : 1]>\n'
    "g (uint8[2,4] a, int8[3,4] b, {bias}[3] c) => (uint8[2,3] y)\n"
    "<float s = {{0.1}}, uint8 za = {{128}}, int8 zb = {{0}}, uint8 zy = {{128}}> {{\n"
    " [q] y = com.microsoft.QGemm <transB: int = 1> (a, s, za, b, s, zb, c, s, zy)\n}}"
)

CASES = [
    (
        "opset-too-new-for-1.17",
        {"select": ["OL201"], "target-ort": "1.17"},
        '<ir_version: 8, opset_import: ["" : 21]>\n' + BODY,
        [
            (
                "OL201",
                "model imports ai.onnx opset 21, but ONNX Runtime 1.17 supports up to 20; "
                "re-export with opset_version=20 (or target ONNX Runtime >= 1.18)",
            )
        ],
    ),
    (
        "opset-ok-for-1.18",
        {"select": ["OL201"], "target-ort": "1.18"},
        '<ir_version: 8, opset_import: ["" : 21]>\n' + BODY,
        [],
    ),
    (
        "ir-too-new",
        {"select": ["OL202"], "target-ort": "1.16"},
        '<ir_version: 10, opset_import: ["" : 17]>\n' + BODY,
        [
            (
                "OL202",
                "model IR version 10 is newer than ONNX Runtime 1.16 loads (max 9); "
                "save with ir_version=9 or export with opset_version=19",
            )
        ],
    ),
    (
        "opset-newer-than-the-table-is-assumed",
        {"select": ["OL201"], "target-ort": "9.0"},
        '<ir_version: 8, opset_import: ["" : 99]>\n' + BODY,
        [
            (
                "OL201",
                f"model imports ai.onnx opset 99; ONNX Runtime 9.0 is newer than onnxlint's "
                f"table, which is assumed from {NEWEST} (up to {NEWEST_ROW['max_opset']}): check "
                f"that 9.0 loads it, or re-export with opset_version={NEWEST_ROW['max_opset']}",
            )
        ],
    ),
    (
        "ir-newer-than-the-table-is-assumed",
        {"select": ["OL202"], "target-ort": "9.0"},
        '<ir_version: 99, opset_import: ["" : 17]>\n' + BODY,
        [
            (
                "OL202",
                f"model IR version 99; ONNX Runtime 9.0 is newer than onnxlint's table, which is "
                f"assumed from {NEWEST} (max {NEWEST_ROW['max_ir']}): check that 9.0 loads it, "
                f"or save with ir_version={NEWEST_ROW['max_ir']}",
            )
        ],
    ),
    (
        "custom-domain",
        {"select": ["OL203"]},
        '<ir_version: 8, opset_import: ["" : 17, "com.acme" : 1]>\n'
        "g (float[1,4] x) => (float[1,4] y) {\n [f] y = com.acme.Fancy(x)\n}",
        [
            (
                "OL203",
                "operator Fancy is in domain 'com.acme', which ONNX Runtime does not implement; it needs a custom-op library",
            )
        ],
    ),
    (
        "contrib-domain-is-known",
        {"select": ["OL203"]},
        '<ir_version: 8, opset_import: ["" : 17, "com.microsoft" : 1]>\n'
        "g (float[1,4] x) => (float[1,4] y) {\n [f] y = com.microsoft.Gelu(x)\n}",
        [],
    ),
    (
        "op-introduced-later",
        {"select": ["OL204"]},
        '<ir_version: 8, opset_import: ["" : 13]>\n'
        "g (int64 n) => (float[4] y) {\n [win] y = HannWindow(n)\n}",
        [
            (
                "OL204",
                "HannWindow does not exist at ai.onnx opset 13; it was introduced in opset 17: re-export with opset_version=17",
            )
        ],
    ),
    (
        "op-ort-registers-older",
        {"select": ["OL204"]},
        '<ir_version: 8, opset_import: ["" : 13]>\n'
        "g (float[1,4] x, float[4] s, float[4] b) => (float[1,4] y) {\n [ln] y = LayerNormalization(x, s, b)\n}",
        [
            (
                "OL204",
                "LayerNormalization does not exist at ai.onnx opset 13 (ONNX introduced it in opset 17), but ONNX Runtime registers its own older LayerNormalization in ai.onnx from version 1: the model loads on ONNX Runtime only; re-export with opset_version=17 for other runtimes",
            )
        ],
    ),
    (
        "op-unknown",
        {"select": ["OL204"]},
        '<ir_version: 8, opset_import: ["" : 17]>\n'
        + "g (float[1,4] x) => (float[1,4] y) {\n [f] y = Frobnicate(x)\n}",
        [("OL204", "Frobnicate is not an operator of ai.onnx at any opset")],
    ),
    (
        # ORT registers this contrib kernel in the ai.onnx domain (its transformer optimizer
        # writes it): the model runs on ORT, a warning (the message says so)
        "op-ort-only",
        {"select": ["OL204"]},
        '<ir_version: 8, opset_import: ["" : 17]>\n'
        "g (float[1,4] x, float[4] s) => (float[1,4] y) {\n"
        " [f] y = SimplifiedLayerNormalization <axis: int = -1> (x, s)\n}",
        [
            (
                "OL204",
                "SimplifiedLayerNormalization is not an ONNX operator, but ONNX Runtime registers "
                "a kernel for it in ai.onnx (its own contrib operator): the model runs on ONNX "
                "Runtime only",
            )
        ],
    ),
    (
        "deprecated",
        {"select": ["OL205"]},
        '<ir_version: 8, opset_import: ["" : 10]>\n'
        "g (float[1,1,2,2] x, float[4] s) => (float[1,1,4,4] y) {\n [up] y = Upsample(x, s)\n}",
        [
            (
                "OL205",
                "Upsample is deprecated at ai.onnx opset 10; use Resize (re-export with opset_version=10)",
            )
        ],
    ),
    (
        "mixed-function-opsets",
        {"select": ["OL206"]},
        '<ir_version: 8, opset_import: ["" : 17, "local" : 1]>\n'
        "g (float[1,4] x) => (float[1,4] y) {\n [f] y = local.F(x)\n}\n"
        '<domain: "local", opset_import: ["" : 13]>\nF (a) => (b) {\n b = Relu(a)\n}',
        [
            (
                "OL206",
                "function local.F imports ai.onnx opset 13 but the model imports opset 17; re-export with one opset_version=17",
            )
        ],
    ),
    (
        # ORT's QGemm takes an int32 bias only: a uint8 one (a QOperator quantization of
        # BERT) makes ORT refuse the model on every EP
        "contrib-input-type",
        {"select": ["OL207"]},
        QGEMM.format(bias="uint8"),
        [
            (
                "OL207",
                "input 6 of QGemm ('c') is uint8, which ONNX Runtime's com.microsoft QGemm "
                "schema does not allow there (int32): ORT refuses to load the model",
            )
        ],
    ),
    ("contrib-input-type-ok", {"select": ["OL207"]}, QGEMM.format(bias="int32"), []),
    (
        # a type nobody knows is not checked
        "contrib-input-type-unknown",
        {"select": ["OL207"]},
        '<ir_version: 8, opset_import: ["" : 17, "com.microsoft" : 1, "x" : 1]>\n'
        "g (float[2,4] x) => (float[2,4] y) {\n [m] t = x.Mystery(x)\n"
        " [f] y = com.microsoft.FastGelu(t)\n}",
        [],
    ),
]


@pytest.mark.parametrize(
    ("case_id", "config", "text", "expected"), CASES, ids=[c[0] for c in CASES]
)
def test_opset_rule(case_id: str, config: dict, text: str, expected: list) -> None:
    report = onnxlint.lint(parse(text), config=config)
    assert [(d.code, d.message) for d in report.diagnostics] == expected


def test_an_op_ort_registers_below_onnx_s_opset_is_a_warning() -> None:
    """ORT loads its own older LayerNormalization at opset 13 (real CPU, QNN and OpenVINO
    sessions of optimum's ORTOptimizer O2/O3 of an opset-14 BERT load): not an error."""
    case = next(c for c in CASES if c[0] == "op-ort-registers-older")
    report = onnxlint.lint(parse(case[2]), config=case[1])
    assert [d.severity.name for d in report.diagnostics] == ["WARNING"]


def test_opset_fix_names_the_working_opset() -> None:
    report = onnxlint.lint(parse(CASES[0][2]), config=CASES[0][1])
    fix = report.diagnostics[0].fix
    assert fix is not None and fix.title == "re-export with opset_version=20"


def test_an_assumed_limit_is_a_warning_not_an_error() -> None:
    case = next(c for c in CASES if c[0] == "opset-newer-than-the-table-is-assumed")
    (d,) = onnxlint.lint(parse(case[2]), config=case[1]).diagnostics
    assert d.severity is Severity.WARNING and d.message_id == "assumed"
    assert d.args["known"] == NEWEST


@pytest.mark.parametrize("bias", ["uint8", "int32"])
def test_contrib_input_type_is_what_ort_refuses(bias: str) -> None:
    """OL207 fires exactly where ORT refuses to load the model (a CPU session)."""
    ort = pytest.importorskip("onnxruntime")
    model = parse(QGEMM.format(bias=bias))
    try:
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        refused = ""
    except Exception as exc:
        refused = str(exc)
    flagged = onnxlint.lint(model, config={"select": ["OL207"]}).diagnostics
    assert bool(flagged) == bool(refused), refused
    if refused:
        assert "Type Error: Type 'tensor(uint8)' of input parameter (c)" in refused


def _relu(opset: int, ir: int = 10) -> str:
    return f'<ir_version: {ir}, opset_import: ["" : {opset}]>\n' + BODY


@pytest.mark.parametrize(
    ("opset", "ir", "code"), [(26, 10, "OL201"), (25, 13, None), (25, 14, "OL202")]
)
def test_an_ep_that_ships_its_own_ort_is_checked_against_that_release(
    opset: int, ir: int, code: str | None
) -> None:
    """onnxruntime-openvino 1.24.1 loads ai.onnx up to opset 25 and IR 13 (measured); the
    installed onnxruntime 1.32 loads opset 28 and IR 14. ``--target-ort 1.32`` keeps the
    target's own check quiet, whatever ORT the test runs with."""
    config = {"target_ort": "1.32"}
    from onnxlint.config import Config

    report = onnxlint.lint(
        parse(_relu(opset, ir)), eps=["openvino"], config=Config(eps=("openvino",), **config)
    )
    found = [d for d in report.diagnostics if d.code in ("OL201", "OL202")]
    if code is None:
        assert found == [], [d.message for d in found]
        return
    (d,) = found
    assert d.code == code and d.severity is Severity.ERROR and d.ep == "openvino-cpu"
    assert "ships (1.24.1)" in d.message and "the session fails at load" in d.message
    # the same model with an EP built into ORT: only the target decides
    report = onnxlint.lint(
        parse(_relu(opset, ir)), eps=["qnn"], config=Config(eps=("qnn",), **config)
    )
    assert not [x for x in report.diagnostics if x.code in ("OL201", "OL202")]
