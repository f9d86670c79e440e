"""Docs that hold: every code block in README.md and docs/*.md runs here, or says it does not.

Each fenced block is extracted and executed like a doctest, in a private folder that
holds the files the docs name (``model.onnx``, ``in.onnx``, ``models/``, ``my_npu.json``):

- ``sh``/``bash``: each command line runs (``onnxlint`` is this interpreter's
  ``python -m onnxlint``); exit code 0 or 1 (1 = findings at ``--fail-on``), never 2
  (a usage error) and never a traceback;
- ``python``: the block runs as a script;
- ``toml``: the ``[tool.onnxlint]`` tables are written to a ``pyproject.toml`` and
  loaded with the config schema;
- ``json``: validated against the schema it illustrates (the JSON output, an EP profile);
- ``yaml``: the pre-commit recipe names this repository, a release tag of this
  version and a hook that exists.

A block that cannot run (a synopsis, sample output, an annotated file, a command that
takes minutes) is marked right above it with ``<!-- doc: illustration: why -->``; a
Python block that is meant to raise says ``<!-- doc: raises NAME -->``. Blocks in files
other engineers own are listed in ``ELSEWHERE`` with the reason. ``docs/rules.md`` is
generated from the rules, whose examples ``tests/test_rule_meta.py`` lints.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import onnx
import onnx.helper as oh
import pytest

from .conftest import REPO

GENERATED = {"docs/rules.md"}
MARK_RE = re.compile(r"<!--\s*doc:\s*(illustration|raises)\b\s*:?\s*(.*?)\s*-->")
FENCE_RE = re.compile(r"^[ \t]*```([\w-]*)[^\n]*\n(.*?)^[ \t]*```", re.S | re.M)
#: blocks in files this suite's authors do not own, by (file, a phrase of the block)
ELSEWHERE = {
    ("docs/editor.md", "vim.api.nvim_create_autocmd"): (
        "Neovim's configuration (Lua); tests/lsp drives a real nvim with the same setup"
    ),
    ("docs/SECURITY.md", "tests/fuzz"): (
        "runs the fuzz suite, which the test run itself includes (tests/fuzz)"
    ),
}
#: README blocks that .ci/run executes verbatim (tests/test_repo.py checks it)
RUN_BY_CI = ('pip install -e ".[test]"', "python -m pytest")


@dataclass(frozen=True)
class Block:
    file: str
    line: int
    lang: str
    body: str
    mark: str | None  # "illustration" or "raises"
    mark_arg: str

    @property
    def id(self) -> str:
        return f"{self.file}:{self.line}"


def _blocks() -> list[Block]:
    files = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    out: list[Block] = []
    for path in files:
        rel = path.relative_to(REPO).as_posix()
        if rel in GENERATED:
            continue
        text = path.read_text(encoding="utf-8")
        for m in FENCE_RE.finditer(text):
            before = text[: m.start()].rstrip().splitlines()
            mark = MARK_RE.search(before[-1]) if before else None
            out.append(
                Block(
                    file=rel,
                    line=text[: m.start()].count("\n") + 1,
                    lang=m.group(1).lower(),
                    body=_dedent(m.group(2)),
                    mark=mark.group(1) if mark else None,
                    mark_arg=mark.group(2) if mark else "",
                )
            )
    return out


def _dedent(body: str) -> str:
    import textwrap

    return textwrap.dedent(body)


BLOCKS = _blocks()


def _elsewhere(block: Block) -> str | None:
    for (file, phrase), why in ELSEWHERE.items():
        if block.file == file and phrase in block.body:
            return why
    return None


# -- the sandbox ---------------------------------------------------------------------


def _two_input_model(image: str, image_shape: list[object]) -> onnx.ModelProto:
    """A conv branch (node conv0) and a token branch with dims ``batch`` and ``sequence``."""
    w = oh.make_tensor("w", onnx.TensorProto.FLOAT, [4, 3, 3, 3], [0.01 * i for i in range(108)])
    conv_out = [1, 4, 6, 6] if image_shape[-1] == 8 else None
    graph = oh.make_graph(
        [
            oh.make_node("Conv", [image, "w"], ["c"], name="conv0"),
            oh.make_node("Relu", ["c"], ["features"], name="relu0"),
            oh.make_node("Sigmoid", ["ids"], ["scores"], name="sigmoid0"),
        ],
        "main",
        [
            oh.make_tensor_value_info(image, onnx.TensorProto.FLOAT, image_shape),
            oh.make_tensor_value_info("ids", onnx.TensorProto.FLOAT, ["batch", "sequence"]),
        ],
        [
            oh.make_tensor_value_info("features", onnx.TensorProto.FLOAT, conv_out),
            oh.make_tensor_value_info("scores", onnx.TensorProto.FLOAT, ["batch", "sequence"]),
        ],
        [w],
    )
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _my_npu_profile() -> str:
    """The profile docs/profiles.md writes as its own example (``my-npu``)."""
    for b in BLOCKS:
        if b.file == "docs/profiles.md" and b.lang == "json" and '"my-npu"' in b.body:
            return b.body
    raise AssertionError("docs/profiles.md lost its my-npu example profile")


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    onnx.save(_two_input_model("pixels", [1, 3, 8, 8]), str(tmp_path / "model.onnx"))
    onnx.save(_two_input_model("pixel_values", ["batch", 3, 224, 224]), str(tmp_path / "in.onnx"))
    (tmp_path / "models").mkdir()
    shutil.copy(REPO / "examples" / "demo.onnx", tmp_path / "models" / "detector.onnx")
    (tmp_path / "examples").mkdir()
    shutil.copy(REPO / "examples" / "demo.onnx", tmp_path / "examples" / "demo.onnx")
    (tmp_path / "my_npu.json").write_text(_my_npu_profile(), encoding="utf-8")
    openvino = REPO / ".venv-openvino"
    if openvino.exists():
        (tmp_path / ".venv-openvino").symlink_to(openvino.resolve())
    return tmp_path


def _env() -> dict[str, str]:
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(REPO)}
    return env


def _commands(body: str) -> list[str]:
    """Command lines of a shell block: comments dropped, continuation lines joined."""
    lines, current = [], ""
    for raw in body.splitlines():
        line = raw.split(" #", 1)[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if not line.strip():
            continue
        current += line.rstrip("\\").strip() + " "
        if not line.endswith("\\"):
            lines.append(current.strip())
            current = ""
    return lines


def _run_shell(block: Block, cwd: Path) -> None:
    for cmd in _commands(block.body):
        argv = shlex.split(cmd)
        assert argv[0] == "onnxlint", f"{block.id}: only onnxlint commands run here: {cmd}"
        proc = subprocess.run(
            [sys.executable, "-m", "onnxlint", *argv[1:]],
            cwd=cwd,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        said = proc.stdout + proc.stderr
        assert proc.returncode in (0, 1), f"{block.id}: `{cmd}` exited {proc.returncode}:\n{said}"
        assert "Traceback" not in said, f"{block.id}: `{cmd}`:\n{said}"


def _run_python(block: Block, cwd: Path) -> None:
    script = cwd / "doc_block.py"
    script.write_text(block.body, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if block.mark == "raises":
        raised = re.search(rf"^([\w.]+\.)?{block.mark_arg}\b", proc.stderr, re.M)
        assert proc.returncode != 0 and raised, (
            f"{block.id}: expected {block.mark_arg}, got {proc.returncode}:\n{proc.stderr}"
        )
        return
    assert proc.returncode == 0, f"{block.id}:\n{proc.stdout}\n{proc.stderr}"


def _check_toml(block: Block, cwd: Path) -> None:
    from onnxlint import config as config_mod

    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]

    data = tomllib.loads(block.body)
    pytest_ini = data.get("tool", {}).get("pytest", {}).get("ini_options")
    if pytest_ini is not None:
        # the pytest plugin's settings: each onnxlint_* key is one the plugin registers
        plugin = (REPO / "onnxlint" / "pytest_plugin.py").read_text("utf-8")
        registered = set(re.findall(r'addini\(\s*"(onnxlint\w*)"', plugin))
        ours = {k for k in pytest_ini if k.startswith("onnxlint")}
        assert ours and ours <= registered, f"{block.id}: {ours - registered} not registered"
        return
    assert "tool" in data and "onnxlint" in data["tool"], f"{block.id}: not [tool.onnxlint]"
    (cwd / "pyproject.toml").write_text(block.body, encoding="utf-8")
    config_mod.discover(cwd / "model.onnx")  # raises ConfigError naming the bad key


def _check_json(block: Block, cwd: Path) -> None:
    import jsonschema

    from onnxlint.data import load_json
    from onnxlint.profiles import load_profile_file

    data = json.loads(block.body)
    if "files" in data and "schema_version" in data:
        jsonschema.validate(data, load_json("schema/report.schema.json"))
    elif "ep" in data and "ops" in data:
        path = cwd / "profile.json"
        path.write_text(block.body, encoding="utf-8")
        load_profile_file(path)
    else:
        raise AssertionError(f"{block.id}: a JSON block of a kind this test cannot check")


def _check_yaml(block: Block, cwd: Path) -> None:
    import yaml

    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]

    project = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]
    hooks = {h["id"] for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}
    (repo,) = yaml.safe_load(block.body)["repos"]
    assert repo["repo"] == project["urls"]["Repository"]
    # the tag docs/releasing.md creates for this version, with its changelog entry
    assert repo["rev"] == f"v{project['version']}"
    changelog = (REPO / "CHANGELOG.md").read_text("utf-8")
    assert re.search(rf"^## {re.escape(project['version'])}\b", changelog, re.M)
    assert "git tag -a v" in (REPO / "docs" / "releasing.md").read_text("utf-8")
    assert {h["id"] for h in repo["hooks"]} <= hooks


CHECKS = {
    "sh": _run_shell,
    "bash": _run_shell,
    "python": _run_python,
    "toml": _check_toml,
    "json": _check_json,
    "yaml": _check_yaml,
}


def _needs_qnn(block: Block) -> bool:
    """A block that compiles for QNN: each later line reads what the compile wrote."""
    return block.lang in ("sh", "bash") and any(
        " compile " in f" {c} " and "qnn" in c for c in _commands(block.body)
    )


def _params() -> list[object]:
    return [
        pytest.param(b, id=b.id, marks=[pytest.mark.ort_qnn] if _needs_qnn(b) else [])
        for b in BLOCKS
    ]


@pytest.mark.slow
@pytest.mark.parametrize("block", _params())
def test_doc_block_runs_or_says_why_not(block: Block, sandbox: Path) -> None:
    if _needs_qnn(block):
        from .confirm.ep_support import require_ep

        require_ep("qnn")  # skips, with the reason, where the QNN plugin is not installed
    if block.mark == "illustration":
        assert block.mark_arg, f"{block.id}: an illustration says why it does not run"
        return
    if _elsewhere(block):
        return
    if block.file == "README.md" and any(c in block.body for c in RUN_BY_CI):
        return  # .ci/run runs it verbatim (tests/test_repo.py)
    check = CHECKS.get(block.lang)
    assert check is not None, (
        f"{block.id}: a ```{block.lang or '(no language)'} block that no check runs: give it "
        "a language this test runs, or mark it <!-- doc: illustration: why -->"
    )
    check(block, sandbox)


def test_the_docs_have_blocks_and_most_of_them_run() -> None:
    runnable = [b for b in BLOCKS if b.mark != "illustration" and not _elsewhere(b)]
    assert len(BLOCKS) > 30 and len(runnable) > len(BLOCKS) / 2


def test_every_marker_is_right_above_a_block() -> None:
    """A marker that drifted away from its block would silently exempt nothing."""
    for path in [REPO / "README.md", *(REPO / "docs").glob("*.md")]:
        lines = path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if MARK_RE.search(line):
                nxt = next((x for x in lines[i + 1 :] if x.strip()), "")
                assert nxt.lstrip().startswith("```"), (
                    f"{path.name}:{i + 1}: marker not above a block"
                )
