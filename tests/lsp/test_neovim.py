"""A second real client: Debian's Neovim (0.7.x) headless on an ``.onnxtxt`` file (slow).

The Lua script starts the server with ``vim.lsp.start_client``, attaches it with
``buf_attach_client`` and writes the diagnostics it received; the test checks
the unknown operator is reported on its exact line.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.lsp.models import BAD

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).with_name("clients") / "nvim_diagnostics.lua"


@pytest.mark.skipif(
    shutil.which("nvim") is None, reason="Neovim is not installed (apt-get install neovim)"
)
def test_neovim_receives_diagnostics_for_onnxtxt(tmp_path: Path) -> None:
    model = tmp_path / "bad.onnxtxt"
    model.write_text(BAD)
    (tmp_path / "onnxlint.toml").write_text('select = ["OL2"]\n')
    out = tmp_path / "received.tsv"
    env = {
        **os.environ,
        "ONNXLINT_PYTHON": sys.executable,
        "ONNXLINT_NVIM_FILE": str(model),
        "ONNXLINT_NVIM_OUT": str(out),
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    proc = subprocess.run(
        ["nvim", "--headless", "-n", "-u", "NONE", "-i", "NONE", "-c", f"luafile {SCRIPT}"],
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
