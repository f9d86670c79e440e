"""One table of EP names (``onnxlint.ep_names``): ``--ep``, runners and sessions agree."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from onnxlint import ep_names, profiles
from onnxlint.runtime.runners import EpSpec, provider_name, resolve_runner

PACKAGE = Path(__file__).resolve().parent.parent / "onnxlint"

#: ORT's CPU provider name spelled out, and the EP suffix stripped by hand, outside
#: ``ep_names`` (the stdlib-only worker, which imports nothing of onnxlint, is not counted).
#: Where they were when this test was written: assignment, level1, confirm (1 each), probe
#: (4), runtime/client (2), all now ``ep_names.CPU_EP``; the suffix in analyses/partition,
#: profiles and confirm (the first two now use ``short_ep``). The counts only go down
#: (issue #15); they are counts, not files, so a module split keeps them.
MAX_CPU_LITERALS = 0
MAX_SUFFIX_STRIPS = 1
_UNCOUNTED = {"ep_names.py", "runtime/_worker.py"}


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
        rel: n
        for rel, text in _sources().items()
        if rel not in _UNCOUNTED and (n := text.count('"CPUExecutionProvider"'))
    }
    assert sum(found.values()) <= MAX_CPU_LITERALS, f"use onnxlint.ep_names.CPU_EP: {found}"
    assert ep_names.CPU_EP == "CPUExecutionProvider"


def test_the_ep_suffix_is_stripped_in_one_place() -> None:
    strip = re.compile(r'(removesuffix|len)\("ExecutionProvider"\)')
    found = {
        rel: n
        for rel, text in _sources().items()
        if rel not in _UNCOUNTED and (n := len(strip.findall(text)))
    }
    assert sum(found.values()) <= MAX_SUFFIX_STRIPS, f"use onnxlint.ep_names.short_ep: {found}"
