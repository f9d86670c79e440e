"""Which interpreter runs which EP ([tool.onnxlint.runners])."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from onnxlint.runtime.runners import EpSpec, provider_name, resolve_runner, short_name


@pytest.mark.parametrize(
    ("ep", "provider"),
    [
        ("cpu", "CPUExecutionProvider"),
        ("QNN", "QNNExecutionProvider"),
        ("openvino", "OpenVINOExecutionProvider"),
        ("dml", "DmlExecutionProvider"),
        ("TensorrtExecutionProvider", "TensorrtExecutionProvider"),
    ],
)
def test_provider_name(ep: str, provider: str) -> None:
    assert provider_name(ep) == provider


def test_unknown_ep_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown execution provider 'npu9000'.*qnn"):
        provider_name("npu9000")


def test_short_name_round_trip() -> None:
    assert short_name("QNNExecutionProvider") == "qnn"
    assert short_name("OpenVINOExecutionProvider") == "openvino"
    assert short_name("FancyExecutionProvider") == "fancy"


def test_ep_spec_defaults() -> None:
    qnn = EpSpec.for_ep("qnn")
    assert qnn.provider == "QNNExecutionProvider"
    # soc_model avoids QNN_COMMON_ERROR_MEM_ALLOC on larger float graphs.
    assert qnn.options == {"backend_type": "htp", "soc_model": "60"}
    assert qnn.plugin_package == "onnxruntime_qnn"
    assert EpSpec.for_ep("qnn", {"soc_model": "69"}).options["soc_model"] == "69"
    assert EpSpec.for_ep("openvino").options == {"device_type": "CPU"}
    assert EpSpec.for_ep("cpu").to_json() == {
        "provider": "CPUExecutionProvider",
        "options": {},
        "plugin_package": None,
    }


def test_default_runner_is_this_interpreter(tmp_path: Path) -> None:
    assert resolve_runner("qnn", None, root=tmp_path) == sys.executable
    assert resolve_runner("openvino", {}, root=tmp_path) == sys.executable


def test_configured_runner_by_alias_or_provider(tmp_path: Path) -> None:
    table = {"openvino": "envs/ov/bin/python", "QNNExecutionProvider": "/opt/qnn/bin/python"}
    assert resolve_runner("openvino", table, root=tmp_path) == str(tmp_path / "envs/ov/bin/python")
    assert resolve_runner("OpenVINOExecutionProvider", table, root=tmp_path) == str(
        tmp_path / "envs/ov/bin/python"
    )
    assert resolve_runner("qnn", table, root=tmp_path) == "/opt/qnn/bin/python"
    assert resolve_runner("cpu", table, root=tmp_path) == sys.executable


def test_default_key_applies_to_every_ep(tmp_path: Path) -> None:
    assert resolve_runner("cuda", {"default": "/x/python"}, root=tmp_path) == "/x/python"


def test_conventional_openvino_venv_is_found(tmp_path: Path) -> None:
    py = tmp_path / ".venv-openvino" / "bin" / "python"
    py.parent.mkdir(parents=True)
    py.write_text("")
    assert resolve_runner("openvino", None, root=tmp_path) == str(py)
    assert resolve_runner("openvino", None, root=tmp_path, use_conventional=False) == sys.executable


def test_missing_runner_path_is_returned_not_raised(tmp_path: Path) -> None:
    # The client turns a missing interpreter into a structured failure.
    assert resolve_runner("openvino", {"openvino": "nope/python"}, root=tmp_path) == str(
        tmp_path / "nope/python"
    )
