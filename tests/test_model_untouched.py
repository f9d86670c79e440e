"""No rule, analysis or stage changes the model a lint is given (issue 19).

The checker reads the bytes the loader parsed (``LoadedModel.wire``) instead of
serialising the model again, when the model it checks is the lint's own. That is
right only while nothing before it changes ``ctx.model`` in place: the house rule is
that nothing ever does (what-ifs and fixes work on copies). This test pins it with
every rule and every shipped EP profile on models that reach most analyses: if a
rule or analysis mutates the model, the model after the lint differs from its
bytes before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from onnxlint import engine, profiles
from onnxlint.loader import load
from tests.conftest import light_models, parse
from tests.lsp.models import NESTED

REPO = Path(__file__).resolve().parents[1]


def _nested_bytes() -> bytes:
    """A model with an If whose branches nest further (control-flow rules, subgraphs)."""
    return parse(NESTED).SerializeToString()


def _cases() -> list[pytest.param]:  # type: ignore[valid-type]
    squeeze = [p for p in light_models() if "squeezenet" in p.name]
    return [
        pytest.param(REPO / "examples" / "demo.onnx", id="demo"),
        pytest.param(None, id="nested-if"),
        *[pytest.param(p, id=p.stem) for p in squeeze],
    ]


@pytest.mark.parametrize("path", _cases())
def test_a_lint_with_every_rule_and_ep_leaves_the_model_as_it_was(path: Path | None) -> None:
    loaded = load(path if path is not None else _nested_bytes(), keep_wire=True)
    assert loaded.model is not None and loaded.wire is not None
    before = loaded.model.SerializeToString(deterministic=True)
    eps = [p.id for p in profiles.list_profiles()]
    report = engine.lint(loaded, eps=eps, partition_summary=True, what_if=True)
    assert not report.fatal
    assert loaded.model.SerializeToString(deterministic=True) == before
