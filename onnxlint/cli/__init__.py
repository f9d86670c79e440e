"""Command line: ``onnxlint PATH... [--ep EP]...`` plus subcommands.

Subcommands live in ``onnxlint/commands/<name>.py``; each module defines
``NAME``, ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``. This module
parses the command line and dispatches; the lint command is :mod:`onnxlint.cli.lint`,
its arguments :mod:`~onnxlint.cli.arguments`, the files it reads and writes
:mod:`~onnxlint.cli.files`, each file's configuration :mod:`~onnxlint.cli.settings` and
what it shows :mod:`~onnxlint.cli.output`, and a whole command's output kept for its
re-run :mod:`~onnxlint.cli.replay`.
Exit codes: 0 clean, 1 findings at or above ``--fail-on``, 2 usage error or
unreadable input.

At import this module reads only ``os``, ``sys`` and the exit codes of
:mod:`~onnxlint.cli.output` (which imports nothing else): the console script imports
it, and a re-run of an unchanged lint prints its kept output (:func:`run`) before
anything else is imported; the parser, the configuration and the engine load when a
command runs.
"""

from __future__ import annotations

import os
import sys

from onnxlint.cli.output import EXIT_FINDINGS as EXIT_FINDINGS
from onnxlint.cli.output import EXIT_OK, EXIT_USAGE, quiet_broken_pipe

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from types import ModuleType
    from typing import NoReturn

#: each subcommand's name and its module under ``onnxlint.commands``: a run imports only
#: the module of the command it runs (none for a lint), and ``--help`` all of them
#: (``tests/performance/test_warm_imports.py`` checks the table against the modules)
COMMANDS = {
    "compile": "compile",
    "eps": "eps",
    "fix-shapes": "fix_shapes",
    "lsp": "lsp",
    "probe": "probe",
    "rule": "rule",
    "rules": "rules",
}


def _command_module(name: str) -> ModuleType:
    import importlib

    return importlib.import_module(f"onnxlint.commands.{COMMANDS[name]}")


def _command_modules() -> dict[str, ModuleType]:
    """Every module under ``onnxlint.commands``, by its ``NAME`` (found, not listed)."""
    import importlib
    import pkgutil

    import onnxlint.commands as pkg

    mods = {}
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"onnxlint.commands.{info.name}")
        mods[mod.NAME] = mod
    return mods


def _epilog(commands: dict[str, ModuleType]) -> str:
    listed = {"check": "lint model files and folders (the default: 'onnxlint PATH...')"}
    listed.update({name: mod.HELP for name, mod in commands.items()})
    epilog = "commands:\n" + "\n".join(
        f"  {name:<12} {text}" for name, text in sorted(listed.items())
    )
    return (
        epilog + "\n\nrun 'onnxlint COMMAND --help' for a command's options; a first "
        "argument spelled like a command is that command (lint a path of that name as "
        "'onnxlint ./NAME' or 'onnxlint check NAME')"
    )


def build_parser(commands: dict[str, ModuleType] | None = None) -> argparse.ArgumentParser:
    """The lint command's parser; its help lists ``commands`` (None: every command, imported
    only when the help is printed)."""
    import argparse

    from onnxlint.cli.arguments import Parser, add_lint_arguments
    from onnxlint.version import __version__

    p = Parser(
        prog="onnxlint",
        description="Lint ONNX models for deployment: opsets, shapes, control flow, EP support, partitions.",
        epilog=_epilog(commands) if commands is not None else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    if commands is None:
        p.epilog_source = lambda: _epilog(_command_modules())
    p.add_argument("--version", action="version", version=f"onnxlint {__version__}")
    add_lint_arguments(p)
    return p


#: the explicit lint subcommand (``lint`` is its older spelling)
LINT_COMMANDS = ("check", "lint")


def main(argv: Sequence[str] | None = None) -> int:
    """Run a command line. The first argument names a subcommand when it is spelled exactly
    like one (``onnxlint rules`` lists the rules even in a folder that holds ``rules/``);
    anything else is a lint of the paths given. To lint a path spelled like a subcommand,
    write ``onnxlint ./rules`` or ``onnxlint check rules``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in COMMANDS:
            if os.path.exists(argv[0]):
                print(
                    f"onnxlint: note: '{argv[0]}' is a command here; to lint the path, run "
                    f"'onnxlint check {argv[0]}' or 'onnxlint ./{argv[0]}'",
                    file=sys.stderr,
                )
            from onnxlint.cli.arguments import Parser

            mod = _command_module(argv[0])
            sub = Parser(prog=f"onnxlint {mod.NAME}", description=mod.HELP)
            mod.add_arguments(sub)
            args = sub.parse_args(argv[1:])
            return int(mod.run(args))
        parser = build_parser()
        if argv and argv[0] in LINT_COMMANDS:
            parser.prog = f"onnxlint {argv[0]}"
            argv = argv[1:]
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:
            return int(exc.code or 0) if exc.code in (0, None) else EXIT_USAGE
        if args.show_settings:
            return _show_settings(args)
        from onnxlint.cli.lint import run_lint

        return run_lint(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        quiet_broken_pipe()  # `onnxlint rules | head`: the reader has what it wanted
        return EXIT_OK


def _show_settings(args: argparse.Namespace) -> int:
    from onnxlint.cli.files import iter_model_files
    from onnxlint.cli.settings import ConfigCache
    from onnxlint.config import ConfigError, UsageError
    from onnxlint.settings_report import settings_lines

    try:
        lines = settings_lines(args, ConfigCache(args), list(iter_model_files(args.paths)))
    except (ConfigError, UsageError) as exc:
        print(f"onnxlint: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    sys.stdout.write("\n".join(lines) + "\n")
    return EXIT_OK


def run() -> NoReturn:
    """The console entry point: :func:`main`, then exit without tearing the interpreter down.

    A lint whose output is kept for this very command line, working folder, environment
    and installed code, with every file it read unchanged, prints that output again
    instead (:mod:`onnxlint.cli.replay`: nothing else is imported); otherwise the lint
    runs and its output may be kept for the next run.

    Freeing every object of a lint one by one at exit (the model, its indexes, the
    analyses) took 60-150 ms of a 0.5 s static lint; the OS reclaims the memory at
    once. The exit handlers still run first (they end a level-1 worker nobody
    collected) and the output is flushed. ``main()`` stays an ordinary function for
    callers in the same process. Subcommands (the language server's threads among them)
    exit the ordinary way.
    """
    argv = sys.argv[1:]
    if argv and argv[0] in COMMANDS:
        raise SystemExit(main())
    from onnxlint.cli import replay

    door = replay.open_door(argv)
    code = door.replay() if door is not None else None
    if code is None:
        code = main()
    import atexit

    getattr(atexit, "_run_exitfuncs", lambda: None)()
    for stream in (sys.stdout, sys.stderr):
        try:  # noqa: SIM105 (contextlib costs a replayed output 3 ms of imports)
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass  # a closed pipe: nothing more can be said
    os._exit(code)


if __name__ == "__main__":
    raise SystemExit(main())
