"""Replay of the real-world ground truth (issue #16) on the models small enough to commit.

The truth (``benchmarks/realworld/truth``) was recorded with real sessions on CPU,
QNN HTP, QNN with fixed dims and OpenVINO; this test needs none of those EPs: it
lints the committed replay models (``tests/data/realworld``, plus the samples the
onnxruntime wheel ships) and compares the prediction with what the sessions did.
It fails when a figure falls below the committed floor
(``benchmarks/results/accuracy-replay.json``, written by
``python -m benchmarks.accuracy --write-replay-floor``): fewer agreeing nodes,
fewer exact partition counts, fewer real failures flagged, more false flags.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from ..conftest import REPO

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import accuracy


@pytest.fixture(scope="module")
def replayed() -> tuple[dict[str, Any], list[str]]:
    return accuracy.replay()


def _floor() -> dict[str, Any]:
    return json.loads(accuracy.REPLAY_FLOOR.read_text())


def test_replay_subset_is_complete(replayed: tuple[dict[str, Any], list[str]]) -> None:
    """Every model of the floor is present and matches its recorded truth (by SHA-256)."""
    _summary, names = replayed
    assert sorted(names) == sorted(_floor()["models"])
    assert len(names) >= 15


@pytest.mark.parametrize("key", sorted(json.loads(accuracy.REPLAY_FLOOR.read_text())["floor"]))
def test_replay_does_not_regress(replayed: tuple[dict[str, Any], list[str]], key: str) -> None:
    summary, _names = replayed
    floor = _floor()["floor"][key]
    got = summary[key]
    # the same sessions are replayed: the failures and the models that load do not move
    assert (got["failures"], got["loading_models"]) == (floor["failures"], floor["loading_models"])
    # the nodes compared may (at the default level, where the predicted level-1 graph is
    # matched with ORT's) grow as the prediction improves: hold the agreement as a ratio
    assert got["nodes"] > 0 or floor["nodes"] == 0
    if floor["nodes"]:
        ratio, floor_ratio = (
            got["nodes_agree"] / got["nodes"],
            floor["nodes_agree"] / floor["nodes"],
        )
        assert ratio >= floor_ratio, (ratio, floor_ratio, got["top_classes"])
    assert got["partition_exact"] >= floor["partition_exact"]
    assert got["failures_predicted"] >= floor["failures_predicted"]
    assert got["false_failure_flags"] <= floor["false_failure_flags"], got["false_flag_codes"]


def test_truth_files_are_compact_and_consistent() -> None:
    """Each truth file names its model, hash and sessions; node indices are in range."""
    manifest = {m["name"]: m for m in json.loads(accuracy.MANIFEST.read_text())["models"]}
    files = sorted(accuracy.TRUTH.glob("*.json"))
    assert files
    for f in files:
        doc = json.loads(f.read_text())
        assert doc["model"] == f.stem
        assert manifest[doc["model"]]["sha256"] == doc["sha256"]
        table = doc["node_table"]
        for key, s in doc["sessions"].items():
            assert key.split("/")[1] in accuracy.LEVELS
            if s["status"] == "ok":
                assert len(s["nodes"]) == len(s["eps"])
                assert all(0 <= i < len(table) for i in s["nodes"])
            else:
                assert s.get("error") or s["status"] != "error"


def test_a_loading_session_without_a_prediction_is_counted_not_dropped() -> None:
    """A model whose session loaded but whose lint made no prediction at that level (ORT's
    level-1 graph not built) compares no node: the summary counts it, the table says so."""

    def row(level: str, note: str | None, compared: int) -> accuracy.Row:
        return accuracy.Row(
            model="m", family="f", target="qnn", level=level, status="ok",
            compared=compared, agree=compared, note=note,
        )  # fmt: skip

    summary = accuracy.summarise(
        [row("default", accuracy.NO_PREDICTION, 0), row("disabled", None, 10)]
    )
    assert summary["qnn/default"]["no_prediction"] == 1
    assert summary["qnn/disabled"]["no_prediction"] == 0
    table = accuracy.format_table(summary)
    assert "| qnn/default | 1 (1 without a prediction) |" in table
    assert "| qnn/disabled | 1 |" in table


def test_a_node_the_cpu_ep_cannot_run_flags_every_target(tmp_path: Any) -> None:
    """OL508 names the CPU EP (no EP of the list runs the node, CPU included): the CPU EP is
    the fallback of every target, so the finding flags the QNN and OpenVINO sessions' failure
    too, not only the CPU one's (onnxruntime-genai's bfloat16 decoder: a bfloat16 MatMul
    fails every session with "Could not find an implementation for MatMul(13)")."""
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [1, 4])
    w = helper.make_tensor("w", TensorProto.BFLOAT16, [4, 4], [0] * 16)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], "mm")], "g", [x], [y], [w]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "bf16.onnx"
    onnx.save(model, path)
    failed = {"status": "error", "error": "Could not find an implementation for MatMul(13)"}
    truth = {
        "model": "bf16",
        "sessions": {
            f"{t}/{lv}": failed for t in ("cpu", "qnn", "openvino") for lv in accuracy.LEVELS
        },
    }
    rows = accuracy.evaluate_model(truth, path, "genai", ("cpu", "qnn", "openvino"))
    assert {(r.target, r.level) for r in rows} == {
        (t, lv) for t in ("cpu", "qnn", "openvino") for lv in accuracy.LEVELS
    }
    assert all("OL508" in r.error_findings for r in rows), [
        (r.target, r.error_findings) for r in rows
    ]
