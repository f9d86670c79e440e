"""Diagnostics as plain data.

A diagnostic knows *what* is wrong and *where* in the graph (graph path, node
name, node index, tensor); it never knows about lines, columns, colours or
output formats. Renderers (table, JSON, SARIF, GitHub, LSP) turn it into text.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from onnxlint.names import is_synthetic, quote, synthetic_label

#: how every front end marks a prediction a real session contradicted (``--confirm``)
DISPROVED = "disproved by the real EP"


class Severity(enum.IntEnum):
    """Ordered so that ``a >= b`` means *a is at least as serious as b*."""

    HINT = 1
    INFO = 2
    WARNING = 3
    ERROR = 4

    @classmethod
    def parse(cls, text: str) -> Severity:
        try:
            return cls[text.strip().upper()]
        except KeyError:
            choices = ", ".join(s.label for s in cls)
            raise ValueError(f"unknown severity {text!r} (expected one of: {choices})") from None

    @property
    def label(self) -> str:
        return self.name.lower()


class Category(str, enum.Enum):
    LOAD = "load"
    STRUCTURE = "structure"
    OPSET = "opset"
    SHAPES = "shapes"
    CONTROL_FLOW = "control-flow"
    EP_SUPPORT = "ep-support"
    PARTITION = "partition"
    COMPILED_MODEL = "compiled-model"
    EXPORT_HYGIENE = "export-hygiene"
    CONFIRMATION = "confirmation"


@dataclass(frozen=True, slots=True)
class Location:
    """Where a finding sits in the model.

    ``graph`` is the graph path (``main``, ``main/loop_3:body``, ``fn:local.MyFn``);
    ``node_index`` is the node's position inside that graph. A model-level
    finding has neither node nor tensor.
    """

    graph: str = "main"
    node_name: str | None = None
    node_index: int | None = None
    op_type: str | None = None
    tensor: str | None = None
    slot: str | None = None  # e.g. "input 1", "output 0"
    #: the node's label in its graph path: its real name (quoted when it holds path syntax),
    #: or ``OpType_index`` when unnamed or ambiguous (see :mod:`onnxlint.names`)
    label: str | None = None

    @property
    def node_path(self) -> str | None:
        """Stable node id: ``main/conv1``, ``main/"/model/layer.0/MatMul"``, ``main/Conv_3``."""
        if self.node_index is None:
            return None
        label = self.label
        if label is None:
            label = quote(self.node_name) if self.node_name else None
        return f"{self.graph}/{label or synthetic_label(self.op_type or '', self.node_index)}"

    @property
    def synthetic(self) -> bool:
        """Whether the node's label is made up (it has no name, or shares its name)."""
        return self.node_index is not None and (
            not self.node_name or is_synthetic(self.label, self.node_name)
        )

    def describe(self) -> str:
        parts: list[str] = []
        if self.node_index is not None:
            parts.append(self.node_path or "")
            what = [self.op_type] if self.op_type else []
            if self.synthetic:
                what.append(f"name {self.node_name!r} not unique" if self.node_name else "unnamed")
            if what:
                parts[-1] += f" ({', '.join(what)})"
        elif self.graph != "main":
            parts.append(self.graph)
        if self.tensor:
            parts.append(f"tensor '{self.tensor}'")
        return ", ".join(p for p in parts if p) or "model"

    def to_dict(self) -> dict[str, Any]:
        return {
            "graph": self.graph,
            "node_name": self.node_name,
            "node_index": self.node_index,
            "node_path": self.node_path,
            "synthetic_label": self.synthetic,
            "op_type": self.op_type,
            "tensor": self.tensor,
            "slot": self.slot,
        }


class Applicability(str, enum.Enum):
    SAFE = "safe"
    UNSAFE = "unsafe"
    DISPLAY_ONLY = "display-only"


@dataclass(frozen=True, slots=True)
class Fix:
    """How to fix a finding: always a title, sometimes a command or an edit.

    ``command`` is a shell command the user can run (e.g. ``onnxlint fix-shapes``);
    ``action`` names an automated fix the engine knows how to apply, with
    ``args`` for it (LSP code actions read these back).
    """

    title: str
    applicability: Applicability = Applicability.DISPLAY_ONLY
    command: str | None = None
    action: str | None = None
    args: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"title": self.title, "applicability": self.applicability.value}
        if self.command:
            out["command"] = self.command
        if self.action:
            out["action"] = self.action
            out["args"] = self.args
        return out


#: a dim name shape inference made up (``unk__12``): never shown, it means "data-dependent"
GENERATED_DIM = re.compile(r"^unk__\d+$")


