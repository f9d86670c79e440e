"""Export TinyNet to ONNX at the opset onnxlint recommends for the deployment EP.

    python export.py --ep qnn --out models/tinynet.onnx

The check exports in memory at every candidate opset, lints each for the EP,
and this script saves the best one. It refuses to write a model that has
errors for the EP (exit 1) and never overwrites a file in place: the model is
written to a temporary file next to the target and renamed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tinynet import TinyNet
from tinynet.model import example_input

import onnxlint.torch
from onnxlint.fsutil import atomic_write_bytes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ep", action="append", help="EP in priority order (default qnn)")
    parser.add_argument("--out", default="models/tinynet.onnx")
    parser.add_argument("--opset", type=int, default=None, help="skip the search, use this opset")
    parser.add_argument("--dynamo", action="store_true", help="use the dynamo exporter")
    args = parser.parse_args(argv)

    model = TinyNet().eval()
    report = onnxlint.torch.check_export(
        model,
        (example_input(),),
        ep=args.ep or ["qnn"],
        opset=args.opset,
        dynamo=args.dynamo,
    )
    print(onnxlint.render(report), end="")
    print(report.recommendation())
    if report.errors or report.model is None:
        print("not writing a model that will not deploy", file=sys.stderr)
        return 1
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(out, report.model.SerializeToString())
    print(f"wrote {out} (opset {report.opset})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
