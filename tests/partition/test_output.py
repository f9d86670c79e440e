"""``--report partitions``, ``--html``, ``--assume-dim`` and the JSON/SARIF data, end to end."""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path

import onnx
import pytest

from onnxlint.render.html import NODE_H, NODE_W, layered_layout

from .conftest import partition_models

ISLAND = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,16] x) => (float[N,16] y) {
    a = Relu(x)
    b = Erf(a)
    y = Relu(b)
}
"""


class _Result:
    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):
    """The CLI in-process (no interpreter start per call: these tests stay fast)."""
    from onnxlint.cli import main

    def run(*args: str) -> _Result:
        rc = main(list(args))
        out = capsys.readouterr()
        return _Result(rc, out.out, out.err)

    return run


@pytest.fixture
def island_model(tmp_path: Path) -> Path:
    path = tmp_path / "island.onnx"
    onnx.save(onnx.parser.parse_model(ISLAND), str(path))
    return path


def test_report_partitions_table_and_verdict(cli, island_model: Path) -> None:
    before = island_model.read_bytes()
    res = cli(
        str(island_model),
        "--ep",
        "qnn",
        "--report",
        "partitions",
        "--assume-dim",
        "N=2",
        "--isolated",
    )
    assert res.returncode in (0, 1), res.stderr
    out = res.stdout
    assert "graph as exported" in out and "after ORT level-1" in out
    assert "QNN: 2 partitions, 67% of nodes (2/3), 1 CPU island, 256 B crossing" in out
    assert island_model.read_bytes() == before


def test_symbolic_dims_stay_symbolic_without_assume_dim(cli, island_model: Path) -> None:
    res = cli(str(island_model), "--ep", "openvino", "--report", "partitions", "--isolated")
    assert "B·N" in res.stdout, res.stdout


@pytest.mark.parametrize("bad", ["N", "N=0", "N=x", "=3"])
def test_bad_assume_dim_is_a_usage_error(cli, island_model: Path, bad: str) -> None:
    res = cli(str(island_model), "--ep", "qnn", "--assume-dim", bad, "--isolated")
    assert res.returncode == 2
    assert "--assume-dim" in res.stderr
    assert "Traceback" not in res.stderr


def test_html_is_self_contained(cli, island_model: Path, tmp_path: Path) -> None:
    page = tmp_path / "out.html"
    res = cli(
        str(island_model), "--ep", "qnn", "--assume-dim", "N=1", "--html", str(page), "--isolated"
    )
    assert res.returncode in (0, 1), res.stderr
    text = page.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    assert "<svg" in text and 'class="edge cross"' in text
    assert "src=" not in text and "<link" not in text
    assert "http" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "QNN: 2 partitions" in text


def test_json_and_sarif_carry_the_partitions(cli, island_model: Path) -> None:
    res = cli(str(island_model), "--ep", "qnn", "--format", "json", "--isolated")
    doc = json.loads(res.stdout)
    plans = doc["files"][0]["partitions"]
    assert [p["level"] for p in plans] == ["exported", "optimized"]
    assert plans[0]["verdicts"]["QNN"].startswith("QNN: ")
    res = cli(str(island_model), "--ep", "qnn", "--format", "sarif", "--isolated")
    assert "properties" not in json.loads(res.stdout)["runs"][0]  # opt-in: they can be large
    res = cli(
        str(island_model), "--ep", "qnn", "--format", "sarif", "--isolated", "--sarif-partitions"
    )
    sarif = json.loads(res.stdout)
    parts = sarif["runs"][0]["properties"]["partitions"]
    assert next(iter(parts.values()))[0]["eps"] == ["QNNExecutionProvider", "CPUExecutionProvider"]


def test_layout_handles_a_500_node_model_quickly() -> None:
    # a 50-layer stack of 10 parallel chains joined every 5 layers: 500 nodes, many edges
    nodes = [f"n{layer}_{i}" for layer in range(50) for i in range(10)]
    edges = []
    for layer in range(1, 50):
        for i in range(10):
            edges.append((f"n{layer - 1}_{i}", f"n{layer}_{i}"))
            if layer % 5 == 0:
                edges.append((f"n{layer - 1}_{(i + 3) % 10}", f"n{layer}_{i}"))
    t0 = time.perf_counter()
    coords = layered_layout(nodes, edges)
    assert time.perf_counter() - t0 < 5.0
    assert len(coords) == 500
    # no two nodes overlap, and every edge points downwards
    boxes = sorted(coords.values())
    for (x1, y1), (x2, y2) in itertools.pairwise(boxes):
        assert not (abs(x1 - x2) < NODE_W and abs(y1 - y2) < NODE_H)
    assert all(coords[a][1] < coords[b][1] for a, b in edges)


def test_html_for_the_encoder_block_lists_every_node() -> None:
    import onnxlint
    from onnxlint.render.html import render_html

    model = dict(partition_models.transformer_blocks())["encoder_static"]
    report = onnxlint.lint(model, eps=["qnn"])
    page = render_html([report])
    assert page.count('<g class="node">') == 2 * len(model.graph.node)


def test_reports_with_partitions_pickle_for_parallel_jobs(island_model: Path) -> None:
    """``--jobs N`` sends reports between processes; the plans must survive it."""
    import pickle

    import onnxlint

    report = onnxlint.lint(island_model, eps=["qnn"])
    back = pickle.loads(pickle.dumps(report))
    assert [p.level for p in back.partitions] == ["exported", "optimized"]
    plan = back.partitions[0]
    assert plan.graph is not None
    # the index is rebuilt on first use (the parent of --jobs mostly reads none)
    assert "index" not in plan.graph.__dict__
    assert len(plan.graph.index.nodes) == 3 and plan.graph.index is plan.graph.index
    original = report.partitions[0].graph
    assert original is not None
    assert [n.path for n in plan.graph.index.nodes] == [n.path for n in original.index.nodes]
    with pytest.raises(AttributeError):
        _ = plan.graph.no_such_attribute
    assert plan.verdict_line("QNNExecutionProvider") == report.partitions[0].verdict_line(
        "QNNExecutionProvider"
    )
