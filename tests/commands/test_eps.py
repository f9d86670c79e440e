"""``onnxlint eps``: every shipped profile is listed with its source; discovery finds the CPU EP."""

from __future__ import annotations

import json

import pytest

from onnxlint.commands.eps import collect, fact_counts
from onnxlint.profiles import list_profiles
from onnxlint.profiles.build import build_profile

from ..conftest import run_cli


def test_every_profile_is_listed_with_provenance() -> None:
    rows = collect(discover=False)
    assert [r["id"] for r in rows] == [p.id for p in list_profiles()]
    for r in rows:
        assert r["provenance"] or r["measured"], r["id"]
        assert r["installed"] is None
    measured = {r["id"] for r in rows if r["measured"]}
    assert {"cpu", "qnn-htp", "openvino-cpu"} <= measured


def test_facts_are_counted_by_where_they_come_from() -> None:
    """A profile with one measured fact among hundreds of upstream ones is not "measured"."""
    rows = {r["id"]: r for r in collect(discover=False)}
    cuda = rows["cuda"]["facts"]
    assert cuda["measured"] <= 1 and cuda["upstream"] >= 100  # only the ORT opset limit
    htp = rows["qnn-htp"]["facts"]
    assert htp["measured"] > 10 and htp["upstream"] > 0


def test_fact_counts_follow_each_facts_provenance() -> None:
    data = {
        "$schema": "../schema/ep-profile.schema.json",
        "id": "toy",
        "ep": "ToyExecutionProvider",
        "describes": {"onnxruntime": "1.32.0"},
        "provenance": [
            {"id": "src", "kind": "source", "repository": "r", "file": "f"},
            {"id": "probe", "kind": "measured", "date": "2026-12-01"},
        ],
        "kind": "kernel",
        "opsets": {"ai.onnx": {"max": 20, "provenance": "probe"}},
        "global_constraints": [{"kind": "static_shape", "reason": "r", "provenance": "probe"}],
        "ops": [
            {
                "domain": "ai.onnx",
                "op": "Relu",
                "versions": [{"from": 6}],
                "provenance": "src",
                "constraints": [{"kind": "max_rank", "value": 4, "reason": "r"}],
            }
        ],
    }
    counts = fact_counts(build_profile(data, "toy"))
    assert counts == {"measured": 2, "queried": 0, "upstream": 2}


def test_cli_table_without_discovery() -> None:
    proc = run_cli("eps", "--no-discover")
    assert proc.returncode == 0
    for name in ("QNNExecutionProvider", "TensorrtExecutionProvider", "CoreMLExecutionProvider"):
        assert name in proc.stdout


@pytest.mark.slow
def test_discovery_sees_the_cpu_ep() -> None:
    proc = run_cli("eps", "--format", "json", timeout=300)
    rows = {r["id"]: r for r in json.loads(proc.stdout)}
    assert rows["cpu"]["installed"] is True
    assert rows["tensorrt"]["installed"] is False
    for r in rows.values():
        assert isinstance(r["installed"], bool), r


@pytest.mark.slow
@pytest.mark.ort_qnn
def test_a_qnn_backend_without_its_device_is_not_installed() -> None:
    """The QNN plugin loads here, but only the HTP simulator runs: QNN's GPU backend needs an
    Adreno GPU, which an x86 CI machine does not have."""
    from ..confirm.ep_support import require_ep

    require_ep("qnn")
    rows = {r["id"]: r for r in collect(discover=True, timeout_s=300)}
    assert rows["qnn-htp"]["installed"] is True
    assert rows["qnn-gpu"]["installed"] is False and rows["qnn-gpu"]["not_installed_reason"]
