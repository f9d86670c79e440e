"""Unknown means error: every bad selector, value or config file exits 2 with one line and a
suggestion, before any model is linted (a typo must never turn a gate green)."""

from __future__ import annotations

from pathlib import Path

import pytest

from onnxlint import cli

DYNAMIC = (
    '<ir_version: 8, opset_import: ["" : 17]>\n'
    "g (float[batch, 3] x) => (float[batch, 3] y) {\n [r] y = Relu(x)\n}"
)


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "m.onnxtxt"
    path.write_text(DYNAMIC)
    return path


def _usage_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    assert code == cli.EXIT_USAGE, out + err
    assert out == ""  # no report: nothing was linted under a misread setting
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--select", "OL999"], ["--select", "'OL999'", "did you mean"]),
        (["--select", "OL3,OL0x"], ["--select", "'OL0x'"]),
        (["--ignore", "OL3011"], ["--ignore", "did you mean 'OL301'"]),
        (["--extend-ignore", "shapez"], ["--extend-ignore", "did you mean 'shapes'"]),
        (["--select", "dynamic-input-shap"], ["did you mean 'dynamic-input-shape'"]),
        (["--severity", "OL999=error"], ["--severity", "'OL999'"]),
        (["--severity", "OL3=error"], ["--severity", "code or rule name 'OL3'"]),
        (["--ep", "qnx"], ["unknown execution provider 'qnx'", "did you mean 'qnn'"]),
        (["--target-ort", "abc"], ["--target-ort", "'abc' is not an ONNX Runtime version"]),
        (["--assume-dim", "bach=2"], ["--assume-dim", "'bach'", "did you mean 'batch'"]),
        (["--assume-dim", "nosuchdim=2"], ["'nosuchdim'", "the inputs declare: batch"]),
        (["-j", "0"], ["-j/--jobs", "at least 1"]),
        (["-j", "many"], ["-j/--jobs"]),
        (["--selec", "OL3"], ["unrecognized arguments: --selec"]),  # no abbreviations
    ],
)
def test_bad_flag_values_exit_2_with_a_suggestion(
    capsys: pytest.CaptureFixture[str], model: Path, args: list[str], needles: list[str]
) -> None:
    line = _usage_error(capsys, str(model), "--isolated", *args)
    for needle in needles:
        assert needle in line


def test_good_values_still_lint(capsys: pytest.CaptureFixture[str], model: Path) -> None:
    code = cli.main(
        [str(model), "--isolated", "--select", "OL3,shapes,dynamic-input-shape", "--assume-dim",
         "batch=2", "--severity", "OL301=warning", "--target-ort", "1.20", "-j", "1"]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == cli.EXIT_OK, out + err
    assert "Checked 1 model" in out


@pytest.mark.parametrize(
    ("name", "text", "needles"),
    [
        ("onnxlint.toml", 'select = ["OL9999"]\n', ["onnxlint.toml: select", "'OL9999'"]),
        ("onnxlint.toml", 'ignore = ["shapez"]\n', ["ignore", "did you mean 'shapes'"]),
        ("onnxlint.toml", '[severity]\nOL30 = "error"\n', ["severity", "'OL30'"]),
        ("onnxlint.toml", "[rules.OL3010]\nx = 1\n", ["rules", "'OL3010'"]),
        ("onnxlint.toml", '[per-file-ignores]\n"*.onnx" = ["OL0x"]\n', ["per-file-ignores"]),
        ("onnxlint.toml", '[per-node-ignores]\n"Relu*" = ["nope"]\n', ["per-node-ignores"]),
        ("onnxlint.toml", 'target-ort = "abc"\n', ["target-ort", "does not match"]),
        ("onnxlint.toml", "select = [\n", ["onnxlint.toml"]),  # not TOML
        ("pyproject.toml", "[tool.onnxlint\nselect = 1\n", ["pyproject.toml"]),  # not TOML
        ("pyproject.toml", '[tool.onnxlint]\nselect = ["OL999"]\n', ["'OL999'"]),
    ],
)
def test_bad_config_files_exit_2(
    capsys: pytest.CaptureFixture[str], model: Path, name: str, text: str, needles: list[str]
) -> None:
    (model.parent / name).write_text(text)
    line = _usage_error(capsys, str(model))
    for needle in needles:
        assert needle in line


def test_unparseable_pyproject_is_not_skipped(
    capsys: pytest.CaptureFixture[str], model: Path
) -> None:
    from onnxlint.config import find_config_file

    broken = model.parent / "pyproject.toml"
    broken.write_text("[project\n")
    assert find_config_file(model) == broken
    _usage_error(capsys, str(model))
    assert cli.main([str(model), "--isolated"]) == cli.EXIT_OK  # --isolated reads no file


def test_api_rejects_unknown_selectors_too() -> None:
    import onnx

    from onnxlint import lint
    from onnxlint.engine import UsageError

    with pytest.raises(UsageError, match="did you mean 'OL301'"):
        lint(onnx.parser.parse_model(DYNAMIC), config={"select": ["OL3011"]})
