"""Several files in one run: ``-j N`` counts ORT's level-1 workers in its N, and a
serial run readies each file's worker while the previous file is linted."""

from __future__ import annotations

from pathlib import Path

import pytest

from onnxlint import cli, engine
from onnxlint.analyses import level1
from onnxlint.cli import lint as cli_lint
from onnxlint.config import Config
from onnxlint.runtime import processes
from tests.conftest import parse

MODEL = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,4] x) => (float[N,4] y) {
    r = Relu(x)
    y = Identity(r)
}
"""


def test_lint_processes_of_jobs_wait_for_their_worker(
    restore: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli_lint.lint_process_init()
    seen: list[bool] = []
    model = parse(MODEL)
    assert level1.inert_reason(model) is not None  # Relu and Identity: the worker is needed
    engine.lint(
        model,
        eps=["qnn"],
        config=Config(confirm={"cache": False}),
        observe=lambda ctx, report: seen.append(ctx.level1_prefetched),
    )
    assert seen == [False]  # no worker beside the lint ...
    report = engine.lint(model, eps=["qnn"], config=Config(confirm={"cache": False}))
    # ... and still ORT's level-1 graph, built when the partition analysis asked
    assert [(p.level, p.note) for p in report.partitions] == [
        ("exported", None),
        ("optimized", level1.NOTE_OK),
    ]


def test_a_serial_run_keeps_one_spare_worker_and_ends_it(restore: None) -> None:
    level1.set_keep_spare(True)
    job = level1.Level1Job(parse(MODEL), use_cache=False).start()
    try:
        assert job.source == "worker"
        assert processes._SPARE is not None  # the next file's worker, importing onnxruntime
        graph, note = job.result()
        assert graph is not None, note
    finally:
        job.close()
    processes.drop_spare()
    assert processes._SPARE is None


def test_a_folder_run_leaves_no_spare_and_the_same_output(
    tmp_path: Path, restore: None, capsys: pytest.CaptureFixture[str]
) -> None:
    import onnx

    for k in range(3):
        model = parse(MODEL.replace("Relu", ["Relu", "Sigmoid", "Tanh"][k]))
        onnx.save(model, str(tmp_path / f"m{k}.onnx"))
    args = [str(tmp_path), "--ep", "qnn", "--isolated", "--no-progress", "--no-cache"]
    serial = cli.main(args)
    out_serial = capsys.readouterr().out
    assert processes._SPARE is None
    assert level1._KEEP_SPARE is False
    parallel = cli.main([*args, "-j", "2"])
    assert (serial, out_serial) == (parallel, capsys.readouterr().out)


def _three_models(folder: Path) -> None:
    import onnx

    for k in range(3):
        model = parse(MODEL.replace("Relu", ["Relu", "Sigmoid", "Tanh"][k]))
        onnx.save(model, str(folder / f"m{k}.onnx"))


@pytest.mark.parametrize(
    "extra", [["--format", "json"], ["--format", "sarif"], ["--report", "partitions"]]
)
def test_jobs_send_reports_without_graphs_and_print_the_same(
    tmp_path: Path, restore: None, capsys: pytest.CaptureFixture[str], extra: list[str]
) -> None:
    _three_models(tmp_path)
    args = [str(tmp_path), "--ep", "qnn", "--isolated", "--no-progress", "--no-cache", *extra]
    serial = cli.main(args)
    out_serial = capsys.readouterr().out
    parallel = cli.main([*args, "-j", "2"])
    assert (serial, out_serial) == (parallel, capsys.readouterr().out)


def test_a_lint_process_drops_the_graphs_only_html_reads(
    tmp_path: Path, restore: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _three_models(tmp_path)
    model = tmp_path / "m0.onnx"
    sent = cli_lint._lint_one_for_parent(model, Config(eps=["qnn"]))
    kept = cli_lint._lint_one(model, Config(eps=["qnn"]))
    assert [p.level for p in sent.partitions] == [p.level for p in kept.partitions] != []
    assert all(p.graph is None for p in sent.partitions)
    assert all(p.graph is not None for p in kept.partitions)
    assert sent.diagnostics == kept.diagnostics and sent.assignment == kept.assignment


def test_jobs_with_html_send_the_graphs(tmp_path: Path, restore: None) -> None:
    models = tmp_path / "models"
    models.mkdir()
    _three_models(models)
    pages = []
    for jobs in ("1", "2"):
        page = tmp_path / f"j{jobs}.html"
        common = [str(models), "--ep", "qnn", "--isolated", "--no-progress", "--no-cache"]
        cli.main([*common, "--html", str(page), "-j", jobs])
        pages.append(page.read_text())
    assert pages[0] == pages[1]
    # every model's graphs are drawn (no graph: no node groups), in both runs
    assert pages[0].count('<g class="node">') >= 3 * 2
