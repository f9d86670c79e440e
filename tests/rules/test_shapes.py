"""Case table for the shape rules (OL3xx): exact diagnostics per model and EP selection."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

import onnxlint

from ..conftest import parse

H = '<ir_version: 8, opset_import: ["" : 17]>\n'
SYMBOLIC_BATCH = H + "g (float[batch, 4] x) => (float[batch, 4] y) {\n [r] y = Relu(x)\n}"
TRANSFORMER_INPUTS = (
    '<ir_version: 8, opset_import: ["" : 17]>\n'
    "g (int64[batch, sequence] input_ids, float[batch, sequence] mask) "
    "=> (float[batch, sequence] y) {\n"
    " [cast] f = Cast<to = 1>(input_ids)\n [mul] y = Mul(f, mask)\n}"
)
UNNAMED_DIMS = H + "g (float[batch, 3, ?, ?] x) => (float[batch, 3, ?, ?] y) {\n [r] y = Relu(x)\n}"
UNKNOWN_RANK = H + "g (float[] x) => (float[] y) {\n [r] y = Relu(x)\n}"
CUSTOM_OP = (
    '<ir_version: 8, opset_import: ["" : 17, "custom" : 1]>\n'
    "g (float[1,4] x) => (float[1,4] y) {\n"
    " [m] t = custom.Mystery(x)\n [r1] u = Relu(t)\n [r2] y = Relu(u)\n}"
)
CONTRIB_OP = (
    '<ir_version: 8, opset_import: ["" : 17, "com.microsoft" : 1]>\n'
    "g (float[1,4] x) => (float[1,4] y) {\n [m] t = com.microsoft.BiasAdd(x, x, x)\n [r] y = Relu(t)\n}"
)
NONZERO = H + "g (float[8] x) => (int64[1, N] y) {\n [nz] y = NonZero(x)\n}"
BAD_ADD = H + "g (float[2,4] x, float[3,5] w) => (float[2,4] y) {\n [add] y = Add(x, w)\n}"
STATIC = H + "g (float[1,4] x) => (float[1,4] y) {\n [r] y = Relu(x)\n}"

QNN = "; QNNExecutionProvider (HTP) needs static shapes"
NNAPI = "; NnapiExecutionProvider needs static shapes"
BATCH_MSG = "graph input 'x' has dynamic dims: x[0] = 'batch'"
CUSTOM_MSG = (
    "the shape of 't' is unknown (no type) although the inputs of this Mystery node have "
    "known shapes; everything downstream inherits it"
)

CASES = [
    # (id, select, eps, config extras, model text, expected [(code, where, severity, ep, message)])
    ("symbolic-batch", "OL3", [], {}, SYMBOLIC_BATCH, [("OL301", "x", "info", None, BATCH_MSG)]),
    (
        "symbolic-batch-qnn",
        "OL3",
        ["qnn"],
        {},
        SYMBOLIC_BATCH,
        [("OL301", "x", "warning", "qnn-htp", BATCH_MSG + QNN)],
    ),
    (
        "symbolic-batch-one-per-ep-that-cares",
        "OL3",
        ["qnn", "nnapi", "cpu"],
        {},
        SYMBOLIC_BATCH,
        [
            ("OL301", "x", "warning", "nnapi", BATCH_MSG + NNAPI),
            ("OL301", "x", "warning", "qnn-htp", BATCH_MSG + QNN),
        ],
    ),
    (
        "symbolic-batch-cuda",
        "OL3",
        ["cuda"],
        {},
        SYMBOLIC_BATCH,
        [("OL301", "x", "info", None, BATCH_MSG)],
    ),
    ("symbolic-batch-assumed", "OL3", ["qnn"], {"assume-dims": {"batch": 1}}, SYMBOLIC_BATCH, []),
    (
        "transformer-inputs",
        "OL301",
        [],
        {},
        TRANSFORMER_INPUTS,
        [
            (
                "OL301",
                "input_ids",
                "info",
                None,
                "graph input 'input_ids' has dynamic dims: input_ids[0] = 'batch', "
                "input_ids[1] = 'sequence'",
            ),
            (
                "OL301",
                "mask",
                "info",
                None,
                "graph input 'mask' has dynamic dims: mask[0] = 'batch', mask[1] = 'sequence'",
            ),
        ],
    ),
    (
        "transformer-inputs-sequence-still-dynamic",
        "OL301",
        [],
        {"assume-dims": {"batch": 1}},
        TRANSFORMER_INPUTS,
        [
            (
                "OL301",
                "input_ids",
                "info",
                None,
                "graph input 'input_ids' has dynamic dims: input_ids[1] = 'sequence'",
            ),
            (
                "OL301",
                "mask",
                "info",
                None,
                "graph input 'mask' has dynamic dims: mask[1] = 'sequence'",
            ),
        ],
    ),
    (
        "unnamed-dims",
        "OL3",
        [],
        {},
        UNNAMED_DIMS,
        [
            (
                "OL301",
                "x",
                "info",
                None,
                "graph input 'x' has dynamic dims: x[0] = 'batch', x[2] = ?, x[3] = ?",
            )
        ],
    ),
    (
        "unknown-rank",
        "OL3",
        ["qnn"],
        {},
        UNKNOWN_RANK,
        [
            (
                "OL302",
                "x",
                "warning",
                "qnn-htp",
                "graph input 'x' has no shape (its rank is unknown)" + QNN,
            )
        ],
    ),
    # only the node where the shape is lost, not r1/r2 downstream
    ("custom-op", "OL3", [], {}, CUSTOM_OP, [("OL303", "main/m", "info", None, CUSTOM_MSG)]),
    (
        "custom-op-qnn",
        "OL303",
        ["qnn"],
        {},
        CUSTOM_OP,
        [("OL303", "main/m", "warning", "qnn-htp", CUSTOM_MSG + QNN)],
    ),
    # ONNX has no schema for com.microsoft.BiasAdd (nor contrib_types a rule); ORT's symbolic
    # inference fills the gap
    ("contrib-op-filled-by-ort", "OL3", ["qnn"], {}, CONTRIB_OP, []),
    # a data-dependent size is OL410's finding, not "shape inference lost track"
    ("nonzero-left-to-ol410", "OL3", [], {}, NONZERO, []),
    (
        "inference-error",
        "OL300",
        [],
        {},
        BAD_ADD,
        [
            (
                "OL300",
                "main",
                "warning",
                None,
                "ONNX shape inference failed: [ShapeInferenceError] Inference error(s): "
                "(op_type:Add, node name: add): [ShapeInferenceError] Incompatible dimensions",
            )
        ],
    ),
    ("static", "OL3", ["qnn"], {}, STATIC, []),
]


def _where(d: onnxlint.Diagnostic) -> str:
    return d.location.node_path or d.location.tensor or d.location.graph


@pytest.mark.parametrize(
    ("case_id", "select", "eps", "extra", "text", "expected"), CASES, ids=[c[0] for c in CASES]
)
def test_shape_rule(
    case_id: str, select: str, eps: list, extra: dict, text: str, expected: list
) -> None:
    report = onnxlint.lint(parse(text), eps=eps, config={"select": [select], **extra})
    got = [(d.code, _where(d), d.severity.label, d.ep, d.message) for d in report.diagnostics]
    assert got == expected


@pytest.mark.parametrize(
    ("text", "extra", "command", "pins"),
    [
        (
            TRANSFORMER_INPUTS,
            {},
            "onnxlint fix-shapes {path} -o {out} --dim batch=1 --dim sequence=N",
            ["('batch', 1)", "('sequence', N)"],
        ),
        (
            TRANSFORMER_INPUTS,
            {"assume-dims": {"sequence": 128}},
            "onnxlint fix-shapes {path} -o {out} --dim batch=1",
            ["('batch', 1)"],
        ),
        (
            UNNAMED_DIMS,
            {},
            "onnxlint fix-shapes {path} -o {out} --dim batch=1 --input x=1,3,N,N",
            ["('batch', 1)"],
        ),
        (UNKNOWN_RANK, {}, "onnxlint fix-shapes {path} -o {out} --input x=N,...", []),
    ],
)
def test_dynamic_shape_findings_carry_the_exact_command(
    tmp_path: Path, text: str, extra: dict, command: str, pins: list
) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(parse(text), path)
    report = onnxlint.lint(path, eps=["qnn"], config={"select": ["OL301", "OL302"], **extra})
    assert report.diagnostics
    out = tmp_path / "m.static.onnx"
    for d in report.diagnostics:
        assert d.fix is not None and d.fix.action == "fix-shapes"
        assert d.fix.command == command.format(path=path, out=out)
        assert d.fix.command in d.fix.title  # renderers show the title
        for pin in pins:
            assert f"add_free_dimension_override_by_name{pin}" in d.fix.title
        ort = d.fix.args["ort_session_options"]
        assert ort.startswith("so = onnxruntime.SessionOptions()") if pins else ort == ""


def test_unknown_shape_origin_carries_a_fix() -> None:
    report = onnxlint.lint(parse(CUSTOM_OP), config={"select": ["OL303"]})
    (diag,) = report.diagnostics
    assert diag.fix is not None and "symbolic_shape_infer" in (diag.fix.command or "")


def test_without_symbolic_inference_ol303_says_so_once_and_reports_no_false_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """When ORT's symbolic inference cannot run (no sympy), the contrib op's unknown shape
    is not blamed on the model: one info says why shape origins are not reported."""
    from onnxlint.analyses import shapes, symbolic_cache

    monkeypatch.setattr(shapes, "symbolic_unavailable", lambda: "sympy is not installed")
    # without sympy no stored answer applies either (its version is part of the key)
    monkeypatch.setattr(symbolic_cache, "_sympy_version", lambda: None)
    report = onnxlint.lint(parse(CONTRIB_OP), eps=["qnn"], config={"select": ["OL3"]})
    (d,) = report.diagnostics
    assert (d.code, d.message_id, d.severity.label) == ("OL303", "symbolic_unavailable", "info")
    assert d.args["reason"] == "sympy is not installed" and d.location.node_path in ("", None)


def test_symbolic_inference_is_available_with_the_declared_dependencies() -> None:
    """sympy is a dependency of onnxlint (pyproject), not a gift of onnxruntime-qnn."""
    from onnxlint.analyses.shapes import symbolic_unavailable

    assert symbolic_unavailable() is None


def _profile_with(tmp_path: Path, consequence: dict[str, str]) -> Path:
    """The shipped QNN HTP profile with its ``refusal_consequence`` replaced."""
    import json

    from onnxlint.data import data_dir
    from onnxlint.profiles import EPS_DIR

    data = json.loads((data_dir() / EPS_DIR / "qnn-htp.json").read_text(encoding="utf-8"))
    data["refusal_consequence"] = consequence
    path = tmp_path / "qnn-variant.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("consequence", "severity"),
    [
        ({"dynamic_shapes": "session_fails"}, "error"),
        ({"dynamic_shapes": "cpu_fallback"}, "warning"),
        ({}, "warning"),  # unstated: ORT hands refused nodes to the next EP
        ({"control_flow": "session_fails"}, "warning"),  # another cause
    ],
)
def test_severity_is_the_consequence_the_profile_states(
    tmp_path: Path, consequence: dict[str, str], severity: str
) -> None:
    """An error only where the profile says the session fails for that cause."""
    profile = _profile_with(tmp_path, consequence)
    report = onnxlint.lint(parse(SYMBOLIC_BATCH), eps=[str(profile)], config={"select": ["OL3"]})
    got = [(d.code, d.severity.label, d.ep) for d in report.diagnostics]
    assert got == [("OL301", severity, "qnn-htp")]


def test_a_refusal_consequence_names_a_known_provenance(tmp_path: Path) -> None:
    from onnxlint.profiles import ProfileError, load_profile_file

    bad = _profile_with(tmp_path, {"dynamic_shapes": "session_fails", "provenance": "nowhere"})
    with pytest.raises(ProfileError, match=r"refusal_consequence\.provenance"):
        load_profile_file(bad)
