"""The CLI's kept output (``onnxlint.cli.replay``): a re-run of an unchanged lint prints
what the lint printed, byte for byte, with its exit code, before onnx, onnxruntime or
the report cache are imported; anything the output depends on that changed makes the
lint run again, and an entry that is damaged, foreign or not a regular file of this
user is removed, never trusted.

Every run here is a fresh interpreter through ``onnxlint.cli.run`` (the console entry
point), which reports what it imported from an exit handler (those run on a replay
too), so whether a run replayed is read from ``sys.modules``, never from timings.
"""

from __future__ import annotations

import json
import marshal
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from onnxlint.cli import replay
from tests.conftest import REPO, user_profile
from tests.test_report_cache import _external_model, _model

PROBE = """
import atexit, os, sys

def _note():
    with open(os.environ["REPLAY_PROBE"], "w") as fh:
        fh.write("\\n".join([sys.modules["onnxlint"].__file__, *sorted(sys.modules)]))

atexit.register(_note)
sys.argv[0] = "onnxlint"
from onnxlint.cli import run

run()
"""

DEMO = REPO / "examples" / "demo.onnx"


@dataclass
class Run:
    code: int
    out: bytes
    err: bytes
    modules: set[str]
    #: the onnxlint package that ran (its ``__init__.py``)
    package: str

    @property
    def replayed(self) -> bool:
        """Printed the kept output: neither the lint nor the report cache was imported."""
        return (
            "onnxlint.report_cache" not in self.modules and "onnxlint.cli.lint" not in self.modules
        )


@pytest.fixture
def lint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """``lint(*args, cwd=, env=, tty=)``: one run of the command line in a new process,
    with a cache folder of this test's own."""
    cache = tmp_path / "cache"
    probe = tmp_path / "modules.txt"

    def run(
        *args: str,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        drop: tuple[str, ...] = (),
        tty: bool = False,
    ) -> Run:
        full = {**os.environ, "NO_COLOR": "1", "ONNXLINT_CACHE_DIR": str(cache)}
        full["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), full.get("PYTHONPATH")]))
        full.pop("ONNXLINT_NO_CACHE", None)
        full.update(env or {})
        for name in drop:
            full.pop(name, None)
        full["REPLAY_PROBE"] = str(probe)
        probe.unlink(missing_ok=True)
        command = [sys.executable, "-c", PROBE, *args]
        if tty:
            code, out, err = _run_on_a_terminal(command, cwd or tmp_path, full)
        else:
            done = subprocess.run(
                command, capture_output=True, cwd=cwd or tmp_path, env=full, timeout=300,
                check=False,
            )  # fmt: skip
            code, out, err = done.returncode, done.stdout, done.stderr
        assert probe.exists(), err.decode(errors="replace")
        package, *modules = probe.read_text().split("\n")
        return Run(code, out, err, set(modules), package)

    return run


def _run_on_a_terminal(
    command: list[str], cwd: Path, env: dict[str, str]
) -> tuple[int, bytes, bytes]:
    """Run with stdout on a pseudo-terminal (stderr a pipe); what the terminal got."""
    import pty

    main, secondary = pty.openpty()
    with subprocess.Popen(
        command, stdout=secondary, stderr=subprocess.PIPE, cwd=cwd, env=env
    ) as proc:
        os.close(secondary)
        chunks = []
        while True:
            try:
                chunk = os.read(main, 1 << 16)
            except OSError:  # the other end closed
                break
            if not chunk:
                break
            chunks.append(chunk)
        err = proc.stderr.read() if proc.stderr else b""
        code = proc.wait(timeout=300)
    os.close(main)
    return code, b"".join(chunks), err


def _entries(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "cache" / replay.FOLDER).glob("*" + replay.SUFFIX))


def _same(a: Run, b: Run) -> None:
    assert (a.code, a.out, a.err) == (b.code, b.out, b.err)


# ---------------------------------------------------------------------------
# A hit


@pytest.mark.parametrize(
    "extra",
    [
        (),
        ("--format", "concise"),
        ("--format", "json"),
        ("--format", "sarif"),
        ("--format", "github"),
        ("--report", "partitions", "-q"),
        ("--statistics",),
    ],
)
def test_a_rerun_prints_the_lints_output_without_importing_onnx(
    lint, tmp_path: Path, extra: tuple[str, ...]
) -> None:
    shutil.copy(DEMO, tmp_path / "demo.onnx")
    args = ("demo.onnx", "--ep", "qnn", *extra)
    fresh = lint(*args, "--no-cache")
    first = lint(*args)
    assert not first.replayed and "onnx" in first.modules
    again = lint(*args)
    assert again.replayed
    assert not {"onnx", "onnxruntime", "argparse", "onnxlint.config"} & again.modules
    _same(again, first)
    _same(again, fresh)
    assert again.code == 1 and again.out  # the demo has errors
    assert len(_entries(tmp_path)) == 1


