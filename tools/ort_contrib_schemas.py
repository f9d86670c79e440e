"""Record the ``com.microsoft`` schemas of an ONNX Runtime build in
``rules/ort_contrib_schemas.json``, for the EPs that ship in their own build of ORT.

ORT checks each contrib node against its schema when it loads a model and refuses the
model when the node has an attribute or an input the schema lacks ("This is an invalid
model"). An EP that comes as its own ORT package (onnxruntime-openvino 1.24.1 is ORT
1.24.1 with the OpenVINO EP) loads models with that release's schemas, not the installed
ORT's. Run this with that package's interpreter::

    .venv-openvino/bin/python tools/ort_contrib_schemas.py

It adds (or replaces) the release's entry: per operator, per schema revision, the
``since_version``, the largest input count and the attribute names. Only these facts are
written.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "rules" / "ort_contrib_schemas.json"


def read_schemas() -> tuple[str, dict[str, list[dict[str, object]]]]:
    import onnxruntime
    from onnxruntime.capi import onnxruntime_pybind11_state as state

    ops: dict[str, list[dict[str, object]]] = {}
    for s in state.get_all_operator_schema():
        if s.domain != "com.microsoft":
            continue
        ops.setdefault(s.name, []).append(
            {
                "since": int(s.since_version),
                "max_inputs": int(s.max_input),
                "attributes": sorted(s.attributes),
            }
        )
    for revisions in ops.values():
        revisions.sort(key=lambda r: int(r["since"]))  # type: ignore[call-overload]
    return onnxruntime.__version__, dict(sorted(ops.items()))


def main() -> int:
    version, ops = read_schemas()
    doc = json.loads(OUT.read_text()) if OUT.exists() else {}
    doc.setdefault(
        "description",
        "The com.microsoft operator schemas (since_version, largest input count, attribute "
        "names) of ONNX Runtime builds that an EP ships in (an EP profile's "
        "runtime_onnxruntime). That ORT refuses to load a model with a contrib node whose "
        "attribute or input its schema lacks, or whose operator it does not define.",
    )
    doc.setdefault("provenance", {})[version] = (
        f"onnxruntime {version}'s get_all_operator_schema(), read by "
        f"tools/ort_contrib_schemas.py on {datetime.date.today().isoformat()}"
    )
    doc.setdefault("releases", {})[version] = ops
    OUT.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"{len(ops)} com.microsoft operators of onnxruntime {version} -> {OUT.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
