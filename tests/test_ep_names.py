"""One table of EP names (``onnxlint.ep_names``): ``--ep``, runners and sessions agree."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from onnxlint import ep_names, profiles
from onnxlint.runtime.runners import EpSpec, provider_name, resolve_runner

PACKAGE = Path(__file__).resolve().parent.parent / "onnxlint"

#: modules that still spell ORT's CPU provider name or strip the EP suffix themselves;
#: the stdlib-only worker imports nothing of onnxlint. The list only shrinks (issue #15).
KNOWN_CPU_LITERALS = {
    "ep_names.py": 1,
    "runtime/_worker.py": 10,
    "analyses/assignment.py": 1,
    "analyses/level1.py": 1,
    "confirm.py": 1,
    "probe.py": 4,
    "runtime/client.py": 2,
}
KNOWN_SUFFIX_STRIPS = {"analyses/partition.py", "profiles.py", "confirm.py"}


@pytest.mark.parametrize("name", sorted(ep_names.alias_table()))
def test_every_name_means_the_same_profile_and_provider_everywhere(name: str) -> None:
    pid = profiles.resolve(name)
    assert ep_names.profile_id(name) == pid
    ep = next(i.ep for i in profiles.list_profiles() if i.id == pid)
    assert provider_name(name) == ep


def test_htp_is_qnn_for_the_profiles_and_for_the_sessions() -> None:
    assert profiles.resolve("htp") == "qnn-htp"
    assert provider_name("htp") == "QNNExecutionProvider"
    assert EpSpec.for_ep("htp").options == EpSpec.for_ep("qnn").options


def test_a_variant_name_picks_its_provider_options() -> None:
    assert EpSpec.for_ep("qnn").options == {"backend_type": "htp", "soc_model": "60"}
    assert EpSpec.for_ep("qnn-cpu").options["backend_type"] == "cpu"
    assert EpSpec.for_ep("openvino").options == {"device_type": "CPU"}
    assert EpSpec.for_ep("openvino-gpu").options == {"device_type": "GPU"}
    assert EpSpec.for_ep("openvino-gpu", {"device_type": "GPU.1"}).options == {
        "device_type": "GPU.1"
    }
    assert EpSpec.for_ep("coreml").options == {}


def test_a_runner_configured_under_any_alias_applies(tmp_path: Path) -> None:
    exe = str(tmp_path / "py")
    assert resolve_runner("qnn", {"htp": exe}, root=tmp_path) == exe
    assert resolve_runner("OpenVINOExecutionProvider", {"ov": exe}, root=tmp_path) == exe


def test_short_forms() -> None:
    assert ep_names.short_ep("QNNExecutionProvider") == "QNN"
    assert ep_names.short_ep("qnn") == "qnn"
    assert ep_names.short_name("MIGraphXExecutionProvider") == "migraphx"
    assert ep_names.providers() == sorted({i.ep for i in profiles.list_profiles()})
    assert ep_names.CPU_EP in ep_names.providers()


def _sources() -> dict[str, str]:
    return {
        p.relative_to(PACKAGE).as_posix(): p.read_text(encoding="utf-8")
        for p in PACKAGE.rglob("*.py")
    }


def test_the_cpu_provider_name_is_spelled_once() -> None:
    found = {
        rel: n for rel, text in _sources().items() if (n := text.count('"CPUExecutionProvider"'))
    }
    assert found == KNOWN_CPU_LITERALS, "use onnxlint.ep_names.CPU_EP"


def test_the_ep_suffix_is_stripped_in_one_place() -> None:
    strip = re.compile(r'(removesuffix|len)\("ExecutionProvider"\)')
    found = {rel for rel, text in _sources().items() if strip.search(text)}
    assert found == KNOWN_SUFFIX_STRIPS, "use onnxlint.ep_names.short_ep"