def test_a_clean_model_and_several_files_replay_too(lint, tmp_path: Path) -> None:
    for name in ("a", "b"):
        _model(tmp_path / f"{name}.onnx", relu=name == "a")
    args = ("a.onnx", "b.onnx", "--ep", "cpu", "--format", "json")
    first = lint(*args)
    again = lint(*args)
    assert again.replayed
    _same(again, first)
    assert [f["path"] for f in json.loads(again.out)["files"]] == ["a.onnx", "b.onnx"]


def test_a_folder_is_walked_again(lint, tmp_path: Path) -> None:
    folder = tmp_path / "models"
    folder.mkdir()
    _model(folder / "a.onnx")
    first = lint("models", "--ep", "qnn", "--format", "json")
    assert lint("models", "--ep", "qnn", "--format", "json").replayed
    _model(folder / "b.onnx", relu=False)
    grown = lint("models", "--ep", "qnn", "--format", "json")
    assert not grown.replayed and grown.out != first.out
    assert [f["path"] for f in json.loads(grown.out)["files"]] == ["models/a.onnx", "models/b.onnx"]
    _same(lint("models", "--ep", "qnn", "--format", "json", "--no-cache"), grown)


# ---------------------------------------------------------------------------
# What the output depends on


def _json(run: Run) -> dict:  # type: ignore[type-arg]
    return json.loads(run.out)  # type: ignore[no-any-return]


def test_changed_model_bytes_miss(lint, tmp_path: Path) -> None:
    model = _model(tmp_path / "m.onnx")
    args = ("m.onnx", "--ep", "qnn", "--format", "json")
    dynamic = lint(*args)
    assert lint(*args).replayed
    _model(model, batch=1)  # pinned dims: other findings
    pinned = lint(*args)
    assert not pinned.replayed and pinned.out != dynamic.out
    _same(pinned, lint(*args, "--no-cache"))
    # the same bytes under the same name in a link's place: another real path
    (tmp_path / "real").mkdir()
    model.rename(tmp_path / "real" / "m.onnx")
    model.symlink_to(tmp_path / "real" / "m.onnx")
    assert not lint(*args).replayed
    assert lint(*args).replayed


def test_configuration_files_added_changed_or_above_miss(lint, tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "models").mkdir(parents=True)
    _model(project / "models" / "m.onnx")
    args = ("models/m.onnx", "--ep", "qnn", "--format", "json")

    def codes(run: Run) -> set[str]:
        return {d["code"] for d in _json(run)["files"][0]["diagnostics"]}

    default = lint(*args, cwd=project)
    assert lint(*args, cwd=project).replayed
    # a pyproject.toml without [tool.onnxlint] two folders up: nothing changes, but it is read
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    assert not lint(*args, cwd=project).replayed
    # it gains [tool.onnxlint]
    (tmp_path / "pyproject.toml").write_text("[tool.onnxlint]\nselect = ['OL1']\n")
    selected = lint(*args, cwd=project)
    assert not selected.replayed and codes(selected) != codes(default)
    assert all(c.startswith("OL1") for c in codes(selected))
    # an onnxlint.toml beside the model wins over it
    (project / "models" / "onnxlint.toml").write_text("ignore = ['OL1']\n")
    ignored = lint(*args, cwd=project)
    assert not ignored.replayed and not any(c.startswith("OL1") for c in codes(ignored))
    assert lint(*args, cwd=project).replayed
    # edited in place
    (project / "models" / "onnxlint.toml").write_text('format = "concise"\n')
    concise = lint(*args[:3], cwd=project)
    assert not concise.replayed and not concise.out.startswith(b"{")
    _same(concise, lint(*args[:3], "--no-cache", cwd=project))


def test_an_explicit_config_file_is_checked(lint, tmp_path: Path) -> None:
    _model(tmp_path / "m.onnx")
    (tmp_path / "elsewhere").mkdir()
    config = tmp_path / "elsewhere" / "settings.toml"  # not where discovery looks
    config.write_text("select = ['ALL']\n")
    args = ("m.onnx", "--ep", "qnn", "--config", str(config), "--format", "json")
    everything = lint(*args)
    assert lint(*args).replayed
    config.write_text("select = ['OL0']\n")
    fewer = lint(*args)
    assert not fewer.replayed and fewer.out != everything.out


