"""Code actions: suppressions written into the configuration through the editor, and
the quick fixes findings carry. Plain functions; the server applies the edits."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from onnxlint.diagnostics import Location
from onnxlint.lsp.diagnostics import SOURCE
from onnxlint.lsp.workspace import ModelState, path_to_uri

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# ---------------------------------------------------------------------------
# Code actions: suppressions written into the configuration through the editor


def _toml_key(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def add_ignore(text: str, table: str, key: str, code: str) -> str | None:
    """``text`` with ``code`` added to ``table.key``'s list, or None if that cannot be done safely.

    Appends to an existing ``key = [...]`` line of the table, else adds the line
    under the table header, else adds the table at the end. The result must
    parse as TOML and hold the code, or nothing is offered.
    """
    lines = text.split("\n")
    header = f"[{table}]"
    key_text = _toml_key(key)
    try:
        start = next(i for i, ln in enumerate(lines) if ln.strip() == header)
    except StopIteration:
        start = None
    if start is None:
        # a blank line between the existing text and the new table
        lead = "" if not text else ("\n" if text.endswith("\n") else "\n\n")
        new = f"{text}{lead}{header}\n{key_text} = [{_toml_key(code)}]\n"
    else:
        end = next(
            (i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")),
            len(lines),
        )
        done = False
        for i in range(start + 1, end):
            m = re.match(rf"^\s*{re.escape(key_text)}\s*=\s*\[(.*)\]\s*$", lines[i])
            if m:
                inner = m.group(1).strip().rstrip(",")
                items = f"{inner}, {_toml_key(code)}" if inner else _toml_key(code)
                lines[i] = f"{key_text} = [{items}]"
                done = True
                break
        if not done:
            lines.insert(start + 1, f"{key_text} = [{_toml_key(code)}]")
        new = "\n".join(lines)
    try:
        parsed = tomllib.loads(new)
    except tomllib.TOMLDecodeError:
        return None
    node: Any = parsed
    for part in _split_table(table):
        node = node.get(part, {}) if isinstance(node, dict) else {}
    if not isinstance(node, dict) or code not in node.get(key, []):
        return None
    return new


def _split_table(table: str) -> list[str]:
    return [p.strip('"') for p in re.findall(r'"[^"]*"|[^.]+', table)]


def suppression_edits(
    config_path: Path, config_text: str | None, model_rel: str, data: dict[str, Any]
) -> list[tuple[str, lsp.WorkspaceEdit]]:
    """(title, edit) pairs that silence a finding in the configuration file.

    The server never writes the configuration itself: the editor applies the
    edit to the (possibly unsaved) document, where the user sees and can undo it.
    A missing ``onnxlint.toml`` is created.
    """
    code = data.get("code")
    if not code:
        return []
    is_pyproject = config_path.name == "pyproject.toml"
    prefix = "tool.onnxlint." if is_pyproject else ""
    text = config_text or ""
    uri = path_to_uri(config_path)
    out: list[tuple[str, lsp.WorkspaceEdit]] = []
    candidates = []
    node_path = data.get("node_path")
    if node_path:
        candidates.append(
            (
                f"Ignore {code} for node {node_path} ({config_path.name})",
                f"{prefix}per-node-ignores",
                node_path,
            )
        )
    candidates.append(
        (
            f"Ignore {code} in {model_rel} ({config_path.name})",
            f"{prefix}per-file-ignores",
            model_rel,
        )
    )
    for title, table, key in candidates:
        new = add_ignore(text, table, key, code)
        if new is None:
            continue
        if config_text is None:
            changes: list[Any] = [
                lsp.CreateFile(
                    kind="create", uri=uri, options=lsp.CreateFileOptions(ignore_if_exists=True)
                ),
                lsp.TextDocumentEdit(
                    text_document=lsp.OptionalVersionedTextDocumentIdentifier(
                        uri=uri, version=None
                    ),
                    edits=[lsp.TextEdit(lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)), new)],
                ),
            ]
            edit = lsp.WorkspaceEdit(document_changes=changes)
        else:
            n_lines = text.count("\n")
            last = text.split("\n")[-1]
            whole = lsp.Range(lsp.Position(0, 0), lsp.Position(n_lines, len(last)))
            edit = lsp.WorkspaceEdit(changes={uri: [lsp.TextEdit(whole, new)]})
        out.append((title, edit))
    return out


def code_actions(
    state: ModelState,
    diagnostics: list[lsp.Diagnostic],
    config_path: Path,
    config_text: str | None,
    model_rel: str,
    fix_available: bool = False,
) -> list[lsp.CodeAction]:
    actions: list[lsp.CodeAction] = []
    seen: set[str] = set()
    for diag in diagnostics:
        data = diag.data if isinstance(diag.data, dict) else None
        if not data or diag.source != SOURCE:
            continue
        fix = data.get("fix") or {}
        dims = (fix.get("args") or {}).get("dims") or {}
        # only fixes the server can apply unattended: fix-shapes with a value for every dim
        applicable = (
            fix.get("action") == "fix-shapes"
            and dims
            and all(isinstance(v, int) for v in dims.values())
        )
        if fix_available and applicable:
            pins = ", ".join(f"{k}={v}" for k, v in dims.items())
            title = f"Fix dynamic dims ({pins}): write a new model next to the original"
            if title not in seen:
                seen.add(title)
                actions.append(
                    lsp.CodeAction(
                        title=title,
                        kind=lsp.CodeActionKind.QuickFix,
                        diagnostics=[diag],
                        command=lsp.Command(
                            title=title,
                            command="onnxlint.applyFix",
                            arguments=[
                                {"model_uri": state.uri, "fix": fix, "code": data.get("code")}
                            ],
                        ),
                    )
                )
        for title, edit in suppression_edits(config_path, config_text, model_rel, data):
            if title in seen:
                continue
            seen.add(title)
            actions.append(
                lsp.CodeAction(
                    title=title, kind=lsp.CodeActionKind.QuickFix, diagnostics=[diag], edit=edit
                )
            )
    return actions


def location_of(data: dict[str, Any]) -> Location:
    return Location(graph=data.get("graph") or "main", node_name=data.get("node_name"))
