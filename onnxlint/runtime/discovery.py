"""What an interpreter can run: ask it, in an isolated worker.

Sits above both ``runners`` (which interpreter serves an EP) and ``client`` (how a
worker is run), so neither of those imports the other.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any

from onnxlint.ep_names import CPU_EP, providers
from onnxlint.runtime.batch import WorkerItem, run_items
from onnxlint.runtime.runners import EpSpec, provider_name, resolve_runner


@dataclass
class RunnerInfo:
    """What one interpreter can run (the ``discover`` request's answer)."""

    python: str
    ok: bool
    error: str | None = None
    onnxruntime: str | None = None
    packages: dict[str, str] = field(default_factory=dict)
    available_providers: list[str] = field(default_factory=list)
    plugins: dict[str, Any] = field(default_factory=dict)
    devices: list[dict[str, Any]] = field(default_factory=list)

    def providers(self) -> list[str]:
        """Providers this runner can create sessions on (classic + plugin with a device)."""
        out = [p for p in self.available_providers if p != "AzureExecutionProvider"]
        for d in self.devices:
            name = d.get("ep_name")
            if name and name not in out:
                out.append(name)
        return out

    def has(self, ep: str) -> bool:
        return provider_name(ep) in self.providers()


def discover(python: str | None = None, *, timeout_s: float = 60.0) -> RunnerInfo:
    """Ask ``python`` (in an isolated worker) which EPs and devices it has."""
    exe = python or sys.executable
    res = run_items(
        [WorkerItem(id="discover", kind="discover")],
        spec=EpSpec(CPU_EP),
        runner=exe,
        timeout_s=timeout_s,
    )[0]
    if not res.ok:
        return RunnerInfo(python=exe, ok=False, error=res.error)
    f = res.facts
    return RunnerInfo(
        python=exe,
        ok=True,
        onnxruntime=res.versions.get("onnxruntime"),
        packages=dict(res.versions.get("packages", {})),
        available_providers=list(f.get("available_providers", [])),
        plugins=dict(f.get("plugins", {})),
        devices=list(f.get("devices", [])),
    )


def discover_all(
    runners: dict[str, str] | None = None,
    *,
    root: str | os.PathLike[str] | None = None,
    eps: list[str] | None = None,
    timeout_s: float = 60.0,
) -> dict[str, RunnerInfo]:
    """Discover every distinct runner that ``eps`` (default: all aliases) resolve to.

    Returns interpreter path -> RunnerInfo; each interpreter is asked once.
    """
    wanted = eps or providers()
    pythons: list[str] = []
    for ep in wanted:
        exe = resolve_runner(ep, runners, root=root)
        if exe not in pythons:
            pythons.append(exe)
    return {exe: discover(exe, timeout_s=timeout_s) for exe in pythons}
