"""Held-out batch 21: torchvision detection, segmentation and optical-flow models as users
export them (data-dependent control flow: NonMaxSuppression, TopK, RoiAlign, NonZero, Loop
and If, outputs whose size depends on the data).

PyPI's torchvision does not import beside the corpus venv's torch CPU file, so this runs in
a venv of its own built from ``requirements-vision21.txt`` (torch and torchvision pinned;
a CUDA build of torch, run on the CPU). ``build.py``'s ``heldout21_jobs`` runs it there
(``ONNXLINT_VISION21_PYTHON``, default ``.venv-vision21/bin/python``) and takes the files
it leaves in ``--out``; by hand, ``--manifest`` records the entries in ``manifest.json``
itself (the manifest's top-level versions are left as they are)::

    .venv-vision21/bin/python -m benchmarks.realworld.build_vision21 --out DIR [--manifest]

Every model has random weights (``weights=None, weights_backbone=None``,
``torch.manual_seed(0)``; nothing downloaded), small inputs and, for the detectors, a score
threshold of 0 and a few detections per image, so that the post-processing (NMS, the mask
paste and keypoint loops) runs on random weights. ``--versions`` prints the versions used
as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

from benchmarks.realworld.pkgversions import package_versions

PACKAGES = ("torch", "torchvision", "onnx", "onnxscript", "numpy")

#: name -> (family, architecture, exporter, opset, dims, input size (H, W))
VISION21: dict[str, tuple[str, str, str, int, str, tuple[int, int]]] = {
    "tv21-ssdlite320-mobilenet-v3-large-op17": ("detector", "ssdlite320_mobilenet_v3_large", "torchscript", 17, "fixed", (320, 320)),
    "tv21-fasterrcnn-mobilenet-v3-large-320-fpn-op17": ("detector", "fasterrcnn_mobilenet_v3_large_320_fpn", "torchscript", 17, "fixed", (320, 320)),
    "tv21-fasterrcnn-mobilenet-v3-large-320-fpn-op18-dynamic": ("detector", "fasterrcnn_mobilenet_v3_large_320_fpn", "torchscript", 18, "dynamic", (320, 320)),
    "tv21-retinanet-mobilenet-v3-large-fpn-op17": ("detector", "retinanet_mobilenet", "torchscript", 17, "fixed", (320, 320)),
    "tv21-fcos-mobilenet-v3-large-fpn-op17": ("detector", "fcos_mobilenet", "torchscript", 17, "fixed", (320, 320)),
    "tv21-maskrcnn-mobilenet-v3-large-320-fpn-op17": ("detector", "maskrcnn_mobilenet", "torchscript", 17, "fixed", (320, 320)),
    "tv21-keypointrcnn-mobilenet-v3-large-320-fpn-op17": ("detector", "keypointrcnn_mobilenet", "torchscript", 17, "fixed", (320, 320)),
    "tv21-deeplabv3-mobilenet-v3-large-op17": ("vision", "deeplabv3_mobilenet_v3_large", "torchscript", 17, "fixed", (224, 224)),
    "tv21-deeplabv3-mobilenet-v3-large-op18-dynamic": ("vision", "deeplabv3_mobilenet_v3_large", "torchscript", 18, "dynamic", (224, 224)),
    "tv21-raft-small-op17": ("vision", "raft_small", "torchscript", 17, "fixed", (128, 128)),
    "tv21-deeplabv3-mobilenet-v3-large-dynamo-op18": ("vision", "deeplabv3_mobilenet_v3_large", "dynamo", 18, "fixed", (224, 224)),
    "tv21-raft-small-dynamo-op18": ("vision", "raft_small", "dynamo", 18, "fixed", (128, 128)),
}  # fmt: skip

#: detector keyword arguments: every box kept, a few per image (post-processing runs)
DETECT = {"box_score_thresh": 0.0, "box_detections_per_img": 8}


def _mobilenet_fpn(extra_p6p7: bool) -> Any:
    """The MobileNetV3-Large FPN backbone torchvision's 320 Faster R-CNN uses; with
    ``extra_p6p7``, RetinaNet's and FCOS's P6/P7 levels on top."""
    from torchvision.models.detection.backbone_utils import _mobilenet_extractor
    from torchvision.models.mobilenetv3 import mobilenet_v3_large
    from torchvision.ops.feature_pyramid_network import LastLevelP6P7

    trunk = mobilenet_v3_large(weights=None)
    extra = LastLevelP6P7(256, 256) if extra_p6p7 else None
    return _mobilenet_extractor(trunk, True, 6, extra_blocks=extra)


def _module(arch: str) -> Any:
    import torch
    import torchvision.models as tvm
    from torchvision.models import detection as det
    from torchvision.models import optical_flow, segmentation

    torch.manual_seed(0)
    small = {"min_size": 320, "max_size": 320}
    if arch == "ssdlite320_mobilenet_v3_large":
        return det.ssdlite320_mobilenet_v3_large(
            weights=None, weights_backbone=None, num_classes=11, score_thresh=0.0,
            detections_per_img=8, topk_candidates=50,
        )  # fmt: skip
    if arch == "fasterrcnn_mobilenet_v3_large_320_fpn":
        return det.fasterrcnn_mobilenet_v3_large_320_fpn(
            weights=None, weights_backbone=None, num_classes=11, **DETECT
        )
    if arch == "retinanet_mobilenet":
        anchors = det.anchor_utils.AnchorGenerator(
            tuple((s, int(s * 1.26), int(s * 1.59)) for s in (32, 64, 128, 256)),
            ((0.5, 1.0, 2.0),) * 4,
        )
        return det.RetinaNet(_mobilenet_fpn(True), num_classes=11, anchor_generator=anchors,
                             score_thresh=0.0, detections_per_img=8, topk_candidates=50,
                             **small)  # fmt: skip
    if arch == "fcos_mobilenet":
        anchors = det.anchor_utils.AnchorGenerator(((8,), (16,), (32,), (64,)), ((1.0,),) * 4)  # fmt: skip
        return det.FCOS(_mobilenet_fpn(True), num_classes=11, anchor_generator=anchors,
                        score_thresh=0.0, detections_per_img=8, topk_candidates=50,
                        **small)  # fmt: skip
    if arch in ("maskrcnn_mobilenet", "keypointrcnn_mobilenet"):
        anchors = det.anchor_utils.AnchorGenerator(((32, 64, 128, 256, 512),) * 3,
                                                   ((0.5, 1.0, 2.0),) * 3)  # fmt: skip
        kw: dict[str, Any] = {**small, **DETECT, "rpn_anchor_generator": anchors,
                              "rpn_pre_nms_top_n_test": 150, "rpn_post_nms_top_n_test": 150}  # fmt: skip
        # a narrower box head (256 wide, not 1024) keeps the file small
        kw["box_head"] = det.faster_rcnn.TwoMLPHead(256 * 7 * 7, 256)
        if arch == "maskrcnn_mobilenet":
            kw["box_predictor"] = det.faster_rcnn.FastRCNNPredictor(256, 11)
            kw["mask_predictor"] = det.mask_rcnn.MaskRCNNPredictor(256, 256, 11)
            return det.MaskRCNN(_mobilenet_fpn(False), **kw)
        kw["box_predictor"] = det.faster_rcnn.FastRCNNPredictor(256, 2)
        kw["keypoint_head"] = det.keypoint_rcnn.KeypointRCNNHeads(256, (128,) * 4)
        kw["keypoint_predictor"] = det.keypoint_rcnn.KeypointRCNNPredictor(128, 17)
        return det.KeypointRCNN(_mobilenet_fpn(False), **kw)
    if arch == "deeplabv3_mobilenet_v3_large":
        return segmentation.deeplabv3_mobilenet_v3_large(
            weights=None, weights_backbone=None, num_classes=21, aux_loss=False
        )
    if arch == "raft_small":
        return optical_flow.raft_small(weights=None)
    return getattr(tvm, arch)(weights=None)


def _wrap(arch: str, module: Any) -> Any:
    import torch

    if arch == "raft_small":

        class Raft(torch.nn.Module):
            def __init__(self, m: Any) -> None:
                super().__init__()
                self.m = m

            def forward(self, a: Any, b: Any) -> Any:
                return self.m(a, b, num_flow_updates=4)[-1]

        return Raft(module)
    if arch.startswith("deeplabv3"):

        class Seg(torch.nn.Module):
            def __init__(self, m: Any) -> None:
                super().__init__()
                self.m = m

            def forward(self, x: Any) -> Any:
                return self.m(x)["out"]

        return Seg(module)
    return module


def _export(name: str, out: Path) -> None:
    import torch

    family, arch, exporter, opset, dims, (h, w) = VISION21[name]
    module = _wrap(arch, _module(arch)).eval()
    torch.manual_seed(0)
    axes: dict[str, dict[int, str]] = {}
    if family == "detector":
        args: tuple[Any, ...] = ([torch.rand(3, h, w)],)
        names = ["images"]
        outputs = {
            "keypointrcnn_mobilenet": ["boxes", "labels", "scores", "keypoints", "keypoints_scores"],
            "maskrcnn_mobilenet": ["boxes", "labels", "scores", "masks"],
        }.get(arch, ["boxes", "labels", "scores"])  # fmt: skip
        if dims == "dynamic":
            axes = {"images": {1: "height", 2: "width"}}
    elif arch == "raft_small":
        args = (torch.rand(1, 3, h, w), torch.rand(1, 3, h, w))
        names, outputs = ["image1", "image2"], ["flow"]
        if dims == "dynamic":
            axes = {n: {0: "batch"} for n in names}
    else:
        args = (torch.rand(1, 3, h, w),)
        names, outputs = ["pixel_values"], ["out"]
        if dims == "dynamic":
            axes = {"pixel_values": {0: "batch", 2: "height", 3: "width"}}
    import onnx

    with tempfile.TemporaryDirectory() as tmp, torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = Path(tmp) / "m.onnx"
        if exporter == "torchscript":
            torch.onnx.export(
                module, args, str(path), dynamo=False, opset_version=opset, input_names=names,
                output_names=outputs, dynamic_axes=axes or None, do_constant_folding=True,
            )  # fmt: skip
            model = onnx.load(str(path))
        else:
            prog = torch.onnx.export(module, args, dynamo=True, opset_version=opset,
                                     input_names=names, output_names=outputs)  # fmt: skip
            assert prog is not None
            prog.save(str(path))
            model = onnx.load(str(path))
            _strip_traces(model)
    onnx.save(model, str(out / f"{name}.onnx"))


def _strip_traces(model: Any) -> None:
    """The dynamo exporter's per-node metadata (stack traces with this machine's paths)."""
    from onnx import helper

    for graph in [model.graph, *(
        a.g for n in model.graph.node for a in n.attribute if a.type == helper.AttributeProto.GRAPH
    )]:  # fmt: skip
        for node in graph.node:
            del node.metadata_props[:]
        del graph.metadata_props[:]
    del model.metadata_props[:]


def build(out: Path, only: list[str]) -> list[str]:
    """Every model (or those whose names contain one of ``only``) into ``out`` as
    ``<name>.onnx``; one that fails is reported on stderr and the others go on."""
    import torch

    torch.set_num_threads(1)
    out.mkdir(parents=True, exist_ok=True)
    done: list[str] = []
    for name in VISION21:
        if only and not any(w in name for w in only):
            continue
        try:
            _export(name, out)
        except Exception as exc:  # one model's failure is recorded by build.py
            print(f"FAIL {name}: {type(exc).__name__}: {exc}"[:400], file=sys.stderr)
            continue
        done.append(name)
    return done


def versions() -> dict[str, str]:
    return package_versions(PACKAGES)


def entry_of(name: str) -> tuple[str, str, str, int, str]:
    """(family, source, exporter, opset, dims) of ``name`` as the manifest records it."""
    family, arch, exporter, opset, dims, _ = VISION21[name]
    return family, f"torchvision:{arch}", exporter, opset, dims


def _record(out: Path, built: list[str], manifest: Path) -> None:
    """Add (or replace) the built models' entries in ``manifest``."""
    from dataclasses import asdict

    from benchmarks.realworld.build import Entry, main_opset, sha256_bytes

    doc = json.loads(manifest.read_text())
    models = {m["name"]: m for m in doc["models"]}
    venv = versions()
    for name in built:
        data = (out / f"{name}.onnx").read_bytes()
        family, source, exporter, opset, dims = entry_of(name)
        e = Entry(name, family, source, exporter, opset, dims, sha256_bytes(data), len(data),
                  extra={"vision21_venv": venv, "input_hw": list(VISION21[name][5])})  # fmt: skip
        e.opset = main_opset(data)
        models[name] = asdict(e)
    doc["models"] = [models[k] for k in sorted(models)]
    tmp = manifest.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, manifest)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--only", default="", help="comma-separated substrings of model names")
    ap.add_argument("--versions", action="store_true")
    ap.add_argument("--manifest", action="store_true", help="record the entries in manifest.json")
    args = ap.parse_args(argv)
    if args.versions:
        print(json.dumps(versions(), sort_keys=True))
        return 0
    if not args.out:
        ap.error("give --out")
    built = build(args.out, [w for w in args.only.split(",") if w])
    for name in built:
        print(name, flush=True)
    if args.manifest:
        _record(args.out, built, Path(__file__).resolve().parent / "manifest.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
