"""The reader reports load problems by code and message id; the load rules own both.

``onnxlint.modelfile`` never imports a rule, so nothing but this test ties the codes and
message ids it writes to the rules that word them: every pair it can produce must exist.
"""

from __future__ import annotations

import ast
from pathlib import Path

import onnx

from onnxlint.limits import Limits
from onnxlint.loader import load
from onnxlint.modelfile.read import read
from onnxlint.rules import load as load_rules

MODELFILE = Path(load_rules.__file__).resolve().parent.parent / "modelfile"


def _written_pairs() -> set[tuple[str, str]]:
    """(code, message id) of every ``_fail``/``_problem`` call in the reader's modules."""
    pairs = set()
    for path in MODELFILE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
                continue
            literals = [a.value for a in node.args if isinstance(a, ast.Constant)]
            if node.func.id == "_fail" and len(node.args) >= 3:
                code = node.args[1]
                if isinstance(code, ast.Constant) and isinstance(node.args[2], ast.Constant):
                    pairs.add((str(code.value), str(node.args[2].value)))
                elif isinstance(node.args[2], ast.Constant):  # ``fatal`` holds OL001
                    pairs.add(("OL001", str(node.args[2].value)))
            elif node.func.id == "_problem" and len(literals) >= 2:
                pairs.add((str(literals[0]), str(literals[1])))
    return pairs


def test_every_code_and_message_id_the_reader_writes_has_a_rule() -> None:
    rules = {rule.code: rule for rule in load_rules.LoadRule.__subclasses__()}
    pairs = _written_pairs()
    assert len(pairs) >= 18  # the scan found the reader's calls (OL008 ids are computed)
    unknown = sorted(p for p in pairs if p[0] not in rules or p[1] not in rules[p[0]].messages)
    assert unknown == []


def test_reader_reports_records_and_loader_words_them() -> None:
    model = onnx.parser.parse_model(
        '<ir_version: 8, opset_import: ["" : 17]> g (float[2] x) => (float[2] y) '
        "{ a = Relu(x) b = Relu(a) y = Relu(b) }"
    )
    data = model.SerializeToString()
    raw = read(data, Limits(max_nodes=2))
    assert raw.model is None and raw.diagnostics == []
    assert [(p.code, p.message_id, p.args) for p in raw.problems] == [
        ("OL007", "default", {"count": 3, "limit": 2})
    ]
    loaded = load(data, Limits(max_nodes=2))
    assert [(d.code, d.message_id, d.args) for d in loaded.diagnostics] == [
        ("OL007", "default", {"count": 3, "limit": 2})
    ]
    assert loaded.diagnostics[0].message == load_rules.TooManyNodes.messages["default"].format(
        count=3, limit=2
    )
