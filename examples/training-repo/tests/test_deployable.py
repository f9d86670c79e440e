"""The training repo's deployment gate: runs with the rest of the test suite.

pytest                      # checks for the EPs in [tool.pytest.ini_options] onnxlint_ep
pytest --onnxlint-ep cpu    # or for another EP, without editing a file
"""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip(
    "torch", reason="torch is not installed (pip install 'onnxlint[torch]')"
)

from tinynet import TinyNet  # noqa: E402
from tinynet.model import example_input  # noqa: E402

import onnxlint.torch  # noqa: E402
from onnxlint.testing import assert_deployable  # noqa: E402

MODELS = Path(__file__).resolve().parent.parent / "models"


def test_tinynet_exports_for_the_target_ep() -> None:
    # exported in memory at the best opset for the EP; fails with node, reason and fix
    report = onnxlint.torch.check_export(
        TinyNet().eval(), (example_input(),), ep=None, dynamo=False
    )
    assert_deployable(report)


def test_committed_models_are_deployable(onnxlint_report) -> None:
    for path in sorted(MODELS.glob("*.onnx")):
        assert_deployable(path)
    # the fixture lints without failing, for models that are only reported on
    onnxlint_report(MODELS / "legacy.onnxtxt")
