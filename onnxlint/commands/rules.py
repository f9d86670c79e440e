"""``onnxlint rules``: list every rule with its code, category and default severity."""

from __future__ import annotations

import argparse
import json

NAME = "rules"
HELP = "list the rules"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=("table", "json", "markdown"), default="table")


def run(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from onnxlint.rule import all_rules

    rules = all_rules()
    if args.format == "json":
        print(json.dumps([r.to_dict() for r in rules], indent=2))
    elif args.format == "markdown":
        print(rules_table_markdown())
    else:
        rows = [[r.code, r.name, r.category.value, r.severity.label, r.summary()] for r in rules]
        print(tabulate(rows, headers=["code", "name", "category", "severity", "summary"]))
    return 0


def rules_table_markdown() -> str:
    """The README's rule table (a test keeps the README in sync with it)."""
    from onnxlint.rule import all_rules

    lines = ["| code | name | category | severity | summary |", "|---|---|---|---|---|"]
    for r in all_rules():
        lines.append(
            f"| {r.code} | `{r.name}` | {r.category.value} | {r.severity.label} | {r.summary()} |"
        )
    return "\n".join(lines)
