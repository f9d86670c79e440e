"""The records the dataflow analysis keeps per value (``analyses.dataflow``)."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING

from onnxlint.analyses.elements import Elem

if TYPE_CHECKING:
    from onnxlint.index import NodeRef


class Constness(enum.Enum):
    CONSTANT = 0
    SHAPE_DERIVED = 1
    DATA_DEPENDENT = 2

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, Constness):
            return NotImplemented
        return self.value >= other.value

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, Constness):
            return NotImplemented
        return self.value > other.value


@dataclass(frozen=True, slots=True)
class ValueFacts:
    """What dataflow knows about one value (internal record, exposed for tools)."""

    kind: Constness
    #: first node that made the value data-dependent (None for a graph input itself)
    origin: NodeRef | None = None
    #: the graph input (or other source) the data dependence comes from
    source: str | None = None
    #: symbolic dims a SHAPE_DERIVED value depends on; UNKNOWN_SYMBOL for unknown ones
    symbols: frozenset[str] = frozenset()
    #: known elements of a small integer tensor
    value: tuple[Elem, ...] | None = None
    #: the value's shape depends on runtime values
    shape_dependent: bool = False
    #: the node that made the shape data-dependent
    shape_origin: NodeRef | None = None


def moved_facts(f: ValueFacts, moved: dict[int, NodeRef]) -> ValueFacts:
    """``f`` with its nodes replaced by the records at the same positions of another index
    (``moved``, by ``id`` of the old record; a record not in it stays)."""
    if f.origin is None and f.shape_origin is None:
        return f

    def to(ref: NodeRef | None) -> NodeRef | None:
        return None if ref is None else moved.get(id(ref), ref)

    return ValueFacts(
        f.kind, to(f.origin), f.source, f.symbols, f.value, f.shape_dependent, to(f.shape_origin)
    )
