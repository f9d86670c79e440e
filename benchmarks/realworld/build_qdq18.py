"""Held-out batch 18 (2026-12-07): QDQ models as NPU users make them, along quantizer paths
the corpus lacked: ``qnn_preprocess_model`` before the QNN config (decoders, dynamo exports),
mixed 8/16-bit precision from ``TensorQuantOverrides`` (conversion Q/DQ pairs),
``AddQDQPairToWeight``, ``DedicatedQDQPair``, ``QDQKeepRemovableActivations``,
``QuantizeBias: False``, asymmetric int8 weights with symmetric uint8 activations, int4 and
uint4 weights (per channel, opset 21), signed int16 activations with uint8 weights on a
Conv net with Resize, Pad, Concat and Split, and QDQ models that keep dynamic dims.

Run by ``build.py`` (``heldout18_jobs``) in the corpus venv; random weights, seed 0.
"""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path
from typing import Any

#: name -> (source, exporter, opset, dims, recipe). The source is an ``ARCHS`` key or
#: ``convnet`` (a small Conv net with Split, Concat, Pad and a bilinear Resize)
QDQ_HELDOUT18: dict[str, tuple[str, str, int, str, str]] = {
    "qdq18-qwen3-qnnprep-a16w8-op21-fixed": ("qwen3", "torchscript", 21, "fixed", "qnnprep_a16w8"),
    "qdq18-gpt2-dynamo-qnnprep-a16w8-op21-fixed": ("gpt2", "dynamo", 21, "fixed", "qnnprep_a16w8"),
    "qdq18-bert-dynamo-qnnprep-a8w8-op20-fixed": ("bert", "dynamo", 20, "fixed", "qnnprep_a8w8"),
    "qdq18-bert-mixed-a8-ln16-op21-fixed": ("bert", "torchscript", 21, "fixed", "mixed_ln16"),
    "qdq18-convnext-dynamo-mixed-a8-conv16-op21-fixed": ("convnext", "dynamo", 21, "fixed", "mixed_conv16"),
    "qdq18-resnet-addqdqweight-op17-fixed": ("resnet", "torchscript", 17, "fixed", "add_qdq_weight"),
    "qdq18-mobilenet_v2-dedicated-op17-fixed": ("mobilenet_v2", "torchscript", 17, "fixed", "dedicated"),
    "qdq18-mobilenet_v2-dynamo-keepremovable-op18-fixed": ("mobilenet_v2", "dynamo", 18, "fixed", "keep_removable"),
    "qdq18-segformer-nobias-op17-fixed": ("segformer", "torchscript", 17, "fixed", "no_bias"),
    "qdq18-resnet-dynamo-wasym-asym8-op18-fixed": ("resnet", "dynamo", 18, "fixed", "weight_asym"),
    "qdq18-resnet-int4pc-a16-op21-fixed": ("resnet", "torchscript", 21, "fixed", "int4_per_channel"),
    "qdq18-bert-uint4-a8-op21-fixed": ("bert", "torchscript", 21, "fixed", "uint4"),
    "qdq18-convnet-a16s-w8-op21-fixed": ("convnet", "torchscript", 21, "fixed", "a16s_w8"),
    "qdq18-convnet-dynamo-qnn-a16w8-op21-fixed": ("convnet", "dynamo", 21, "fixed", "qnn_a16w8"),
    "qdq18-bert-qdq8-op17-dynamic": ("bert", "torchscript", 17, "dynamic", "qdq8"),
    "qdq18-distilbert-qnn-a16w8-op21-dynamic": ("distilbert", "torchscript", 21, "dynamic", "qnn_a16w8"),
}  # fmt: skip


def _convnet() -> tuple[Any, tuple[Any, ...], list[str], dict[str, dict[int, str]]]:
    import torch
    from torch import nn
    from torch.nn import functional as F

    class ConvNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Conv2d(3, 16, 3, padding=1)
            self.a = nn.Conv2d(8, 8, 3, padding=1)
            self.b = nn.Conv2d(8, 8, 1)
            self.down = nn.Conv2d(16, 16, 3, stride=2)
            self.head = nn.Conv2d(32, 4, 1)

        def forward(self, x: Any) -> Any:
            y = F.relu(self.stem(x))
            p, q = torch.split(y, 8, dim=1)
            y2 = torch.cat([F.relu(self.a(p)), self.b(q)], dim=1)
            d = F.relu(self.down(F.pad(y2, (0, 1, 0, 1))))
            up = F.interpolate(d, scale_factor=2.0, mode="bilinear", align_corners=False)
            return self.head(torch.cat([up, y2], dim=1))

    torch.manual_seed(0)
    return ConvNet().eval(), (torch.randn(1, 3, 32, 32),), ["pixel_values"], {}


