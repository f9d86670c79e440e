"""The three ways to silence a finding, as documented in docs/training-repos.md.

Each case silences OL204 on node ``win`` of ``models/legacy/bad.onnx`` and must
leave the other finding (OL105 on tensor ``unused_w``) alone: a suppression
that hides more than it names is a bug.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import BAD_TEXT, run_cli, write_model

SEL = ("--select", "OL105,OL204")


def _codes(folder: Path) -> list[str]:
    res = run_cli("models", *SEL, "--format", "json", cwd=folder)
    assert res.returncode in (0, 1), res.stderr
    return sorted(d["code"] for f in json.loads(res.stdout)["files"] for d in f["diagnostics"])


@pytest.mark.parametrize(
    ("config", "metadata", "expected"),
    [
        pytest.param("", None, ["OL105", "OL204"], id="nothing-silenced"),
        pytest.param(
            '[per-file-ignores]\n"models/legacy/*.onnx" = ["OL204"]\n',
            None,
            ["OL105"],
            id="per-file-glob",
        ),
        pytest.param(
            '[per-file-ignores]\n"models/other/*.onnx" = ["OL204"]\n',
            None,
            ["OL105", "OL204"],
            id="per-file-other-folder",
        ),
        pytest.param(
            '[per-node-ignores]\n"win" = ["OL204"]\n', None, ["OL105"], id="per-node-name"
        ),
        pytest.param(
            '[per-node-ignores]\n"main/w*" = ["OL2"]\n', None, ["OL105"], id="per-node-path-prefix"
        ),
        pytest.param(
            '[per-node-ignores]\n"act" = ["OL204"]\n',
            None,
            ["OL105", "OL204"],
            id="per-node-other-node",
        ),
        pytest.param("", {"onnxlint:ignore": "OL204"}, ["OL105"], id="inline-metadata"),
        pytest.param("", {"onnxlint:ignore": "OL105, OL204"}, [], id="inline-metadata-comma-list"),
        pytest.param("", {"onnxlint:ignore": "OL3"}, ["OL105", "OL204"], id="inline-other-code"),
    ],
)
def test_suppression_mechanisms(
    tmp_path: Path, config: str, metadata: dict[str, str] | None, expected: list[str]
) -> None:
    (tmp_path / "onnxlint.toml").write_text(config)
    write_model(tmp_path / "models" / "legacy", "bad.onnx", BAD_TEXT, metadata=metadata)
    assert _codes(tmp_path) == expected


def test_inline_marker_travels_with_the_model(tmp_path: Path) -> None:
    """The metadata marker needs no config: it works wherever the file is linted."""
    write_model(tmp_path / "models", "bad.onnx", BAD_TEXT, metadata={"onnxlint:ignore": "OL204"})
    res = run_cli(
        str(tmp_path / "models" / "bad.onnx"),
        *SEL,
        "--isolated",
        "--format",
        "json",
        cwd=tmp_path.parent,
    )
    codes = [d["code"] for d in json.loads(res.stdout)["files"][0]["diagnostics"]]
    assert codes == ["OL105"]
