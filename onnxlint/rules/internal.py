"""A rule that crashed becomes a diagnostic, never a traceback."""

from __future__ import annotations

from onnxlint.diagnostics import Category, Severity
from onnxlint.rule import Rule, register


@register
class InternalError(Rule):
    """A rule raised an exception on this model (a bug in onnxlint).

    What it does:
        Catches the exception, reports which rule failed and where, and lets the other
        rules finish.

    Why it matters:
        The rest of the report is still valid, but this rule's verdict is missing.

    Fix:
        Report it with the model (or a reduced copy) so the rule can be fixed; meanwhile
        ``--ignore`` the failing rule.

    Execution providers:
        All.
    """

    code = "OL099"
    name = "internal-error"
    category = Category.STRUCTURE
    severity = Severity.WARNING
    emitted_by = "engine-guard"
    messages = {"default": "rule {rule} failed on this model: {error} (at {at})"}
