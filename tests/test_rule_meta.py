"""Meta-tests: every rule is documented, has examples that behave, and the README is in sync."""

from __future__ import annotations

import re

import onnx
import pytest

import onnxlint
from onnxlint.commands.rules import rules_table_markdown
from onnxlint.rule import all_rules

from .conftest import REPO

RULES = all_rules()
ENGINE_RULES = [r for r in RULES if r.emitted_by == "engine"]


def test_codes_and_names_are_unique() -> None:
    assert len({r.code for r in RULES}) == len(RULES)
    assert len({r.name for r in RULES}) == len(RULES)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_metadata_complete(rule) -> None:
    assert rule.metadata_problems() == []
    assert rule.code in rule.docs_markdown()


@pytest.mark.parametrize("rule", [r for r in ENGINE_RULES if r.example_bad], ids=lambda r: r.code)
def test_bad_example_triggers_rule(rule) -> None:
    report = onnxlint.lint(
        onnx.parser.parse_model(rule.example_bad), eps=list(rule.example_eps), config={}
    )
    assert rule.code in {d.code for d in report.diagnostics}, onnxlint.render(report)


@pytest.mark.parametrize("rule", [r for r in ENGINE_RULES if r.example_good], ids=lambda r: r.code)
def test_good_example_does_not_trigger_rule(rule) -> None:
    report = onnxlint.lint(
        onnx.parser.parse_model(rule.example_good), eps=list(rule.example_eps), config={}
    )
    assert rule.code not in {d.code for d in report.diagnostics}, onnxlint.render(report)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_messages_format_with_named_placeholders_only(rule) -> None:
    for template in rule.messages.values():
        assert "{}" not in template
        assert not re.search(r"\{\d+\}", template)


def test_readme_rule_table_is_in_sync() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    start, end = "<!-- rules-table:start -->", "<!-- rules-table:end -->"
    assert start in readme and end in readme
    current = readme.split(start)[1].split(end)[0].strip()
    assert current == rules_table_markdown().strip(), (
        "README rule table is stale: run `python -m onnxlint rules --format markdown` and paste it"
    )


def test_rule_docs_are_in_sync() -> None:
    from onnxlint.commands.rules import rules_docs_markdown

    current = (REPO / "docs" / "rules.md").read_text(encoding="utf-8")
    assert current == rules_docs_markdown(), (
        "docs/rules.md is stale: run `python -m onnxlint rules --format docs > docs/rules.md`"
    )


def _applicable(fix: object) -> bool:
    return fix is not None and getattr(fix, "action", None) is not None


@pytest.mark.parametrize("rule", [r for r in ENGINE_RULES if r.example_bad], ids=lambda r: r.code)
def test_fix_availability_is_what_the_findings_carry(rule) -> None:
    """``fix_availability`` counts machine-applicable fixes (``Fix.action``) only: an
    ``always`` rule's example findings all carry one, a ``never`` rule's none, and a
    ``never`` rule has no code that builds one."""
    import inspect

    report = onnxlint.lint(
        onnx.parser.parse_model(rule.example_bad),
        eps=list(rule.example_eps),
        config={},
        what_if=False,
    )
    mine = [d for d in report.diagnostics if d.code == rule.code]
    if rule.fix_availability == "always":
        assert mine and all(_applicable(d.fix) for d in mine)
    if rule.fix_availability == "never":
        assert not any(_applicable(d.fix) for d in mine)
        assert "action=" not in inspect.getsource(rule)


def test_rules_new_since_the_last_release_say_so() -> None:
    """A rule the changelog's Unreleased section introduces ("- OL123 `name`: ...") is not
    'since 0.1.0', and is in preview until it has been released once."""
    text = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    unreleased = text.split("## Unreleased", 1)[1].split("\n## ", 1)[0]
    new = set(re.findall(r"(?m)^- (OL\d{3}) `[a-z0-9-]+`:", unreleased))
    assert new, "the Unreleased section introduces no rule: update this test"
    by_code = {r.code: r for r in RULES}
    for code in sorted(new):
        assert by_code[code].since != "0.1.0" and by_code[code].status == "preview", code