def test_an_ep_profile_file_is_checked(lint, tmp_path: Path) -> None:
    _model(tmp_path / "m.onnx")
    (tmp_path / "onnxlint.toml").write_text("ep-profiles = ['npu.json']\n")
    profile = tmp_path / "npu.json"
    profile.write_text(json.dumps(user_profile("Relu", 6, ["float16"])))
    args = ("m.onnx", "--format", "json")  # the profile is the EP list
    half = lint(*args)
    assert half.code in (0, 1) and lint(*args).replayed
    profile.write_text(json.dumps(user_profile("Relu", 6, ["float"])))
    full = lint(*args)
    assert not full.replayed and full.out != half.out
    _same(full, lint(*args, "--no-cache"))


@pytest.mark.parametrize(
    ("env", "drop"),
    [
        ({"FORCE_COLOR": "1"}, ("NO_COLOR",)),
        ({"COLUMNS": "60"}, ()),
        ({"ONNXLINT_SOMETHING_NEW": "1"}, ()),
        ({"XDG_CACHE_HOME": "/nonexistent"}, ()),
    ],
)
def test_changed_environment_variables_miss(
    lint, tmp_path: Path, env: dict[str, str], drop: tuple[str, ...]
) -> None:
    _model(tmp_path / "m.onnx")
    plain = lint("m.onnx", "--ep", "qnn")
    assert lint("m.onnx", "--ep", "qnn").replayed
    other = lint("m.onnx", "--ep", "qnn", env=env, drop=drop)
    assert not other.replayed
    assert lint("m.onnx", "--ep", "qnn", env=env, drop=drop).replayed
    if "FORCE_COLOR" in env:
        assert b"\x1b[" in other.out and b"\x1b[" not in plain.out
    assert lint("m.onnx", "--ep", "qnn").replayed  # each keeps its own entry


def test_flags_and_the_working_folder_are_part_of_the_key(lint, tmp_path: Path) -> None:
    for name, batch in (("a", "batch"), ("b", 1)):
        (tmp_path / name).mkdir()
        _model(tmp_path / name / "m.onnx", batch=batch)
    first = lint("m.onnx", "--ep", "qnn", "--format", "json", cwd=tmp_path / "a")
    assert lint("m.onnx", "--ep", "qnn", "--format", "json", cwd=tmp_path / "a").replayed
    assert not lint("m.onnx", "--ep", "qnn", "--format", "concise", cwd=tmp_path / "a").replayed
    assert not lint("m.onnx", "--ep", "qnn", "-q", "--format", "json", cwd=tmp_path / "a").replayed
    other = lint("m.onnx", "--ep", "qnn", "--format", "json", cwd=tmp_path / "b")
    assert not other.replayed and other.out != first.out
    _same(
        other, lint("m.onnx", "--ep", "qnn", "--format", "json", "--no-cache", cwd=tmp_path / "b")
    )


def test_a_changed_external_data_file_misses(lint, tmp_path: Path) -> None:
    model = _external_model(tmp_path)
    args = (model.name, "--ep", "cpu", "--format", "json")

    def codes(run: Run) -> set[str]:
        return {d["code"] for d in _json(run)["files"][0]["diagnostics"]}

    whole = lint(*args)
    assert lint(*args).replayed and "OL012" not in codes(whole)
    (tmp_path / "w.bin").write_bytes(bytes(16))  # the weight no longer fits
    short = lint(*args)
    assert not short.replayed and "OL012" in codes(short)


@pytest.mark.skipif(not sys.platform.startswith(("linux", "darwin")), reason="needs a pty")
def test_a_terminal_gets_its_own_entry(lint, tmp_path: Path) -> None:
    _model(tmp_path / "m.onnx")
    piped = lint("m.onnx", "--ep", "qnn")
    assert lint("m.onnx", "--ep", "qnn").replayed
    on_tty = lint("m.onnx", "--ep", "qnn", tty=True)
    assert not on_tty.replayed
    again = lint("m.onnx", "--ep", "qnn", tty=True)
    assert again.replayed and (again.code, again.out) == (on_tty.code, on_tty.out)
    assert piped.code == on_tty.code


