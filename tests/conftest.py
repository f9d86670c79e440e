"""Shared fixtures: models from ONNX text, the onnx package's light models, CLI runner."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import onnx
import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session", autouse=True)
def _private_cache_dir(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """The suite's level-1 and confirm caches live in a temporary folder, never in the
    user's cache (child processes inherit the variable)."""
    if os.environ.get("ONNXLINT_CACHE_DIR"):
        yield
        return
    os.environ["ONNXLINT_CACHE_DIR"] = str(tmp_path_factory.mktemp("onnxlint-cache"))
    try:
        yield
    finally:
        os.environ.pop("ONNXLINT_CACHE_DIR", None)


#: CI sets this once the extras are installed ("ort_qnn,ort_openvino", "torch"): a test
#: with one of these markers that skips then fails, so EP tests run there, never skip
REQUIRE_MARKERS_ENV = "ONNXLINT_REQUIRE_MARKERS"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    outcome = yield
    report = outcome.get_result()
    required = {m.strip() for m in os.environ.get(REQUIRE_MARKERS_ENV, "").split(",") if m.strip()}
    if not (report.skipped and required):
        return
    marked = required & {m.name for m in item.iter_markers()}
    if marked:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = (
            f"skipped although {', '.join(sorted(marked))} must run here "
            f"({REQUIRE_MARKERS_ENV}): {reason}"
        )


def light_models() -> list[Path]:
    base = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
    return sorted(base.glob("*.onnx"))


def parse(text: str) -> onnx.ModelProto:
    return onnx.parser.parse_model(text)


def user_profile(
    op: str = "Conv", since: int = 11, types: list[str] | None = None
) -> dict[str, Any]:
    """The smallest valid user EP profile (``--ep-profile``): one op, one type list."""
    return {
        "schema_version": 1,
        "id": "my-npu",
        "ep": "MyNpuExecutionProvider",
        "describes": {"onnxruntime": "1.31.1", "sdk": "MyNPU 3.2"},
        "provenance": [{"id": "vendor-docs", "kind": "manual", "file": "npu-ops.pdf"}],
        "kind": "compiling",
        "ops": [
            {
                "domain": "ai.onnx",
                "op": op,
                "versions": [{"from": since}],
                "types": {"T": types if types is not None else ["float16"]},
                "provenance": "vendor-docs",
            }
        ],
    }


def run_cli(
    *args: str, cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "onnxlint", *args],
        capture_output=True,
        text=True,
        cwd=cwd or REPO,
        timeout=timeout,
        env=env,
        check=False,
    )


@pytest.fixture
def cli():
    return run_cli
