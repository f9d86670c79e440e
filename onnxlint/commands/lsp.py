"""``onnxlint lsp``: run the language server over stdio (for editors)."""

from __future__ import annotations

import argparse

NAME = "lsp"
HELP = "run the language server over stdio (used by the VS Code extension and other editors)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--stdio",
        action="store_true",
        help="talk LSP over stdin/stdout (the default, and only, transport)",
    )
    parser.add_argument(
        "--log-level",
        default=None,
        choices=("debug", "info", "warning", "error"),
        help="log level of the server's stderr log",
    )


def run(args: argparse.Namespace) -> int:
    import logging
    import os

    if args.log_level:
        os.environ["ONNXLINT_LSP_LOG"] = args.log_level
    from onnxlint.lsp.server import main

    logging.getLogger("pygls").setLevel(logging.WARNING)
    return main()
