"""Editor features as plain functions of a ``ModelState``: no server, no I/O.

Each function takes the linted state (report, index, text map) and LSP positions and
returns ``lsprotocol`` values; ``server.py`` only forwards requests here. The functions
live in three modules, re-exported here as the server's one entry:

- :mod:`onnxlint.lsp.diagnostics`: findings as LSP diagnostics (ranges from the text map,
  as the house style asks: a finding knows its node, never its line), root causes once;
- :mod:`onnxlint.lsp.navigation`: hover, symbols, definition, folding, inlay hints, lenses;
- :mod:`onnxlint.lsp.actions`: code actions and the suppression edits they write.
"""

from __future__ import annotations

from onnxlint.lsp.actions import add_ignore, code_actions, location_of, suppression_edits
from onnxlint.lsp.diagnostics import (
    RELATED_MAX,
    SOURCE,
    cause_finding,
    diagnostic_json,
    diagnostic_range,
    diagnostics_for,
    diagnostics_on_lines,
    is_quiet,
    rule_doc_uri,
    to_lsp,
)
from onnxlint.lsp.navigation import (
    code_lenses,
    definition,
    document_symbols,
    folding_ranges,
    hover,
    inlay_hints,
    node_hover_markdown,
    partition_of,
    predicted_partitions,
    value_hover_markdown,
)

__all__ = [
    "RELATED_MAX",
    "SOURCE",
    "add_ignore",
    "cause_finding",
    "code_actions",
    "code_lenses",
    "definition",
    "diagnostic_json",
    "diagnostic_range",
    "diagnostics_for",
    "diagnostics_on_lines",
    "document_symbols",
    "folding_ranges",
    "hover",
    "inlay_hints",
    "is_quiet",
    "location_of",
    "node_hover_markdown",
    "partition_of",
    "predicted_partitions",
    "rule_doc_uri",
    "suppression_edits",
    "to_lsp",
    "value_hover_markdown",
]
