"""Node labels in graph paths: a node's real name whenever that name identifies it.

A graph path is ``main``, ``main/Loop_3:body``, ``fn:local.MyFn``; a node path is
its graph's path, ``/``, then the node's label. The label is

- the node's name, as is, when the name is non-empty and unique in its graph and
  holds none of the path syntax (``/``, ``:``, ``"``, ``\\``, control characters,
  surrounding blanks): ``main/conv1``;
- the name quoted like a JSON string when it is unique but holds such characters
  (TorchScript and dynamo exports name nodes ``/model/encoder/layer.0/MatMul``), or
  when it would read as another node's synthetic label: ``main/"/model/encoder/MatMul"``;
- a synthetic ``OpType_index`` only for an empty or duplicated name (:func:`is_synthetic`
  tells the two apart, so front ends can say so).

Every name round-trips: :func:`unquote` gives the name back from its label. This is
the only place labels are made; the index, the loader's messages and locations use it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence

_NEEDS_QUOTES = re.compile(r'[/:"\\\x00-\x1f\x7f]|^\s|\s$')
#: ``json.dumps(name, ensure_ascii=False)`` for a string, with the encoder made once:
#: ``dumps`` builds a new one per call when given any option (once per node name)
_json_string = json.JSONEncoder(ensure_ascii=False).encode


def synthetic_label(op_type: str, index: int) -> str:
    """The made-up label of an unnamed or duplicate-named node: ``Conv_3``."""
    return f"{op_type or 'node'}_{index}"


def quote(name: str) -> str:
    """``name`` as a label: unchanged when plain, else a JSON string (``"/a/b"``)."""
    return _json_string(name) if _NEEDS_QUOTES.search(name) else name


def unquote(label: str) -> str:
    """The node name a quoted label stands for (a plain label is its own name)."""
    if len(label) >= 2 and label.startswith('"') and label.endswith('"'):
        try:
            value = json.loads(label)
        except ValueError:
            return label
        return value if isinstance(value, str) else label
    return label


def node_labels(nodes: Sequence[tuple[str, str]]) -> list[str]:
    """The label of each ``(name, op_type)`` of one graph, in order."""
    counts = Counter(name for name, _ in nodes if name)
    synthetic = {
        i: synthetic_label(op, i) for i, (name, op) in enumerate(nodes) if counts[name] != 1
    }
    taken = set(synthetic.values())
    labels = []
    for i, (name, _) in enumerate(nodes):
        if i in synthetic:
            labels.append(synthetic[i])
            continue
        label = quote(name)
        # a real name that spells another node's synthetic label is quoted to stay distinct
        labels.append(_json_string(name) if label in taken else label)
    return labels


def is_synthetic(label: str | None, name: str | None) -> bool:
    """Whether ``label`` was made up (the node is unnamed or its name is not unique)."""
    if label is None:
        return False
    return not name or unquote(label) != name
