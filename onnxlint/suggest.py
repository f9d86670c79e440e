"""``did you mean ...`` for a usage error: the closest known spellings of a bad value."""

from __future__ import annotations

from collections.abc import Iterable


def close_matches(word: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """Up to ``n`` known values that look like ``word`` (case-insensitive), best first."""
    import difflib  # only on a usage error: its import is a cost every lint would pay

    by_key: dict[str, str] = {}
    for choice in choices:
        by_key.setdefault(choice.lower(), choice)
    hits = difflib.get_close_matches(word.strip().lower(), list(by_key), n=n, cutoff=0.6)
    return [by_key[h] for h in hits]


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``"; did you mean 'OL301'?"`` (or one of several), or ``""`` when nothing is close."""
    hits = close_matches(word, choices)
    if not hits:
        return ""
    return "; did you mean " + " or ".join(repr(h) for h in hits) + "?"
