"""The language server's garbage collection, moved off the change -> diagnostics path.

A server keeps the recent lint results alive (a 10k-node model's index, report and
maps are hundreds of thousands of objects). CPython's collector scans the oldest
generation again whenever enough new objects have survived since its last full pass,
and a lint of a large model makes that many: one re-lint in three or four of
``synth_10k`` spent 0.33-0.42 s scanning results that were still in use, the others
0.05 s (measured with ``gc.callbacks``, docs/performance.md).

So after each publish the server *freezes* what is alive (``gc.freeze``: the objects
move to a generation the collector never scans; reference counting still frees them
as usual), and the next lint's collections scan only what that lint allocates. What
freezing keeps from the collector is the cyclic garbage of replaced results, so when
the server has been idle for ``IDLE_S`` it thaws, collects and freezes again: the
full pass happens while nobody waits for diagnostics.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable

#: seconds without a lint scheduled or running before the idle full collection
IDLE_S = 2.0


class IdleCollector:
    """Freezes after each publish; collects in full once the server is idle.

    ``busy`` says whether a lint is scheduled or running (the service's own view);
    the collection waits for it. ``collections`` counts the idle full passes.
    """

    def __init__(self, busy: Callable[[], bool], idle_s: float = IDLE_S) -> None:
        self.busy = busy
        self.idle_s = idle_s
        self.collections = 0
        self._pending: asyncio.Task[None] | None = None

    def published(self) -> None:
        """After a publish: freeze what is alive, and collect once the server is idle."""
        gc.freeze()
        self.activity()
        self._pending = asyncio.get_running_loop().create_task(self._collect_when_idle())

    def activity(self) -> None:
        """A change arrived: the idle collection waits for the next quiet period."""
        if self._pending is not None and not self._pending.done():
            self._pending.cancel()
        self._pending = None

    async def _collect_when_idle(self) -> None:
        await asyncio.sleep(self.idle_s)
        if self.busy():  # a lint in flight: its publish schedules the next attempt
            return
        gc.unfreeze()
        try:
            gc.collect()
        finally:
            gc.freeze()
        self.collections += 1

    def close(self) -> None:
        """Stop and give every frozen object back to the collector."""
        self.activity()
        gc.unfreeze()