def _source(src: str, exporter: str, opset: int, dims: str) -> bytes:
    import torch

    from benchmarks.realworld.build import (
        ARCHS,
        _hf_module,
        _import_vision,
        _inputs,
        _upgrade,
        export_torch,
    )

    _import_vision()  # transformers imports torchvision when installed: its loadable part
    torch.manual_seed(0)
    if src == "convnet":
        module, args, names, axes = _convnet()
    else:
        kind, over = ARCHS[src]
        module, cfg = _hf_module(src, kind, over)
        names, args, axes = _inputs(kind, cfg)
    top = 20 if exporter == "torchscript" else opset
    data = export_torch(module, args, names, axes if dims == "dynamic" else None, exporter,
                        min(opset, top))  # fmt: skip
    return _upgrade(data, opset) if opset > top else data


def _tensors_of(path: str, op_types: tuple[str, ...]) -> list[str]:
    import onnx

    m = onnx.load(path)
    return [n.output[0] for n in m.graph.node if n.op_type in op_types]


def _qdq18(name: str) -> tuple[bytes, dict[str, Any]]:
    import onnx
    from onnxruntime.quantization import QuantFormat, QuantType, quantize, quantize_static
    from onnxruntime.quantization.execution_providers.qnn import (
        get_qnn_qdq_config,
        qnn_preprocess_model,
    )

    from benchmarks.realworld.build import _quiet, _reader

    src, exporter, opset, dims, recipe = QDQ_HELDOUT18[name]
    base = _source(src, exporter, opset, dims)
    with tempfile.TemporaryDirectory() as tmp, _quiet():
        fin = Path(tmp) / "f.onnx"
        fout = Path(tmp) / "q.onnx"
        fin.write_bytes(base)
        qnn = {
            "qnnprep_a16w8": (QuantType.QUInt16, QuantType.QUInt8, False, None),
            "qnnprep_a8w8": (QuantType.QUInt8, QuantType.QUInt8, False, None),
            "qnn_a16w8": (QuantType.QUInt16, QuantType.QUInt8, False, None),
            "int4_per_channel": (QuantType.QUInt16, QuantType.QInt4, True, None),
            "mixed_ln16": (QuantType.QUInt8, QuantType.QUInt8, False, ("LayerNormalization",)),
            "mixed_conv16": (QuantType.QUInt8, QuantType.QUInt8, False, ("Conv",)),
        }.get(recipe)
        if qnn is not None:
            act, weight, per_channel, wide_ops = qnn
            if recipe.startswith("qnnprep"):
                # the QNN flow ORT's docs give: fuse LayerNorm/Gelu/MatMul+Add first
                pre = Path(tmp) / "pre.onnx"
                qnn_preprocess_model(str(fin), str(pre), fuse_layernorm=True)
                if pre.exists():
                    fin = pre
            overrides = None
            if wide_ops:  # these ops' outputs in 16 bits, the rest in 8 (mixed precision)
                overrides = {
                    t: [{"quant_type": QuantType.QUInt16}] for t in _tensors_of(str(fin), wide_ops)
                }
            qcfg = get_qnn_qdq_config(
                str(fin), _reader(fin.read_bytes()), activation_type=act, weight_type=weight,
                per_channel=per_channel, init_overrides=overrides,
            )  # fmt: skip
            quantize(str(fin), str(fout), qcfg)
        else:
            kwargs: dict[str, Any] = {
                "quant_format": QuantFormat.QDQ,
                "activation_type": QuantType.QUInt8,
                "weight_type": QuantType.QInt8,
                "extra_options": {},
            }
            extra = kwargs["extra_options"]
            if recipe == "add_qdq_weight":
                extra["AddQDQPairToWeight"] = True
            elif recipe == "dedicated":
                extra["DedicatedQDQPair"] = True
            elif recipe == "keep_removable":
                extra["QDQKeepRemovableActivations"] = True
            elif recipe == "no_bias":
                extra["QuantizeBias"] = False
            elif recipe == "weight_asym":
                extra["WeightSymmetric"] = False
                extra["ActivationSymmetric"] = True
            elif recipe == "uint4":
                kwargs["weight_type"] = QuantType.QUInt4
                kwargs["per_channel"] = True
            elif recipe == "a16s_w8":
                kwargs["activation_type"] = QuantType.QInt16
                kwargs["weight_type"] = QuantType.QUInt8
            quantize_static(str(fin), str(fout), _reader(base), **kwargs)
        m = onnx.load(str(fout))
    return m.SerializeToString(), {"recipe": recipe}


def heldout18_jobs() -> list[Any]:
    from benchmarks.realworld.build import Entry

    jobs = []
    for name, (src, exporter, opset, dims, _) in QDQ_HELDOUT18.items():
        lib = "torch" if src == "convnet" else "transformers"
        entry = Entry(name, "qdq", f"onnxruntime.quantization:{lib}:{src}",
                      f"{exporter}+quantize", opset, dims)  # fmt: skip
        jobs.append((name, functools.partial(_qdq18, name), entry))
    return jobs
