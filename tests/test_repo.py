"""Repository invariants: README commands, CI script, packaging of the data folder."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from .conftest import REPO


def _readme_commands() -> list[str]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    quick = readme.split("## Quick start")[1].split("\n## ")[0]
    return [b.strip() for b in re.findall(r"```sh\n(.*?)```", quick, re.S)]


def test_readme_has_the_two_newcomer_commands() -> None:
    install_run, tests = _readme_commands()[:2]
    assert "pip install" in install_run and "onnxlint examples/demo.onnx" in install_run
    assert "pytest" in tests


def _dependencies() -> list[str]:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    data = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))
    return list(data["project"]["dependencies"])


def _ci_lines() -> list[str]:
    return [line.strip() for line in (REPO / ".ci" / "run").read_text("utf-8").splitlines()]


def test_ci_runs_the_readme_install_then_its_test_command_before_any_extra() -> None:
    """CI installs what the README installs: its quick start verbatim in a fresh venv, then
    the README's test command, and only then the extras (QNN, OpenVINO, torch)."""
    install, test_cmd = _readme_commands()[:2]
    ci = [line for line in _ci_lines() if line and not line.startswith("#")]
    assert install in ci and test_cmd in ci
    first_install = next(i for i, line in enumerate(ci) if "pip install" in line)
    assert ci[first_install] == install, "the first install in .ci/run must be the README's"
    assert ci.index("rm -rf .venv") < ci.index(install) < ci.index(test_cmd)
    extras = [i for i, line in enumerate(ci) if "pip install" in line and line != install]
    extras += [i for i, line in enumerate(ci) if ".ci/setup-openvino.sh" in line]
    extras += [i for i, line in enumerate(ci) if ".ci/torch-tests.sh" in line]
    assert extras and min(extras) > ci.index(test_cmd)


def test_ci_requires_the_ep_tests_to_run_once_the_extras_are_installed() -> None:
    ci = "\n".join(_ci_lines())
    assert (
        'ONNXLINT_REQUIRE_MARKERS=ort_qnn,ort_openvino python -m pytest -m "ort_qnn or ort_openvino"'
        in ci
    )
    assert "ONNXLINT_REQUIRE_MARKERS=torch bash .ci/torch-tests.sh" in ci


def test_the_readme_install_needs_no_extra_for_the_suite() -> None:
    """The README installs ``.[test]`` only: sympy must come from onnxlint's own
    dependencies, not from onnxruntime-qnn."""
    install = _readme_commands()[0]
    assert re.findall(r'"\.\[([^\]]*)\]"', install) == ["test"]
    assert any(d.startswith("sympy") for d in _dependencies())


def test_ci_tests_the_oldest_onnxruntime_pyproject_allows() -> None:
    from onnxlint.ort_versions import table_release

    (floor,) = [d.split(">=")[1] for d in _dependencies() if d.startswith("onnxruntime>=")]
    # the floor has the assignment API --confirm reads, and a row in the table
    assert tuple(int(x) for x in floor.split(".")[:2]) >= (1, 24)
    row = table_release(floor)
    assert row.exact and row.source == "measured"
    ci = "\n".join(_ci_lines())
    assert 're.fullmatch(r"onnxruntime>=([\\d.]+)", d)' in ci
    assert 'pip install --quiet -e ".[test]" "onnxruntime==$oldest"' in ci
    assert "python .ci/same_findings.py demo-newest.json demo-oldest.json" in ci


def test_demo_model_is_reproducible(tmp_path: Path) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_demo", REPO / "examples" / "build_demo.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.build().SerializeToString() == (REPO / "examples" / "demo.onnx").read_bytes()


def _wheel_data() -> dict[str, Path]:
    """What the wheel's hatch configuration puts under ``onnxlint/_data``: wheel path ->
    repository file."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    wheel = config["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["packages"] == ["onnxlint"]
    out: dict[str, Path] = {}
    for src, dest in wheel["force-include"].items():
        path = REPO / src
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        assert files, f"force-include {src!r} names nothing"
        for f in files:
            out[(Path(dest) / f.relative_to(path)).as_posix() if f != path else dest] = f
    return out


def test_the_wheel_ships_the_profiles_and_not_the_developer_tools() -> None:
    data = _wheel_data()
    shipped = {f.relative_to(REPO).as_posix() for f in data.values()}
    assert all(n.startswith("onnxlint/_data/") for n in data)
    # every profile, schema and version table (what onnxlint.data reads) ships
    profiles = {p.relative_to(REPO).as_posix() for p in (REPO / "rules" / "eps").glob("*.json")}
    assert "rules/eps/index.json" in profiles and "rules/eps/qnn-htp.json" in profiles
    assert profiles <= shipped
    assert "onnxlint/_data/schema/ep-profile.schema.json" in data
    assert "onnxlint/_data/ort_versions.json" in data
    # so does everything else under rules/ but the facts the profiles are generated from
    data_files = {
        p.relative_to(REPO).as_posix()
        for p in (REPO / "rules").rglob("*")
        if p.is_file() and p.relative_to(REPO / "rules").parts[0] != "facts"
    }
    assert shipped == data_files
    # the developer scripts and the facts stay out; the package holds no scripts either
    assert not any(s.startswith(("tools/", "rules/facts/")) for s in shipped)
    assert (REPO / "tools" / "gen_profiles.py").exists()
    assert not (REPO / "rules" / "tools").exists()
    assert not any((REPO / "onnxlint").rglob("gen_profiles.py"))


@pytest.mark.slow
def test_wheel_ships_the_data_folder_and_works(tmp_path: Path) -> None:
    """Build the wheel, install it alone into a folder, and lint with it from elsewhere."""
    wheel_dir = tmp_path / "wheel"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheel_dir), str(REPO)],
        check=True,
        timeout=300,
    )
    wheel = next(wheel_dir.glob("onnxlint-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {n for n in names if n.startswith("onnxlint/_data/")} == set(_wheel_data())
    assert not any("gen_profiles" in n or "ep_facts" in n or "/facts/" in n for n in names)
    assert "onnxlint/py.typed" in names
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        timeout=300,
    )
    probe = (
        "import onnxlint, onnxlint.data as d; "
        "print(onnxlint.__file__); print(d.data_dir()); "
        "from onnxlint.ort_versions import release; print(release('1.20').max_opset)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        env={"PYTHONPATH": str(target), "PATH": ""},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert out[0].startswith(str(target)) and out[1].endswith("_data") and out[2] == "21"
    lint = subprocess.run(
        [
            sys.executable,
            "-m",
            "onnxlint",
            str(REPO / "examples" / "demo.onnx"),
            "--format",
            "json",
        ],
        cwd=tmp_path,
        env={"PYTHONPATH": str(target), "PATH": ""},
        capture_output=True,
        text=True,
    )
    assert lint.returncode in (0, 1), lint.stderr
    assert '"OL105"' in lint.stdout or "OL105" in lint.stdout
