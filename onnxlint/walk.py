"""The rules' run over one model: each rule's ``check_model``, then one walk over the nodes
that calls each node's ``check_node`` of the rules that visit its operator, then the
``check_model`` of the rules that read an answer of ORT's worker (``rule.reads_ort``).

A lint may keep what each rule found (:class:`RuleFindings`): each rule's ``check_model``
findings, and each node's walk findings by its position in the index. The next lint of
the model with one node edited (:class:`NodeEdit`, the language server's re-lint) takes
findings over instead of checking again where the rule declares what it reads and the
edit provably leaves that as it was:

- ``Rule.node_local``: ``check_node`` of a node reads that node's own entry and the
  structure of the index only. ``ModelIndex.after_node_edit`` moved every other node's
  entry unchanged (the same inputs, outputs, label and graph tables), so each of those
  nodes' findings are the previous ones; the edited node is checked again.
- ``Rule.node_reads``: ``check_node`` of a node reads that node, the structure and the
  analyses named there, whose facts name other nodes by their path and operator only.
  Taken over as ``model_reads`` below allows, but for a node whose previous findings of
  the rule hold the edited node's previous path (when its path changed): checked again.
- ``Rule.model_reads``: ``check_model`` reads the structure, the nodes' operators and
  the analyses named there. Taken over when the index was moved, the edited node kept
  its operator and schema, and each analysis named was taken over from the previous lint
  (``analyses.edits``: equal to what the lint would compute); findings that sit on the
  edited node get its new location (its name and label may have changed).

Anything else runs as in any lint, and a lint that cannot show the conditions (another
configuration, a rule that crashed in the previous lint, another count of nodes) runs
every rule.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from onnxlint.config import Config
from onnxlint.diagnostics import Diagnostic, Location
from onnxlint.index import ModelIndex, NodeRef
from onnxlint.rule import Rule, reads_ort

if TYPE_CHECKING:
    from onnxlint.context import LintContext

#: a rule's check crashed: ``engine`` words it (OL099) at the place given
Crashed = Callable[["LintContext", Rule, Exception, Location], None]


@dataclass
class RuleFindings:
    """What the rules of one lint found, by where they found it (before selection and
    sorting: the engine's raw findings)."""

    config: Config
    #: the EP profiles the lint ran with, by id, in order
    eps: tuple[str, ...]
    #: the codes of the rules that ran, in order
    codes: tuple[str, ...]
    index: ModelIndex
    #: each rule's ``check_model`` findings, by code
    model: dict[str, list[Diagnostic]] = field(default_factory=dict)
    #: the walk's findings of each node that had any, by its position in ``index.nodes``
    nodes: dict[int, list[Diagnostic]] = field(default_factory=dict)
    #: whether a check crashed (OL099: a crash may not repeat), or a node's check gave a
    #: finding under a code none of that node's rules has (findings are told apart by
    #: code): nothing is taken over
    crashed: bool = False


@dataclass
class NodeEdit:
    """The previous lint of a model one node of which was edited: its findings, the index
    ``ModelIndex.after_node_edit`` moved from its index, the edited node's position in
    both indexes' ``nodes``, and the analyses taken over (equal to the lint's own)."""

    prior: RuleFindings
    index: ModelIndex
    position: int
    taken: frozenset[Any] = frozenset()


@dataclass
class _Carry:
    """What this lint takes over from ``edit``: the rules by code."""

    edit: NodeEdit
    was: NodeRef
    now: NodeRef
    node_codes: frozenset[str]
    model_codes: frozenset[str]
    #: rules whose ``check_node`` findings are taken over unless they name the edited node
    named_codes: frozenset[str] = frozenset()

    def names_edited(self, found: list[Diagnostic]) -> bool:
        """Whether one of ``found`` may name the edited node by its previous path (its
        path is the same: none does)."""
        old = self.was.path
        return old != self.now.path and any(old in repr(d) for d in found)

    def refers(self, where: Location) -> bool:
        """Whether ``where`` is the edited node's location in the previous lint."""
        return where.node_index == self.was.index and where.graph == self.was.graph.path

    def moved(self, where: Location) -> Location:
        if not self.refers(where):
            return where
        node = self.now.node
        return replace(
            where, node_name=node.name or None, op_type=node.op_type, label=self.now.label
        )

    def model_findings(self, code: str) -> list[Diagnostic] | None:
        """The previous lint's ``check_model`` findings of rule ``code``, the edited node's
        location made anew; None: a finding names the edited node in its cause (run)."""
        out = []
        for d in self.edit.prior.model.get(code, ()):
            cause = d.cause
            if cause is not None and (
                any(self.refers(w) for w in cause.where) or self.was.label in cause.subject
            ):
                return None
            if self.refers(d.location) or any(self.refers(r) for r in d.related):
                d = replace(
                    d,
                    location=self.moved(d.location),
                    related=tuple(self.moved(r) for r in d.related),
                )
            out.append(d)
        return out


def _carry(ctx: LintContext, rules: Sequence[Rule], edit: NodeEdit | None) -> _Carry | None:
    """What ``edit`` lets this lint take over (None: nothing)."""
    if edit is None or ctx.index is not edit.index:
        return None
    prior = edit.prior
    nodes = ctx.index.nodes
    if (
        prior.crashed
        or prior.config != ctx.config
        or prior.eps != tuple(p.id for p in ctx.eps)
        or prior.codes != tuple(r.code for r in rules)
        or len(prior.index.nodes) != len(nodes)
        or not 0 <= edit.position < len(nodes)
    ):
        return None
    was, now = prior.index.nodes[edit.position], nodes[edit.position]
    same_op = (was.op_type, was.domain, was.schema) == (now.op_type, now.domain, now.schema)
    node_codes = frozenset(r.code for r in rules if r.node_local)
    model_codes = frozenset(
        r.code
        for r in rules
        if r.model_reads is not None and same_op and edit.taken.issuperset(r.model_reads)
    )
    named_codes = frozenset(
        r.code
        for r in rules
        if r.node_reads is not None and same_op and edit.taken.issuperset(r.node_reads)
    )
    return _Carry(edit, was, now, node_codes - named_codes, model_codes, named_codes)


def run_rules(
    ctx: LintContext,
    rules: Sequence[Rule],
    crashed: Crashed,
    edit: NodeEdit | None = None,
    keep: bool = False,
    settle: Callable[[LintContext], None] | None = None,
) -> RuleFindings | None:
    """Run ``rules`` on ``ctx``'s model (their findings go to ``ctx.diagnostics``), taking
    over what ``edit`` allows; with ``keep``, return what each rule found (for the next
    edit). A crashing check becomes ``crashed``'s finding; the rest of the lint goes on.
    ``settle`` is called after each model check (the engine lets go of what no later
    check reads)."""
    carry = _carry(ctx, rules, edit)
    found = (
        RuleFindings(
            ctx.config, tuple(p.id for p in ctx.eps), tuple(r.code for r in rules), ctx.index
        )
        if keep
        else None
    )
    diagnostics = ctx.diagnostics
    # the model checks that wait for ORT's worker (its limits, the level-1 graph under the
    # EP assignment) run after every other check: the worker answers while those run
    _model_checks(ctx, [r for r in rules if not reads_ort(r)], crashed, carry, found, settle)
    if carry is not None:
        for rule in rules:  # what the rules taken over would have asked for
            if rule.code in carry.named_codes and rule.node_reads is not None:
                for analysis in rule.node_reads:
                    ctx.analysis(analysis)
    _walk(ctx, rules, crashed, carry, found)
    _model_checks(ctx, [r for r in rules if reads_ort(r)], crashed, carry, found, settle)
    if found is not None:
        found.crashed = found.crashed or any(d.code == "OL099" for d in diagnostics)
    return found


def _model_checks(
    ctx: LintContext,
    rules: Sequence[Rule],
    crashed: Crashed,
    carry: _Carry | None,
    found: RuleFindings | None,
    settle: Callable[[LintContext], None] | None,
) -> None:
    """Each rule's ``check_model``, or its findings taken over from ``carry``."""
    diagnostics = ctx.diagnostics
    for rule in rules:
        start = len(diagnostics)
        taken = (
            carry.model_findings(rule.code) if carry and rule.code in carry.model_codes else None
        )
        if taken is not None and rule.model_reads is not None:
            for analysis in rule.model_reads:  # what the rule would have asked for
                ctx.analysis(analysis)
            diagnostics += taken
        else:
            try:
                rule.check_model(ctx)
            except Exception as exc:
                crashed(ctx, rule, exc, Location())
        if found is not None and len(diagnostics) > start:
            found.model[rule.code] = diagnostics[start:]
        if settle is not None:
            settle(ctx)


def _walk(
    ctx: LintContext,
    rules: Sequence[Rule],
    crashed: Crashed,
    carry: _Carry | None,
    found: RuleFindings | None,
) -> None:
    by_op: dict[tuple[str, str], list[Rule]] = {}
    every: list[Rule] = []
    for rule in rules:
        keys = rule.visit_keys()
        if keys is None:
            every.append(rule)
        for key in dict.fromkeys(keys or ()):
            by_op.setdefault(key, []).append(rule)
    if not by_op and not every:
        return
    local = carry.node_codes if carry is not None else frozenset()
    named = carry.named_codes if carry is not None else frozenset()
    taken = local | named
    edited = carry.edit.position if carry is not None else -1
    prior = carry.edit.prior.nodes if carry is not None else {}
    diagnostics = ctx.diagnostics
    # each op's checks, bound once: the walk calls them for every node of the model; the
    # second list leaves out those whose findings are taken over
    checks: dict[tuple[str, str], tuple[list[tuple[Rule, Any]], list[tuple[Rule, Any]]]] = {}
    for k, node in enumerate(ctx.index.nodes):
        key = (node.domain, node.op_type)
        bound = checks.get(key)
        if bound is None:
            every_check = [(r, r.check_node) for r in (*every, *by_op.get(key, ()))]
            bound = checks[key] = (every_check, [c for c in every_check if c[0].code not in taken])
        start = len(diagnostics)
        if k == edited or not taken:
            run = bound[0]
        elif k in prior:
            run = []
            was = prior[k]
            for rule, check in bound[0]:  # in the rules' order, as a walk emits them
                code = rule.code
                if code in taken:
                    mine = [d for d in was if d.code == code]
                    if code in local or not carry or not carry.names_edited(mine):
                        diagnostics += mine
                        continue
                _check(ctx, rule, check, node, crashed)
        else:
            run = bound[1]  # the rules taken over found nothing here
        for rule, check in run:
            try:
                check(ctx, node)
            except Exception as exc:
                crashed(ctx, rule, exc, node.location())
        if found is not None and len(diagnostics) > start:
            mine = found.nodes[k] = diagnostics[start:]
            codes = {rule.code for rule, _ in bound[0]}
            if any(d.code not in codes for d in mine):
                found.crashed = True


def _check(ctx: LintContext, rule: Rule, check: Any, node: NodeRef, crashed: Crashed) -> None:
    try:
        check(ctx, node)
    except Exception as exc:
        crashed(ctx, rule, exc, node.location())
