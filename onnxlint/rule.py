"""The rule base class and the rule registry.

A rule is a small class with metadata (code, name, category, default severity,
status, messages by id, an options schema, the ``(domain, op)`` pairs it visits) and a
docstring with fixed sections. The engine walks the graph once and dispatches
each node to the rules that asked for its domain and op type; model-level checks run once.

Rules live in ``onnxlint/rules/<family>.py`` and register themselves with
``@register``; the registry imports the family modules on first use.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import textwrap
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar

from onnxlint.diagnostics import Category, Cause, Diagnostic, Fix, Location, Severity
from onnxlint.index import DEFAULT_DOMAIN, norm_domain

if TYPE_CHECKING:
    from onnxlint.context import LintContext
    from onnxlint.index import NodeRef

DOC_SECTIONS = ("What it does", "Why it matters", "Fix", "Execution providers")
_CODE_RE = re.compile(r"^OL\d{3}$")
_NAME_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
_VERSION_RE = re.compile(r"^\d+\.\d+\.\d+$")


class Rule:
    """Base class; subclasses set the metadata and override ``check_model``/``check_node``."""

    code: ClassVar[str]
    name: ClassVar[str]
    category: ClassVar[Category]
    severity: ClassVar[Severity]
    status: ClassVar[str] = "stable"  # preview | stable | deprecated
    #: the onnxlint version that first shipped the rule
    since: ClassVar[str] = "0.1.0"
    #: the codes and names the rule had before it was renamed: ``--select``/``--ignore``,
    #: the configuration's keys and a model's inline ``onnxlint:ignore`` accept them
    aliases: ClassVar[tuple[str, ...]] = ()
    messages: ClassVar[dict[str, str]]
    #: the nodes passed to ``check_node``: an op type of the default domain (``"If"`` is
    #: ``ai.onnx``'s If), a ``(domain, op_type)`` pair for another domain
    #: (``("com.microsoft", "EPContext")``), or ``"*"`` for every node
    visits: ClassVar[tuple[str | tuple[str, str], ...]] = ()
    #: JSON Schema ``properties`` for the rule's options (validated, additionalProperties false)
    options_schema: ClassVar[dict[str, Any]] = {}
    default_options: ClassVar[dict[str, Any]] = {}
    #: always | sometimes | never: whether findings come with a machine-applicable fix
    #: (``Fix.action``, which ``onnxlint fix-shapes`` and the editor's quick fixes apply);
    #: a fix that only says what to do, or a command to re-export with, does not count
    fix_availability: ClassVar[str] = "never"
    #: the rule is emitted by another stage (the loader, the confirmer), not by the graph walk
    emitted_by: ClassVar[str] = "engine"
    #: ONNX text of a graph that triggers the rule, and of its fixed form; the meta-test lints both
    example_bad: ClassVar[str] = ""
    example_good: ClassVar[str] = ""
    #: EPs to lint the examples with (for EP-specific rules)
    example_eps: ClassVar[tuple[str, ...]] = ()
    #: the model check reads an answer of ONNX Runtime's worker process (the installed
    #: ORT's limits): the engine runs it after the other rules' checks, so that the worker
    #: answers while they run. EP-support and partition rules, which read the assignment
    #: (ORT's level-1 graph), always run then (:func:`reads_ort`).
    waits_for_ort: ClassVar[bool] = False
    #: the message ids whose findings say that a session fails at load, on the finding's EP
    #: (on every EP when it names none): that EP's EP-support and partition findings are
    #: then consequences, which the engine drops (:mod:`onnxlint.load_failures`)
    fails_load: ClassVar[frozenset[str]] = frozenset()
    #: what the findings of ``check_node`` for a node read: only that node's own entry (its
    #: operator, schema, inputs, outputs, attributes, name and label), which names its graph
    #: and the graphs around it define (producers, initializers, inputs), the index's
    #: functions, the graph's opsets and the configuration: never another node's entry,
    #: nor an analysis. A lint after a one-node edit then takes over the other nodes'
    #: findings of the previous lint (``onnxlint.walk``)
    node_local: ClassVar[bool] = False
    #: what the findings of ``check_node`` for a node read, when declared and not
    #: ``node_local``: that node's entry, the index's structure, the configuration and these
    #: analyses, whose facts name other nodes only by their path and operator (``node.path``,
    #: ``node.op_type``, in a message). After a one-node edit that leaves the analyses as
    #: they were and the node's operator as it was, each other node's findings are the
    #: previous ones unless they hold the edited node's previous path (``onnxlint.walk``)
    node_reads: ClassVar[tuple[Any, ...] | None] = None
    #: what the findings of ``check_model`` read, when declared: the index's structure (each
    #: node's inputs, outputs and bodies' captured names; each graph's inputs, outputs,
    #: initializers and value infos), the nodes' operators (op type, domain, schema), these
    #: analyses and the configuration; a node appears in a finding only as its location
    #: (``node.location()``, in ``location`` or ``related``). A lint after a one-node edit
    #: that leaves all of them as they were takes the previous findings over, the edited
    #: node's location made anew (``onnxlint.walk``). None: not declared (always run)
    model_reads: ClassVar[tuple[Any, ...] | None] = None

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        self.options = {**self.default_options, **(options or {})}

    # -- checks -----------------------------------------------------------------
    def check_model(self, ctx: LintContext) -> None:
        """Model-level check, called once per model."""

    def check_node(self, ctx: LintContext, node: NodeRef) -> None:
        """Called for every node whose ``(domain, op_type)`` is in ``visits``."""

    @classmethod
    def visit_keys(cls) -> tuple[tuple[str, str], ...] | None:
        """``visits`` as ``(domain, op_type)`` pairs, the domain normalised as the index
        has it (``""`` is ``ai.onnx``); None when the rule visits every node."""
        if "*" in cls.visits:
            return None
        return tuple(
            (DEFAULT_DOMAIN, v) if isinstance(v, str) else (norm_domain(v[0]), v[1])
            for v in cls.visits
        )

    @classmethod
    def make(
        cls,
        where: Location,
        message_id: str = "default",
        /,
        *,
        severity: Severity | None = None,
        ep: str | None = None,
        fix: Fix | None = None,
        related: tuple[Location, ...] = (),
        graph_level: str | None = None,
        cause: Cause | None = None,
        suffix: str = "",
        **args: Any,
    ) -> Diagnostic:
        """Build a diagnostic of this rule; the message comes from ``messages[message_id]``
        (``suffix`` is appended to it)."""
        template = cls.messages[message_id]
        return Diagnostic(
            code=cls.code,
            rule=cls.name,
            category=cls.category,
            severity=severity if severity is not None else cls.severity,
            message=template.format(**args) + suffix,
            location=where,
            message_id=message_id,
            args=args,
            ep=ep,
            fix=fix,
            related=related,
            graph_level=graph_level,
            fails_load=message_id in cls.fails_load,
            cause=cause,
        )

    # -- metadata helpers ---------------------------------------------------------
    @classmethod
    def summary(cls) -> str:
        doc = textwrap.dedent(cls.__doc__ or "").strip()
        return doc.splitlines()[0].strip() if doc else ""

    @classmethod
    def doc_sections(cls) -> dict[str, str]:
        """Parse the docstring's ``Heading:`` sections into a mapping."""
        doc = textwrap.dedent("\n".join((cls.__doc__ or "").splitlines()[1:])).strip("\n")
        sections: dict[str, str] = {}
        current: str | None = None
        buf: list[str] = []
        for line in doc.splitlines():
            stripped = line.strip()
            if stripped.endswith(":") and stripped[:-1] in (*DOC_SECTIONS, "Example", "Options"):
                if current:
                    sections[current] = textwrap.dedent("\n".join(buf)).strip()
                current, buf = stripped[:-1], []
            elif current:
                buf.append(line)
        if current:
            sections[current] = textwrap.dedent("\n".join(buf)).strip()
        return sections

    @classmethod
    def metadata_problems(cls) -> list[str]:
        """What is missing or malformed in this rule's metadata (for the meta-test)."""
        problems: list[str] = []
        if not _CODE_RE.match(getattr(cls, "code", "")):
            problems.append("code must look like OL123")
        if not _NAME_RE.match(getattr(cls, "name", "")):
            problems.append("name must be kebab-case")
        if not cls.summary():
            problems.append("docstring needs a one-line summary")
        sections = cls.doc_sections()
        problems += [f"docstring lacks section '{s}'" for s in DOC_SECTIONS if s not in sections]
        if not getattr(cls, "messages", None):
            problems.append("no messages")
        if cls.emitted_by == "engine" and not cls.example_bad:
            problems.append("no example_bad")
        if cls.fix_availability not in ("always", "sometimes", "never"):
            problems.append("fix_availability must be always/sometimes/never")
        if cls.status not in ("preview", "stable", "deprecated"):
            problems.append("status must be preview/stable/deprecated")
        if not _VERSION_RE.match(cls.since):
            problems.append("since must be a version like 0.1.0")
        for a in cls.aliases:
            if not (_CODE_RE.match(a) or _NAME_RE.match(a)):
                problems.append(f"alias {a!r} is neither a code like OL123 nor a kebab-case name")
        for v in cls.visits:
            if not (isinstance(v, str) and v) and not (
                isinstance(v, tuple) and len(v) == 2 and all(isinstance(x, str) and x for x in v)
            ):
                problems.append(f"visits entry {v!r} is neither an op type nor (domain, op)")
        return problems

    @classmethod
    def answers_to(cls, key: str) -> bool:
        """Whether ``key`` names this rule exactly: its code, its name or one of its aliases."""
        k = key.strip()
        return k.upper() == cls.code or k.lower() == cls.name or k.lower() in _lower(cls.aliases)

    @classmethod
    def docs_markdown(cls) -> str:
        sections = cls.doc_sections()
        out = [f"## {cls.code} `{cls.name}`", "", cls.summary(), ""]
        out.append(
            f"Category: `{cls.category.value}` · default severity: `{cls.severity.label}` · "
            f"status: {cls.status} · since: {cls.since} · machine-applicable fix: "
            f"{cls.fix_availability}"
            + (f" · formerly: {', '.join(f'`{a}`' for a in cls.aliases)}" if cls.aliases else "")
        )
        for heading in ("What it does", "Why it matters"):
            if heading in sections:
                out += ["", f"### {heading}", "", sections[heading]]
        if cls.example_bad:
            eps = f" (with `--ep {' --ep '.join(cls.example_eps)}`)" if cls.example_eps else ""
            out += ["", f"### Example{eps}", "", "```", cls.example_bad.strip(), "```"]
        if cls.example_good:
            out += ["", "Use instead:", "", "```", cls.example_good.strip(), "```"]
        for heading in ("Fix", "Execution providers", "Options"):
            if heading in sections:
                out += ["", f"### {heading}", "", sections[heading]]
        if cls.options_schema:
            out += ["", "Options (JSON Schema properties):", ""]
            for key, spec in cls.options_schema.items():
                default = cls.default_options.get(key)
                out.append(f"- `{key}`: {spec.get('description', '')} (default `{default!r}`)")
        return "\n".join(out) + "\n"

    @classmethod
    def to_dict(cls) -> dict[str, Any]:
        return {
            "code": cls.code,
            "name": cls.name,
            "category": cls.category.value,
            "severity": cls.severity.label,
            "status": cls.status,
            "since": cls.since,
            "aliases": list(cls.aliases),
            "summary": cls.summary(),
            "fix_availability": cls.fix_availability,
            "messages": cls.messages,
            "options_schema": cls.options_schema,
            "docs": cls.doc_sections(),
            "example_bad": cls.example_bad,
            "example_good": cls.example_good,
        }


