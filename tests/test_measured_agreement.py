"""The shipped CPU, QNN HTP and OpenVINO CPU profiles agree with the real EPs.

``onnxlint probe`` writes what a real EP claimed on ~1,800 single-node models to
``rules/measured/<ep>.json``; ``tools/agreement.py`` rebuilds the same
models and evaluates them with the shipped profile. Claimed vs not claimed must
agree on at least 98% of the comparable models. No EP session is created here,
but ~1,800 models are built and shape-inferred, hence ``slow``.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from onnxlint.data import data_dir

RULES = data_dir()
TOOL = Path(__file__).resolve().parent.parent / "tools" / "agreement.py"


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("onnxlint_agreement_tool", TOOL)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses resolve string annotations through it
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
@pytest.mark.parametrize(
    ("measured", "profile"), [("cpu", "cpu"), ("qnn", "qnn-htp"), ("openvino", "openvino-cpu")]
)
def test_profile_agrees_with_the_real_ep(measured: str, profile: str) -> None:
    path = RULES / "measured" / f"{measured}.json"
    if not path.exists():
        pytest.skip(f"no measurement at rules/measured/{measured}.json (run onnxlint probe)")
    if not TOOL.exists():
        pytest.skip("tools/agreement.py is not part of this installation")
    tool = _tool()
    result = tool.agreement(json.loads(path.read_text(encoding="utf-8")), profile)
    assert result.total > 1000, "the measurement should cover the ONNX node test cases"
    assert result.ratio >= 0.98, tool.report(result, show=20)
