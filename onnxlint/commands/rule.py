"""``onnxlint rule CODE``: print one rule's documentation, generated from the rule itself."""

from __future__ import annotations

import argparse
import json
import sys

NAME = "rule"
HELP = "show the documentation of one rule (by code or name)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("code", help="rule code (OL101) or name (checker-error)")
    parser.add_argument("--format", choices=("markdown", "json"), default="markdown")


def run(args: argparse.Namespace) -> int:
    from onnxlint.rule import get_rule

    cls = get_rule(args.code)
    if cls is None:
        print(
            f"onnxlint: error: unknown rule {args.code!r} (see 'onnxlint rules')", file=sys.stderr
        )
        return 2
    if args.format == "json":
        print(json.dumps(cls.to_dict(), indent=2))
    else:
        print(cls.docs_markdown(), end="")
    return 0
