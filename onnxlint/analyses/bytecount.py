"""Byte counts with symbolic dims: what an edge between partitions moves per inference.

A count is a sum of terms ``coefficient * dim * dim ...`` over the symbolic dims it could
not resolve, capped at :data:`BYTES_CAP` so hostile shapes cannot blow up the arithmetic.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: A byte count above this is reported as "at least this much": shapes from a
#: hostile model (2^62 dims) must not make the arithmetic or the output explode.
BYTES_CAP = 1 << 64

#: A description shows this many symbolic terms at most (the largest ones): a graph of
#: thousands of unnamed dims would otherwise print a line of thousands of terms. The
#: JSON's ``symbolic`` field keeps every term.
TERMS_SHOWN = 4


@dataclass(frozen=True, slots=True)
class ByteCount:
    """A sum of monomials ``coefficient * dim_a * dim_b``; exact when there are no dims.

    ``unknown`` counts tensors whose size nobody knows (unknown rank or dtype);
    ``capped`` is set when the sum passed :data:`BYTES_CAP`.
    """

    terms: tuple[tuple[tuple[str, ...], float], ...] = ()
    unknown: int = 0
    capped: bool = False

    @classmethod
    def of(
        cls, dtype: str | None, shape: Sequence[Any] | None, assume: Mapping[str, int]
    ) -> ByteCount:
        # here, not at the top: a count read back from the report cache needs no onnx
        from onnxlint.analyses.static_types import is_generated_dim
        from onnxlint.analyses.value_types import dtype_bytes

        size = dtype_bytes(dtype)
        if size is None or shape is None:
            return cls(unknown=1)
        coef: float = size
        syms: list[str] = []
        for d in shape:
            if isinstance(d, int):
                coef *= max(d, 0)
            elif isinstance(d, str) and d in assume:
                coef *= assume[d]
            elif isinstance(d, str) and d and not is_generated_dim(d):
                syms.append(d)  # a dim an inferencer invented (unk__12) is not one to show
            else:
                return cls(unknown=1)
            if coef > BYTES_CAP:
                return cls(terms=(((), float(BYTES_CAP)),), capped=True)
        return cls(terms=((tuple(sorted(syms)), coef),))

    def __add__(self, other: ByteCount) -> ByteCount:
        return ByteCount.total((self, other))

    @classmethod
    def total(cls, counts: Iterable[ByteCount]) -> ByteCount:
        """The sum of many counts in one pass (adding them pairwise re-sorts every step)."""
        acc: dict[tuple[str, ...], float] = {}
        unknown = 0
        capped = False
        for c in counts:
            for k, v in c.terms:
                acc[k] = acc.get(k, 0) + v
            unknown += c.unknown
            capped = capped or c.capped
        for k, v in acc.items():
            if v > BYTES_CAP:
                acc[k] = float(BYTES_CAP)
                capped = True
        return cls(terms=tuple(sorted(acc.items())), unknown=unknown, capped=capped)

    @property
    def exact(self) -> int | None:
        """The byte count when it has no symbolic dims and nothing unknown."""
        if self.unknown or any(k for k, _ in self.terms):
            return None
        return int(sum(v for _, v in self.terms))

    @property
    def static_part(self) -> int:
        return int(sum(v for k, v in self.terms if not k))

    def describe(self, max_terms: int = TERMS_SHOWN) -> str:
        """``1.2 MiB``, ``3 KiB·batch + 12 B``, ``unknown``; beyond ``max_terms`` symbolic
        terms, the largest ones and ``+ 1,331 more symbolic terms``."""
        terms = [(syms, coef) for syms, coef in self.terms if coef != 0]
        symbolic = [t for t in terms if t[0]]
        hidden = 0
        if len(symbolic) > max_terms:
            shown = set(sorted(symbolic, key=lambda t: (-t[1], t[0]))[:max_terms])
            hidden = len(symbolic) - max_terms
            terms = [t for t in terms if not t[0] or t in shown]
        parts: list[str] = []
        for syms, coef in sorted(terms, key=lambda t: (len(t[0]), t[0])):
            text = human_bytes(coef)
            if syms:
                text += "·" + "·".join(syms)
            parts.append(text)
        if hidden:
            parts.append(f"{hidden:,} more symbolic term{'s' if hidden != 1 else ''}")
        out = " + ".join(parts) if parts else ("0 B" if not self.unknown else "")
        if self.capped:
            out = f"≥ {out}"
        if self.unknown:
            extra = f"{self.unknown} tensor{'s' if self.unknown != 1 else ''} of unknown size"
            out = f"{out} + {extra}" if out else extra
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "bytes": self.exact,
            "static_bytes": self.static_part,
            "symbolic": [{"dims": list(k), "bytes": v} for k, v in self.terms if k],
            "unknown_tensors": self.unknown,
            "capped": self.capped,
            "text": self.describe(),
        }


def human_bytes(n: float) -> str:
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            if unit == "B":
                return f"{n:.0f} B" if n == int(n) else f"{n:.1f} B"
            return f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} EiB"  # pragma: no cover
