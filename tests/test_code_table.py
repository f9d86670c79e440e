"""The code table: every code with its status, ``since`` and aliases; old codes still work.

No rule has been renamed yet, so the alias cases give OL105 ``unused-initializer`` the old
code ``OL050`` and the old name ``stale-initializer`` for the test's duration.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import onnx
import pytest

import onnxlint
from onnxlint.engine import UsageError
from onnxlint.rule import Rule, all_rules, code_table, get_rule, register

RULE = get_rule("OL105")
assert RULE is not None


@pytest.fixture
def renamed(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[Rule]]:
    assert RULE is not None
    monkeypatch.setattr(RULE, "aliases", ("OL050", "stale-initializer"))
    yield RULE


def _codes(config: dict[str, Any], model: onnx.ModelProto | None = None) -> list[str]:
    assert RULE is not None
    report = onnxlint.lint(model or onnx.parser.parse_model(RULE.example_bad), config=config)
    return [d.code for d in report.diagnostics]


def test_the_table_lists_every_code_once_with_status_since_and_aliases() -> None:
    table = code_table()
    assert [row["code"] for row in table] == [r.code for r in all_rules()]
    assert len({row["code"] for row in table}) == len(table)
    for row in table:
        assert row["status"] in ("preview", "stable", "deprecated")
        assert row["since"].count(".") == 2
        assert row["aliases"] == []
    assert get_rule("OL105").to_dict()["aliases"] == []  # type: ignore[union-attr]


def test_select_and_ignore_accept_an_old_code_or_name(renamed: type[Rule]) -> None:
    assert "OL105" in _codes({})
    assert set(_codes({"select": ["OL050"]})) == {"OL105"}
    assert "OL105" not in _codes({"ignore": ["stale-initializer"]})
    assert "OL105" not in _codes({"ignore": ["ol050"]})
    # the old code is as specific as the code: ignoring it beats selecting the family
    assert "OL105" not in _codes({"select": ["OL1"], "ignore": ["OL050"]})
    assert get_rule("OL050") is renamed and get_rule("Stale-Initializer") is renamed


def test_an_inline_suppression_accepts_an_old_code(renamed: type[Rule]) -> None:
    model = onnx.parser.parse_model(renamed.example_bad)
    onnx.helper.set_model_props(model, {"onnxlint:ignore": "OL050"})
    assert "OL105" not in _codes({}, model)
    onnx.helper.set_model_props(model, {"onnxlint:ignore": "OL051"})
    assert "OL105" in _codes({}, model)


def test_a_severity_key_accepts_an_old_code(renamed: type[Rule]) -> None:
    report = onnxlint.lint(
        onnx.parser.parse_model(renamed.example_bad), config={"severity": {"OL050": "error"}}
    )
    assert {d.severity.label for d in report.diagnostics if d.code == "OL105"} == {"error"}


def test_an_alias_is_exact_and_an_unknown_old_code_is_refused(renamed: type[Rule]) -> None:
    with pytest.raises(UsageError, match="OL051"):
        _codes({"ignore": ["OL051"]})
    with pytest.raises(UsageError, match="'OL05'"):
        _codes({"ignore": ["OL05"]})


def test_an_alias_may_not_name_a_current_rule() -> None:
    class Clash(Rule):
        code = "OL998"
        name = "clash"
        aliases = ("OL101",)

    with pytest.raises(ValueError, match="duplicate rule OL998/clash"):
        register(Clash)


def test_a_malformed_alias_is_a_metadata_problem(renamed: type[Rule]) -> None:
    assert renamed.metadata_problems() == []

    class Bad(Rule):
        aliases = ("Old Name",)

    assert "alias 'Old Name' is neither a code like OL123 nor a kebab-case name" in (
        Bad.metadata_problems()
    )
