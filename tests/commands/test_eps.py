"""``onnxlint eps``: every shipped profile is listed with its source; discovery finds the CPU EP."""

from __future__ import annotations

import json

import pytest

from onnxlint.commands.eps import collect
from onnxlint.profiles import list_profiles

from ..conftest import run_cli


def test_every_profile_is_listed_with_provenance() -> None:
    rows = collect(discover=False)
    assert [r["id"] for r in rows] == [p.id for p in list_profiles()]
    for r in rows:
        assert r["provenance"] or r["measured"], r["id"]
        assert r["installed"] is None
    measured = {r["id"] for r in rows if r["measured"]}
    assert {"cpu", "qnn-htp", "openvino-cpu"} <= measured


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