@dataclass(frozen=True, slots=True)
class Cause:
    """What a finding comes from, as data, so that findings sharing it are reported once.

    ``kind``: ``dynamic-dims`` (``subject`` = the named dims; pinning them is the remedy),
    ``data-dependent`` (a shape computed at run time), ``folded-shape`` (``subject[0]``
    sets a shape from values known at export time, which ORT folds only with its
    optimizations on; ``where`` its location), ``unknown-shape`` (``subject[0]``
    is the node where inference lost the shape; ``where`` its location), ``op`` (the EP lacks ``subject[0]``),
    ``revision`` (op, revision), ``dtype`` (op), ``domain`` (domain), ``constraint``
    (op, constraint kind). ``where`` is the place the cause sits when it is not the node
    itself (the graph inputs declaring the dims).
    """

    kind: str
    subject: tuple[str, ...] = ()
    where: tuple[Location, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "subject": list(self.subject),
            "where": [w.to_dict() for w in self.where],
        }


@dataclass(frozen=True, slots=True)
class Diagnostic:
    code: str
    rule: str
    category: Category
    severity: Severity
    message: str
    location: Location = field(default_factory=Location)
    message_id: str = "default"
    args: dict[str, Any] = field(default_factory=dict)
    ep: str | None = None
    fix: Fix | None = None
    related: tuple[Location, ...] = ()
    path: str | None = None  # the model file this came from, if any
    graph_level: str | None = None  # "exported" or "optimized" for partition findings
    #: set when a real session contradicts this prediction (``--confirm``): the EP and the
    #: nodes it placed, ``{"ep": "qnn-htp", "nodes": {path: "QNNExecutionProvider"}}``
    disproved: dict[str, Any] | None = None
    #: the root cause this finding shares with others (see :mod:`onnxlint.causes`)
    cause: Cause | None = None
    #: the finding says that a session fails at load, on ``ep`` (every EP when None): its
    #: rule lists the message in ``Rule.fails_load`` (see :mod:`onnxlint.load_failures`)
    fails_load: bool = False

    def disproved_text(self) -> str | None:
        """``disproved by the real EP (a real session ran it on QNNExecutionProvider)``."""
        if not self.disproved:
            return None
        nodes = self.disproved.get("nodes") or {}
        eps = sorted({str(e) for e in nodes.values() if e})
        where = f" (a real session ran it on {', '.join(eps)})" if eps else ""
        return f"{DISPROVED}{where}"

    def sort_key(self) -> tuple[Any, ...]:
        loc = self.location
        return (
            self.path or "",
            loc.graph,
            -1 if loc.node_index is None else loc.node_index,
            self.code,
            self.ep or "",
            self.message,
        )

    def fingerprint(self) -> str:
        """Stable identity for baselines: path + rule + node location, never a line."""
        return "|".join(
            [
                self.path or "",
                self.code,
                self.location.node_path or self.location.graph,
                self.location.tensor or "",
                self.ep or "",
            ]
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "rule": self.rule,
            "category": self.category.value,
            "severity": self.severity.label,
            "message": self.message,
            "message_id": self.message_id,
            "args": {k: _jsonable(v) for k, v in self.args.items()},
            "location": self.location.to_dict(),
            "ep": self.ep,
            "fix": self.fix.to_dict() if self.fix else None,
            "related": [r.to_dict() for r in self.related],
            "path": self.path,
            "graph_level": self.graph_level,
            "disproved": _jsonable(self.disproved) if self.disproved else None,
            "cause": self.cause.to_dict() if self.cause else None,
        }


def _jsonable(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return str(value)


_FIELDS: tuple[Callable[[Diagnostic], tuple[Any, ...]], dict[str, int]] | None = None


def with_changes(d: Diagnostic, changes: dict[str, Any]) -> Diagnostic:
    """``dataclasses.replace(d, **changes)`` without replace's per-field checks (a
    Diagnostic has no ``__post_init__`` and every field is an ``__init__`` argument): most
    findings of a large model are copied once or twice on their way to the report."""
    global _FIELDS
    if _FIELDS is None:
        from dataclasses import fields
        from operator import attrgetter

        assert all(f.init for f in fields(Diagnostic))
        names = [f.name for f in fields(Diagnostic)]
        _FIELDS = attrgetter(*names), {name: k for k, name in enumerate(names)}
    get, position = _FIELDS
    values = list(get(d))
    for name, value in changes.items():
        values[position[name]] = value
    return Diagnostic(*values)
