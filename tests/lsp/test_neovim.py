"""A second real client: Debian's Neovim (0.7.x) headless on an ``.onnxtxt`` file (slow).

The ``init.lua`` snippet of docs/editor.md, verbatim, is the user's configuration
(``$XDG_CONFIG_HOME/nvim/init.lua``, where Neovim reads it; ``onnxlint`` on ``PATH``
is this Python's); Neovim opens the file given on its command line, as a user starts
it, and the Lua script writes the diagnostics Neovim received; the test checks the
unknown operator is reported on its exact line.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.lsp.models import BAD

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).with_name("clients") / "nvim_diagnostics.lua"
DOCS = Path(__file__).parents[2] / "docs" / "editor.md"


def docs_snippet() -> str:
    """The ``init.lua`` block of docs/editor.md's "Other editors" section."""
    section = DOCS.read_text().split("## Other editors", 1)[1]
    match = re.search(r"```lua\n(.*?)```", section, re.S)
    assert match, "no Lua snippet under 'Other editors' in docs/editor.md"
    return match.group(1)


def test_the_docs_snippet_needs_nothing_newer_than_neovim_0_7() -> None:
    snippet = docs_snippet()
    assert "vim.filetype.add" not in snippet  # Neovim 0.8+
    assert 'cmd = { "onnxlint", "lsp" }' in snippet


@pytest.mark.skipif(
    shutil.which("nvim") is None, reason="Neovim is not installed (apt-get install neovim)"
)
def test_neovim_receives_diagnostics_for_onnxtxt(tmp_path: Path) -> None:
    model = tmp_path / "bad.onnxtxt"
    model.write_text(BAD)
    (tmp_path / "onnxlint.toml").write_text('select = ["OL2"]\n')
    out = tmp_path / "received.tsv"
    init = tmp_path / "cfg" / "nvim" / "init.lua"
    init.parent.mkdir(parents=True)
    init.write_text(docs_snippet())
    # the snippet runs `onnxlint lsp`: this Python's onnxlint
    bindir = tmp_path / "bin"
    bindir.mkdir()
    shim = bindir / "onnxlint"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m onnxlint "$@"\n')
    shim.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
        "ONNXLINT_NVIM_FILE": str(model),
        "ONNXLINT_NVIM_OUT": str(out),
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    proc = subprocess.run(
        ["nvim", "--headless", "-n", "-i", "NONE", str(model), "-c", f"luafile {SCRIPT}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.is_file(), proc.stderr
    rows = [line.split("\t") for line in out.read_text().splitlines()]
    print("\n".join("\t".join(r) for r in rows))
    assert rows != [["TIMEOUT"]], proc.stderr
    lines = {code: int(line) for line, code, _msg in rows}
    assert lines["OL204"] == BAD.split("\n").index("   [mystery0] y = FancyOp (r)")
