"""A memory ceiling for the fuzz run, so a blow-up fails a test instead of the machine.

Without it, one fuzzed model (a 10^9 dim reaching a model-local function, see
test_fuzz_regressions.py) made ONNX shape inference allocate 18 GB and the kernel's OOM
killer ended the whole pytest process. With the ceiling the allocation fails inside the
library, the linter reports it, and the invariants flag it.
"""

from __future__ import annotations

import contextlib
import os
import resource
from collections.abc import Iterator

import pytest

#: headroom above what the process has mapped when the fuzz module starts
HEADROOM_MB = int(os.environ.get("ONNXLINT_FUZZ_HEADROOM_MB", "2560"))


def _mapped_bytes() -> int:
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


@pytest.fixture(scope="module", autouse=True)
def memory_ceiling() -> Iterator[int | None]:
    if not os.path.exists("/proc/self/status"):
        yield None  # not Linux: no ceiling, the per-input peak-RSS check still runs
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    # import what lint imports lazily first, so the ceiling is measured above it
    import onnxruntime

    import onnxlint.engine
    import onnxlint.rule

    onnxlint.rule.all_rules()
    with contextlib.suppress(Exception):  # the shapes analysis's fallback (imports torch)
        import onnxruntime.tools.symbolic_shape_infer  # noqa: F401
    ceiling = _mapped_bytes() + HEADROOM_MB * 2**20
    if hard != resource.RLIM_INFINITY:
        ceiling = min(ceiling, hard)
    resource.setrlimit(resource.RLIMIT_AS, (ceiling, hard))
    try:
        yield ceiling
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
