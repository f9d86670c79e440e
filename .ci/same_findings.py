"""Exit 1 unless two ``onnxlint --format json`` outputs hold the same findings.

CI lints the demo with the newest and with the oldest onnxruntime that pyproject.toml
allows; the findings (code, severity, location, EP, message) must be the same.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def findings(path: str) -> list[tuple[Any, ...]]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    out = []
    for f in data.get("files", []):
        for d in f.get("diagnostics", []):
            loc = d.get("location") or {}
            out.append(
                (
                    d["code"],
                    d["severity"],
                    loc.get("node_path"),
                    loc.get("tensor"),
                    d.get("ep"),
                    d["message"],
                )
            )
    return sorted(out, key=repr)


def main(argv: list[str]) -> int:
    a, b = findings(argv[0]), findings(argv[1])
    if not a:
        print(f"same_findings: {argv[0]} has no findings (did the lint run?)")
        return 1
    if a == b:
        print(f"same_findings: {len(a)} findings, the same in both")
        return 0
    for row in sorted(set(a) ^ set(b), key=repr):
        print(("only in " + (argv[0] if row in a else argv[1])) + ": " + " | ".join(map(str, row)))
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
