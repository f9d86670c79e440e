"""Einsum equation forms, for the ``einsum_equation`` constraint.

An EP that lowers Einsum to a few fixed operator sequences accepts an equation by its
structure: which axis letters sit at which positions of the two operands and the result,
whatever the letters are. Each form below is one such structure, named after the
sequence it lowers to; a profile lists the forms its EP takes (``allowed``), and the
facts behind that list (which source file says what) live in the profile's provenance.

The forms compare positions exactly as the QNN EP's Einsum builder does
(``einsum_op_builder.cc``): two explicit operands, an explicit result, every term at
least two letters, letters only (no ellipsis, no spaces counted). A position one of the
terms does not have never matches.
"""

from __future__ import annotations

from collections.abc import Callable

Terms = tuple[str, str, str]


def parse(equation: str) -> Terms | None:
    """The two operand terms and the result of ``equation``; None unless it has exactly
    that shape (``a,b->c``, letters only, each term at least two letters)."""
    eq = equation.replace(" ", "")
    lhs, arrow, result = eq.partition("->")
    if not arrow:
        return None
    first, comma, second = lhs.partition(",")
    if not comma:
        return None
    terms = (first, second, result)
    if any(len(t) < 2 or not t.isalpha() or not t.isascii() for t in terms):
        return None
    return terms


def _at(term: str, i: int) -> str | None:
    return term[i] if 0 <= i < len(term) else None


def _same(*letters: str | None) -> bool:
    return letters[0] is not None and all(x == letters[0] for x in letters[1:])


def _batch_prefix(t1: str, t2: str, r: str) -> bool:
    """The leading axes (all of the first operand's but its last two) are the same
    letters, at the same positions, in both operands and the result."""
    return all(_same(t1[i], _at(t2, i), _at(r, i)) for i in range(len(t1) - 2))


def matmul(t1: str, t2: str, r: str) -> bool:
    """``...mk,...kn->...mn`` (a MatMul)."""
    n = len(t1)
    return (
        _batch_prefix(t1, t2, r)
        and _same(t1[n - 2], _at(r, n - 2))
        and _same(t1[n - 1], _at(t2, n - 2))
        and _same(_at(t2, n - 1), _at(r, n - 1))
    )


def matmul_transpose_y(t1: str, t2: str, r: str) -> bool:
    """``...mk,...nk->...mn`` (a MatMul with the second operand transposed)."""
    n = len(t1)
    return (
        _batch_prefix(t1, t2, r)
        and _same(t1[n - 2], _at(r, n - 2))
        and _same(t1[n - 1], _at(t2, n - 1))
        and _same(_at(t2, n - 2), _at(r, n - 1))
    )


def matmul_transpose_all(t1: str, t2: str, r: str) -> bool:
    """Rank 4, ``bkxm,bnxk->bnxm`` shaped (operands and result transposed around a
    MatMul): one shared leading axis; the first operand's last axis is the result's last;
    its second axis is the second operand's last; the second operand's second axis is the
    result's second."""
    if len(t1) != 4:
        return False
    return (
        _same(t1[0], _at(t2, 0), _at(r, 0))
        and _same(t1[3], _at(r, 3))
        and _same(t1[1], _at(t2, 3))
        and _same(_at(t2, 1), _at(r, 1))
    )


def matmul_broadcast_transpose_y(t1: str, t2: str, r: str) -> bool:
    """``bhmk,hnk->bhmn``: a rank-3 second operand broadcast over the first axis and
    transposed."""
    if (len(t1), len(t2), len(r)) != (4, 3, 4):
        return False
    return (
        t1[2] == r[2]
        and t1[3] == t2[2]
        and t2[1] == r[3]
        and t1[0] == r[0]
        and t1[1] == r[1]
        and t2[0] == r[1]
    )


def reduce_sum_mul_broadcast_x(t1: str, t2: str, r: str) -> bool:
    """``bhwc,wkc->bhwk``: a product broadcast over the first operand's third axis, then
    a sum over the shared last axis."""
    if (len(t1), len(t2), len(r)) != (4, 3, 4):
        return False
    return (
        t1[3] == t2[2]
        and t1[2] == t2[0]
        and t1[2] == r[2]
        and t2[1] == r[3]
        and t1[0] == r[0]
        and t1[1] == r[1]
    )


FORMS: dict[str, Callable[[str, str, str], bool]] = {
    "matmul": matmul,
    "matmul_transpose_y": matmul_transpose_y,
    "matmul_transpose_all": matmul_transpose_all,
    "matmul_broadcast_transpose_y": matmul_broadcast_transpose_y,
    "reduce_sum_mul_broadcast_x": reduce_sum_mul_broadcast_x,
}


def forms_of(equation: str) -> list[str]:
    """The names of the forms ``equation`` has (empty when it parses as none)."""
    terms = parse(equation)
    if terms is None:
        return []
    return [name for name, test in FORMS.items() if test(*terms)]
