"""Findings that a reported load failure makes untrue.

When a finding says that an EP's session fails at load (the ONNX Runtime it runs in
refuses the model's opset, IR version, an operator or an arrangement: a message its rule
lists in ``Rule.fails_load``, carried by the finding as ``Diagnostic.fails_load``), no
node of the model is assigned on that EP and no partition is made. The same report's
per-node fallback findings for that EP ("n0 falls back to CPU"), its partition findings
and its compile failures describe a session that never exists: they are consequences of
the load failure, which is reported once, where it starts. :func:`drop_consequences` removes them from a report's findings; the verdict lines
of the partition summary say that the EP loads nothing instead
(:func:`onnxlint.render.partitions.verdict_lines`).

A load failure that names no EP (the target ORT itself refuses the model) fails every EP
of the lint. Only findings that survived the user's selection count: with the load
failure ignored (``--ignore OL201``), the prediction of the session as if it loaded is
shown again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from onnxlint.diagnostics import Category, Diagnostic

#: the categories of findings about a session on one EP: what that session assigns
CONSEQUENT_CATEGORIES = frozenset({Category.EP_SUPPORT, Category.PARTITION})

#: the key of :func:`load_failures` for a load failure that names no EP (every EP fails)
EVERY_EP = ""


def load_failures(diagnostics: Iterable[Diagnostic]) -> dict[str, Diagnostic]:
    """The first finding of each EP whose session fails at load, by the finding's EP
    (``EVERY_EP`` when it names none)."""
    out: dict[str, Diagnostic] = {}
    for d in diagnostics:
        if d.fails_load:
            out.setdefault(d.ep or EVERY_EP, d)
    return out


def failure_for(failures: dict[str, Diagnostic], ep: str) -> Diagnostic | None:
    """The load failure that covers ``ep`` (a profile id), if any."""
    return failures.get(ep) or failures.get(EVERY_EP)


def drop_consequences(diagnostics: Sequence[Diagnostic]) -> list[Diagnostic]:
    """``diagnostics`` without the EP-support and partition findings of an EP whose
    session fails at load (the load failures themselves stay)."""
    failures = load_failures(diagnostics)
    if not failures:
        return list(diagnostics)
    return [
        d
        for d in diagnostics
        if not (
            d.ep
            and d.category in CONSEQUENT_CATEGORIES
            and failure_for(failures, d.ep) is not None
            and not d.fails_load
        )
    ]