def test_changed_installed_code_misses(lint, tmp_path: Path) -> None:
    """A copy of the package and its data: touching one rule's source is a new install."""
    install = tmp_path / "install"
    install.mkdir()
    shutil.copytree(
        REPO / "onnxlint", install / "onnxlint", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copytree(REPO / "rules", install / "rules")
    _model(tmp_path / "m.onnx")
    env = {"PYTHONPATH": str(install)}
    first = lint("m.onnx", "--ep", "qnn", env=env)
    assert first.package == str(install / "onnxlint" / "__init__.py")
    assert lint("m.onnx", "--ep", "qnn", env=env).replayed
    rule = install / "onnxlint" / "rules" / "shapes.py"
    os.utime(rule, ns=(rule.stat().st_atime_ns, rule.stat().st_mtime_ns + 10**9))
    again = lint("m.onnx", "--ep", "qnn", env=env)
    assert not again.replayed
    _same(again, first)
    data = install / "rules" / "ort_versions.json"
    data.write_text(data.read_text() + "\n")
    assert not lint("m.onnx", "--ep", "qnn", env=env).replayed


# ---------------------------------------------------------------------------
# What is never kept


def test_runs_that_write_files_or_skip_caches_keep_nothing(lint, tmp_path: Path) -> None:
    _model(tmp_path / "m.onnx")
    lint("m.onnx", "--ep", "qnn", "-o", "out.txt")
    lint("m.onnx", "--ep", "qnn", "--html", "r.html")
    lint("m.onnx", "--ep", "qnn", "--write-baseline", "base.json")
    lint("m.onnx", "--ep", "qnn", "--baseline", "base.json")
    lint("m.onnx", "--ep", "qnn", "--source", "m.onnx")
    lint("m.onnx", "--ep", "qnn", "--no-cache")
    lint("m.onnx", "--ep", "qnn", env={"ONNXLINT_NO_CACHE": "1"})
    summary = tmp_path / "summary.md"
    lint("m.onnx", "--ep", "qnn", "--format", "github", env={"GITHUB_STEP_SUMMARY": str(summary)})
    lint("m.onnx", "--ep", "qnn", "--select", "OL9999X")  # a usage error
    assert _entries(tmp_path) == []
    # the step summary is appended on every run, also with the report read back
    size = summary.stat().st_size
    lint("m.onnx", "--ep", "qnn", "--format", "github", env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert summary.stat().st_size == 2 * size


def test_parallel_lints_are_kept_by_the_next_run(lint, tmp_path: Path) -> None:
    for name in ("a", "b"):
        _model(tmp_path / f"{name}.onnx", relu=name == "a")
    args = ("a.onnx", "b.onnx", "--ep", "qnn", "-j", "2", "--format", "json")
    first = lint(*args)  # linted in other processes: their reports' files are not known here
    assert _entries(tmp_path) == []
    second = lint(*args)  # both read back from the report cache
    assert not second.replayed and len(_entries(tmp_path)) == 1
    third = lint(*args)
    assert third.replayed
    _same(third, first)


# ---------------------------------------------------------------------------
# Entries that must not be trusted


def _kept(lint, tmp_path: Path) -> tuple[Run, Path]:  # type: ignore[no-untyped-def]
    _model(tmp_path / "m.onnx")
    first = lint("m.onnx", "--ep", "qnn")
    (entry,) = _entries(tmp_path)
    return first, entry


def _rewrite(entry: Path, change) -> None:  # type: ignore[no-untyped-def]
    """Rewrite ``entry``'s body through ``change`` with a valid checksum."""
    body = entry.read_bytes().partition(b"\n")[2]
    data = marshal.loads(body)
    change(data)
    body = marshal.dumps(data)
    from onnxlint.filestamp import sha256

    entry.write_bytes(f"{replay.SCHEMA} {sha256(body).hexdigest()}\n".encode() + body)


@pytest.mark.parametrize(
    "damage",
    ["flipped", "truncated", "foreign key", "wrong type", "code object", "other schema"],
)
def test_a_damaged_or_foreign_entry_is_discarded(lint, tmp_path: Path, damage: str) -> None:
    first, entry = _kept(lint, tmp_path)
    if damage == "flipped":
        raw = bytearray(entry.read_bytes())
        raw[-3] ^= 0xFF
        entry.write_bytes(bytes(raw))
    elif damage == "truncated":
        entry.write_bytes(entry.read_bytes()[:-10])
    elif damage == "foreign key":
        _rewrite(entry, lambda d: d.update(key=d["key"].replace("qnn", "cpu")))
    elif damage == "wrong type":
        _rewrite(entry, lambda d: d.update(code="1"))
    elif damage == "code object":
        _rewrite(entry, lambda d: d.update(stdout=compile("print(1)", "x", "exec")))
    else:
        raw = entry.read_bytes()
        entry.write_bytes(b"onnxlint-output-0" + raw[len(replay.SCHEMA) :])
    again = lint("m.onnx", "--ep", "qnn")
    assert not again.replayed
    _same(again, first)
    assert lint("m.onnx", "--ep", "qnn").replayed  # the lint kept a good entry in its place


def test_a_forged_output_with_a_valid_checksum_is_printed_only_for_its_key(
    lint, tmp_path: Path
) -> None:
    """The entry's own key must match: a file renamed over another's name is foreign."""
    _model(tmp_path / "m.onnx")
    qnn_run = lint("m.onnx", "--ep", "qnn")
    cpu_run = lint("m.onnx", "--ep", "cpu")
    assert qnn_run.out != cpu_run.out
    by_ep = {}
    for entry in _entries(tmp_path):
        key = marshal.loads(entry.read_bytes().partition(b"\n")[2])["key"]
        by_ep["qnn" if "'qnn'" in key else "cpu"] = entry
    os.replace(by_ep["qnn"], by_ep["cpu"])  # the QNN output under the CPU lint's name
    again = lint("m.onnx", "--ep", "cpu")
    assert not again.replayed
    _same(again, cpu_run)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_entries_that_are_not_regular_files_are_not_read(lint, tmp_path: Path) -> None:
    first, entry = _kept(lint, tmp_path)
    good = entry.read_bytes()
    entry.unlink()
    os.mkfifo(entry)  # would block a plain read
    again = lint("m.onnx", "--ep", "qnn")
    assert not again.replayed
    _same(again, first)
    # a link to a good entry is not followed
    (tmp_path / "elsewhere.out").write_bytes(good)
    entry.unlink()
    entry.symlink_to(tmp_path / "elsewhere.out")
    assert not lint("m.onnx", "--ep", "qnn").replayed
    assert entry.is_file() and not entry.is_symlink()


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to give a file away"
)
def test_another_users_entry_is_not_read(lint, tmp_path: Path) -> None:
    _, entry = _kept(lint, tmp_path)
    os.chown(entry, 12345, 12345)
    assert not lint("m.onnx", "--ep", "qnn").replayed


# ---------------------------------------------------------------------------
# The run that keeps it


class _Slot:
    def __init__(self, real: str, kept: dict[str, object] | None) -> None:
        from onnxlint.filestamp import regular_file_digest

        found = regular_file_digest(real, 1 << 30)
        assert found is not None
        self.key = {
            "file": {"real": real, "sha256": found[0], "size": found[1]},
            "config": {"ep_profile_files": []},
        }
        self.kept = kept


def test_an_output_is_not_kept_when_its_inputs_changed_during_the_lint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import argparse

    monkeypatch.setenv("ONNXLINT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ONNXLINT_NO_CACHE", raising=False)
    monkeypatch.chdir(tmp_path)
    _model(tmp_path / "m.onnx")
    args = argparse.Namespace(paths=["m.onnx"])
    slot = _Slot(str(tmp_path / "m.onnx"), {})

    def door() -> replay.Door:
        found = replay.open_door(["m.onnx"])
        monkeypatch.setattr(replay, "_ACTIVE", None)
        assert found is not None
        found.snapshot(["m.onnx"])
        return found

    # an onnxlint.toml appeared after the configuration was discovered
    d = door()
    (tmp_path / "onnxlint.toml").write_text("select = ['OL1']\n")
    assert d.offer(args, ["m.onnx"], [slot], [], "out", "", 0) is False
    # a configuration file (--config, where discovery does not look) rewritten after it
    # was loaded
    (tmp_path / "onnxlint.toml").unlink()
    (tmp_path / "elsewhere").mkdir()
    config = tmp_path / "elsewhere" / "settings.toml"
    config.write_text("select = ['OL1']\n")
    d = door()
    from onnxlint.filestamp import stamp

    before = stamp(config)
    config.write_text("select = ['OL2']\n")
    assert d.offer(args, ["m.onnx"], [slot], [(str(config), before)], "o", "", 0) is False
    assert d.offer(args, ["m.onnx"], [slot], [(str(config), stamp(config))], "o", "", 0) is True
    # a report the report cache did not keep (a volatile lint, another process's)
    d = door()
    assert (
        d.offer(args, ["m.onnx"], [_Slot(str(tmp_path / "m.onnx"), None)], [], "o", "", 0) is False
    )
    assert d.offer(args, ["m.onnx"], [None], [], "o", "", 0) is False
    # a model file that appeared in a linted folder
    d = door()
    _model(tmp_path / "n.onnx")
    assert d.offer(argparse.Namespace(paths=["."]), ["m.onnx"], [slot], [], "o", "", 0) is False
    # all as it was: kept
    d = door()
    assert d.offer(args, ["m.onnx"], [slot], [], "out", "", 0) is True
