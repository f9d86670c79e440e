"""A lint runs only the stages and analyses that its rules or its front end need.

Checked through fields (``LintContext.computed``, ``stages_run``, ``level1_prefetched``),
never through timing.
"""

from __future__ import annotations

from typing import Any

import pytest

import onnxlint
from onnxlint import engine
from onnxlint.analyses.assignment import Assignment
from onnxlint.analyses.level1 import Level1Job
from onnxlint.analyses.partition import Partitions
from onnxlint.config import Config
from onnxlint.context import LintContext
from onnxlint.report import Report
from tests.conftest import parse

MODEL = """\
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,4] x) => (float[N,4] y) {
    s = Shape(x)
    r = Relu(x)
    y = Reshape(r, s)
}
"""


class _Seen:
    """What the lint built: its context (through ``observe``) and every level-1 job started."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.ctx: LintContext | None = None
        self.jobs = 0
        real = Level1Job.start

        def start(job: Level1Job) -> Level1Job:
            self.jobs += 1
            return real(job)

        monkeypatch.setattr(Level1Job, "start", start)

    def observe(self, ctx: LintContext, report: Report) -> None:
        self.ctx = ctx


def _lint(monkeypatch: pytest.MonkeyPatch, select: tuple[str, ...], **kw: Any) -> _Seen:
    seen = _Seen(monkeypatch)
    engine.lint(
        parse(MODEL),
        eps=["qnn"],
        config=Config(select=select) if select else Config(),
        observe=seen.observe,
        **kw,
    )
    assert seen.ctx is not None
    return seen


def test_structure_rule_alone_builds_no_partitions_and_no_level1_graph(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen = _lint(monkeypatch, ("OL101",))
    ctx = seen.ctx
    assert ctx is not None
    assert ctx.computed(Partitions) is None
    assert ctx.computed(Assignment) is None
    assert "partition-summary" not in ctx.stages_run
    assert "confirmation" in ctx.stages_run  # the compiled-source check always runs
    assert ctx.level1_prefetched is False
    assert seen.jobs == 0


def test_public_api_with_a_mapping_config_skips_them_too(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _Seen(monkeypatch)
    report = onnxlint.lint(parse(MODEL), eps=["qnn"], config={"select": ["OL101"]})
    assert report.partitions == [] and report.assignment == {}
    assert seen.jobs == 0


def test_default_selection_builds_both(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _lint(monkeypatch, ())
    ctx = seen.ctx
    assert ctx is not None
    assert ctx.computed(Partitions) is not None
    assert "partition-summary" in ctx.stages_run
    assert ctx.level1_prefetched is True
    assert seen.jobs == 1  # started early by the engine, collected by the analysis


@pytest.mark.parametrize("select", [("OL5",), ("OL605",), ("partition",)])
def test_rules_that_read_partitions_keep_them(
    select: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _lint(monkeypatch, select)
    assert seen.ctx is not None and "partition-summary" in seen.ctx.stages_run
    assert seen.ctx.level1_prefetched is True


def test_a_front_end_that_shows_the_summary_gets_it(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _lint(monkeypatch, ("OL101",), partition_summary=True)
    assert seen.ctx is not None
    assert seen.ctx.computed(Partitions) is not None
    assert "partition-summary" in seen.ctx.stages_run


def test_skipping_the_summary_keeps_the_selected_findings() -> None:
    model = parse(MODEL.replace("r = Relu(x)", "r = Relu(x)\n    r = Relu(x)"))
    cfg = Config(select=("OL1",))
    lean = engine.lint(model, eps=["qnn"], config=cfg)
    full = engine.lint(model, eps=["qnn"], config=cfg, partition_summary=True)
    assert lean.diagnostics == full.diagnostics
    assert full.partitions and not lean.partitions


def test_cpu_only_plans_the_level1_graph_for_its_refusal_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The CPU alone predicts no partition, but ORT refusing its level-1 graph fails the
    CPU's default session (OL606): the graph is asked for once, and the report carries no
    partition plan."""
    monkeypatch.setenv("ONNXLINT_NO_CACHE", "1")
    cfg = Config()
    plan = engine.plan_lint(cfg, engine.resolve_eps(["cpu"], cfg), engine.instantiate_rules(cfg))
    assert plan.level1 is True
    seen = _Seen(monkeypatch)
    report = engine.lint(parse(MODEL), eps=["cpu"], config=cfg, observe=seen.observe)
    assert seen.jobs == 1 and seen.ctx is not None
    assert seen.ctx.level1_prefetched is True
    assert not report.partitions and not report.assignment
