"""Which rules are on: ``select``/``ignore`` by code, code prefix, category or rule name.

The most specific matching selector decides; at equal specificity ``ignore``
wins. ``ALL`` matches everything with the lowest specificity. A renamed rule's old codes
and names (its ``aliases``, from the code table) match it exactly, never as a prefix.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence

from onnxlint.diagnostics import Category

_CATEGORIES = {c.value for c in Category}


def _specificity(
    selector: str, code: str, name: str, category: str, aliases: Sequence[str] = ()
) -> int:
    """How specifically ``selector`` matches a rule; 0 when it does not match."""
    s = selector.strip()
    if not s:
        return 0
    for alias in aliases:
        if s.lower() == alias.lower():
            # an old code counts as the code, an old name as the name
            return 10 + len(alias) if alias.upper().startswith("OL") else 100
    if s.upper() == "ALL":
        return 1
    if s.lower() == category:
        return 2
    if s.lower() == name:
        return 100
    up = s.upper()
    if code.startswith(up) and up.startswith("OL"):
        return 10 + len(up)  # OL3 < OL30 < OL301
    return 0


def is_enabled(
    code: str,
    name: str,
    category: str,
    select: Iterable[str],
    ignore: Iterable[str],
    aliases: Sequence[str] = (),
) -> bool:
    best_select = max((_specificity(s, code, name, category, aliases) for s in select), default=0)
    best_ignore = max((_specificity(s, code, name, category, aliases) for s in ignore), default=0)
    if best_select == 0:
        return False
    return best_select > best_ignore


def unknown_selectors(
    selectors: Iterable[str],
    codes: Iterable[str],
    names: Iterable[str],
    aliases: Iterable[str] = (),
) -> list[str]:
    """Selectors that match no rule at all (reported as a usage error)."""
    codes, names = list(codes), list(names)
    old = {a.lower() for a in aliases}
    bad = []
    for s in selectors:
        t = s.strip()
        if t.upper() == "ALL" or t.lower() in _CATEGORIES or t.lower() in names or t.lower() in old:
            continue
        if any(c.startswith(t.upper()) for c in codes) and t.upper().startswith("OL"):
            continue
        bad.append(s)
    return bad


def glob_matches(patterns: Iterable[str], *candidates: str | None) -> bool:
    """Whether a pattern equals or globs one of the candidates (equality first, so a node
    name holding ``[``, ``*`` or ``?`` still matches itself)."""
    return any(c == p or fnmatch.fnmatchcase(c, p) for p in patterns for c in candidates if c)