_REGISTRY: dict[str, type[Rule]] = {}
_loaded = False


def _lower(names: Iterable[str]) -> set[str]:
    return {n.lower() for n in names}


def register(cls: type[Rule]) -> type[Rule]:
    """Class decorator adding a rule to the registry; codes, names and aliases must be unique
    (an alias never names a current rule)."""
    mine = _lower((cls.code, cls.name, *cls.aliases))
    for other in _REGISTRY.values():
        if other is not cls and mine & _lower((other.code, other.name, *other.aliases)):
            raise ValueError(f"duplicate rule {cls.code}/{cls.name} (also {other.__name__})")
    _REGISTRY[cls.code] = cls
    return cls


def all_rules() -> list[type[Rule]]:
    """Every registered rule, sorted by code (imports the rule families on first call)."""
    global _loaded
    if not _loaded:
        import onnxlint.rules as pkg

        for mod in pkgutil.iter_modules(pkg.__path__):
            if not mod.name.startswith("_"):
                importlib.import_module(f"onnxlint.rules.{mod.name}")
        _loaded = True
    return [_REGISTRY[c] for c in sorted(_REGISTRY)]


def get_rule(code_or_name: str) -> type[Rule] | None:
    """The rule a code, a name or an old code/name (alias) stands for."""
    return next((cls for cls in all_rules() if cls.answers_to(code_or_name)), None)


def code_table() -> list[dict[str, Any]]:
    """The one table of codes: each rule's code, name, status, ``since`` and aliases (the
    codes and names it had before it was renamed), by code."""
    return [
        {
            "code": cls.code,
            "name": cls.name,
            "status": cls.status,
            "since": cls.since,
            "aliases": list(cls.aliases),
        }
        for cls in all_rules()
    ]


#: the categories whose rules read the EP assignment, which starts from ORT's level-1 graph
ORT_GRAPH_CATEGORIES = frozenset({Category.EP_SUPPORT, Category.PARTITION})


def reads_ort(rule: Rule | type[Rule]) -> bool:
    """Whether ``rule``'s model check reads an answer of ORT's worker process: the
    installed ORT's limits (``Rule.waits_for_ort``), or the EP assignment, which starts
    from ORT's level-1 graph (every EP-support and partition rule). The engine runs such
    checks after every other check of the lint, node checks included; findings are sorted
    afterwards, so the order changes no report."""
    return rule.waits_for_ort or rule.category in ORT_GRAPH_CATEGORIES


def rules_by_category(categories: Iterable[Category]) -> list[type[Rule]]:
    wanted = set(categories)
    return [r for r in all_rules() if r.category in wanted]
