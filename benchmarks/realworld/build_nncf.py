"""Held-out batch 16: QDQ and mixed precision from other producers (run by ``build.py``).

NNCF (Intel's Neural Network Compression Framework, the way OpenVINO users quantize) and
``onnxconverter-common`` are not in the corpus venv; they live in a venv of their own built
from ``requirements-nncf.txt`` (no torch: NNCF's ONNX backend collects its statistics with
onnxruntime). ``build.py``'s ``heldout16_jobs`` exports the float model in the corpus venv,
then runs this file in that venv (``ONNXLINT_NNCF_PYTHON``, default
``.venv-nncf/bin/python``) once per model and takes the file it writes::

    .venv-nncf/bin/python -m benchmarks.realworld.build_nncf --src f.onnx --recipe nncf --out DIR

Recipes: ``nncf`` (``nncf.quantize`` with its defaults: the PERFORMANCE preset, symmetric
int8 activations and weights, per-channel weights), ``nncf_mixed`` (``preset=MIXED``:
asymmetric activations), ``nncf_transformer`` (``model_type=TRANSFORMER``), each on 4 random
calibration samples (seed 0); ``occ_fp16`` (``onnxconverter_common.float16.
convert_float_to_float16(keep_io_types=True, op_block_list=--block)``), ``ort_fp16``
(``onnxruntime.transformers.float16`` with the same arguments) and ``occ_amp``
(``onnxconverter_common.auto_mixed_precision.auto_convert_mixed_precision``: float16 where
the outputs stay within tolerance on one random input, measured with onnxruntime's CPU EP).
``--versions`` prints the versions used as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from benchmarks.realworld.feeds import random_feeds
from benchmarks.realworld.pkgversions import package_versions

PACKAGES = ("nncf", "onnxconverter-common", "onnx", "onnxruntime", "numpy")


def _nncf(model: Any, recipe: str) -> Any:
    import nncf

    kwargs: dict[str, Any] = {"subset_size": 4}
    if recipe == "nncf_mixed":
        kwargs["preset"] = nncf.QuantizationPreset.MIXED
    elif recipe == "nncf_transformer":
        kwargs["model_type"] = nncf.ModelType.TRANSFORMER
    elif recipe != "nncf":
        raise ValueError(recipe)
    return nncf.quantize(model, nncf.Dataset(random_feeds(model, 4)), **kwargs)


def convert(src: Path, recipe: str, block: list[str]) -> Any:
    """``recipe`` applied to the model in ``src``; returns the ModelProto."""
    import onnx

    model = onnx.load(str(src))
    if recipe.startswith("nncf"):
        return _nncf(model, recipe)
    if recipe == "occ_fp16":
        from onnxconverter_common import float16

        return float16.convert_float_to_float16(model, keep_io_types=True, op_block_list=block)
    if recipe == "ort_fp16":
        from onnxruntime.transformers.float16 import convert_float_to_float16

        return convert_float_to_float16(model, keep_io_types=True, op_block_list=block)
    if recipe == "occ_amp":
        from onnxconverter_common.auto_mixed_precision import auto_convert_mixed_precision

        feed = random_feeds(model, 1)[0]
        return auto_convert_mixed_precision(model, feed, rtol=0.01, atol=0.001, keep_io_types=True)
    raise ValueError(recipe)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", help="the float model")
    ap.add_argument("--recipe")
    ap.add_argument("--block", default="", help="comma-separated op types kept in float32")
    ap.add_argument("--out", help="folder to write model.onnx into")
    ap.add_argument("--versions", action="store_true", help="print the versions used as JSON")
    args = ap.parse_args(argv)
    if args.versions:
        print(json.dumps(package_versions(PACKAGES)))
        return 0
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import onnx

    block = [b for b in args.block.split(",") if b]
    model = convert(Path(args.src), args.recipe, block)
    onnx.save(model, str(Path(args.out) / "model.onnx"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
