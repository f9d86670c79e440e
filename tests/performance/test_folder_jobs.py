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
