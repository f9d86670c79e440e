"""Held-out batch 20 (2026-12-07): what graph simplifiers and other converters write.

NPU users often run an export through a simplifier before QNN or OpenVINO: onnxsim
(onnx-simplifier), onnxslim, onnxoptimizer, and Polygraphy's ``surgeon sanitize
--fold-constants`` (Polygraphy + ONNX-GraphSurgeon), with the dims left dynamic or fixed
through the simplifier's input-shape option; and models from converters the corpus lacked:
paddle2onnx (small random-weight PaddlePaddle nets) and jax2onnx (Flax NNX modules).

Runs in a venv of its own (requirements-simplify20.txt; torch installed first, alone),
outside ``build.py``: ``python -m benchmarks.realworld.build_simplify20 --out DIR``. It
writes the models to DIR and merges their entries into manifest.json. Random weights,
seed 0, nothing downloaded.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from benchmarks.realworld.build import (
    MANIFEST,
    Entry,
    main_opset,
    run_job,
)
from benchmarks.realworld.pkgversions import package_versions

PACKAGES = (
    "torch", "transformers", "onnx", "onnxscript", "onnxruntime", "onnxsim", "onnxslim",
    "onnxoptimizer", "polygraphy", "onnx-graphsurgeon", "paddlepaddle", "paddle2onnx", "jax",
    "flax", "jax2onnx",
)  # fmt: skip

#: name -> (source: an ``ARCHS`` key or ``yolocnn``, exporter, opset, export dims,
#: simplifier, dims the simplifier fixes (``None``: left as exported))
SIMPLIFY20: dict[str, tuple[str, str, int, str, str, bool]] = {
    "sim20-bert-onnxsim-op17-dynamic": ("bert", "torchscript", 17, "dynamic", "onnxsim", False),
    "sim20-bert-onnxsim-shapes-op17-fixed": ("bert", "torchscript", 17, "dynamic", "onnxsim", True),
    "sim20-gpt2-dynamo-onnxsim-op18-dynamic": ("gpt2", "dynamo", 18, "dynamic", "onnxsim", False),
    "sim20-vit-onnxslim-op17-fixed": ("vit", "torchscript", 17, "fixed", "onnxslim", False),
    "sim20-gpt2-onnxslim-op17-dynamic": ("gpt2", "torchscript", 17, "dynamic", "onnxslim", False),
    "sim20-bert-dynamo-onnxslim-shapes-op18-fixed": ("bert", "dynamo", 18, "dynamic", "onnxslim", True),
    "sim20-distilbert-onnxoptimizer-op17-dynamic": ("distilbert", "torchscript", 17, "dynamic", "onnxoptimizer", False),
    "sim20-vit-dynamo-onnxoptimizer-op18-fixed": ("vit", "dynamo", 18, "fixed", "onnxoptimizer", False),
    "sim20-bert-polygraphy-fold-op17-dynamic": ("bert", "torchscript", 17, "dynamic", "polygraphy", False),
    "sim20-gpt2-dynamo-polygraphy-shapes-op18-fixed": ("gpt2", "dynamo", 18, "dynamic", "polygraphy", True),
    "sim20-yolocnn-onnxsim-op17-fixed": ("yolocnn", "torchscript", 17, "fixed", "onnxsim", False),
    "sim20-yolocnn-onnxslim-op17-dynamic": ("yolocnn", "torchscript", 17, "dynamic", "onnxslim", False),
    "sim20-qdq-bert-onnxsim-op17-fixed": ("bert", "torchscript", 17, "fixed", "qdq+onnxsim", False),
    "sim20-qdq-yolocnn-onnxslim-op17-fixed": ("yolocnn", "torchscript", 17, "fixed", "qdq+onnxslim", False),
    "sim20-qdq16-bert-onnxsim-op21-fixed": ("bert", "torchscript", 21, "fixed", "qdq16+onnxsim", False),
    "sim20-qdq-vit-polygraphy-fold-op17-fixed": ("vit", "torchscript", 17, "fixed", "qdq+polygraphy", False),
    "sim20-qdq-bert-onnxoptimizer-op17-dynamic": ("bert", "torchscript", 17, "dynamic", "qdq+onnxoptimizer", False),
    "sim20-bert-onnxslim-fp16-op17-fixed": ("bert", "torchscript", 17, "fixed", "onnxslim-fp16", False),
    "sim20-yolocnn-onnxslim-fp16-op17-fixed": ("yolocnn", "torchscript", 17, "fixed", "onnxslim-fp16", False),
    "sim20-llama-onnxsim-op17-dynamic": ("llama", "torchscript", 17, "dynamic", "onnxsim", False),
    "sim20-llama-dynamo-onnxslim-shapes-op18-fixed": ("llama", "dynamo", 18, "dynamic", "onnxslim", True),
    "sim20-convnext-dynamo-polygraphy-fold-op18-fixed": ("convnext", "dynamo", 18, "fixed", "polygraphy", False),
    "sim20-whisper-onnxsim-op17-fixed": ("whisper", "torchscript", 17, "fixed", "onnxsim", False),
    "sim20-wav2vec2-onnxslim-op17-dynamic": ("wav2vec2", "torchscript", 17, "dynamic", "onnxslim", False),
    "sim20-segformer-dynamo-onnxsim-op18-fixed": ("segformer", "dynamo", 18, "fixed", "onnxsim", False),
    "sim20-yolocnn-onnxoptimizer-op17-fixed": ("yolocnn", "torchscript", 17, "fixed", "onnxoptimizer", False),
    "sim20-qdq16-yolocnn-polygraphy-fold-op21-fixed": ("yolocnn", "torchscript", 21, "fixed", "qdq16+polygraphy", False),
}  # fmt: skip

#: name -> (paddle net, opset)
PADDLE20: dict[str, tuple[str, int]] = {
    "p2o20-paddle-cnn-op13-fixed": ("cnn", 13),
    "p2o20-paddle-lstm-op13-fixed": ("lstm", 13),
    "p2o20-paddle-transformer-op17-fixed": ("transformer", 17),
    "p2o20-paddle-cnn-op13-dynamic": ("cnn", 13),
    "p2o20-paddle-lstm-op13-dynamic": ("lstm", 13),
    "p2o20-paddle-transformer-op17-dynamic": ("transformer", 17),
    "p2o20-paddle-gru-op13-dynamic": ("gru", 13),
    "p2o20-paddle-fpn-op13-fixed": ("fpn", 13),
}

#: name -> (flax net, dims)
JAX20: dict[str, tuple[str, str]] = {
    "j2o20-flax-cnn-fixed": ("cnn", "fixed"),
    "j2o20-flax-mlp-dynamic": ("mlp", "dynamic"),
    "j2o20-flax-cnn-dynamic": ("cnn", "dynamic"),
    "j2o20-flax-attention-fixed": ("attention", "fixed"),
    "j2o20-flax-convtranspose-fixed": ("convtranspose", "fixed"),
}

#: the fixed dims the simplifiers' input-shape options give (batch 1, sequence 8)
FIXED_SHAPES = {"input_ids": [1, 8], "attention_mask": [1, 8], "pixel_values": [1, 3, 64, 64]}


def _yolocnn() -> tuple[Any, tuple[Any, ...], list[str], dict[str, dict[int, str]]]:
    """A small YOLOv8-like detector: Conv+BN+SiLU, a C2f block (Split, Concat), SPPF
    (MaxPools), a nearest Upsample, and a decoded head (Reshape, Sigmoid, Concat)."""
    import torch
    from torch import nn

    def cbs(cin: int, cout: int, k: int = 3, s: int = 1) -> nn.Module:
        return nn.Sequential(nn.Conv2d(cin, cout, k, s, k // 2, bias=False),
                             nn.BatchNorm2d(cout), nn.SiLU())  # fmt: skip

    class C2f(nn.Module):
        def __init__(self, c: int) -> None:
            super().__init__()
            self.cv1 = cbs(c, c, 1)
            self.m = nn.Sequential(cbs(c // 2, c // 2), cbs(c // 2, c // 2))
            self.cv2 = cbs(c + c // 2, c, 1)

        def forward(self, x: Any) -> Any:
            a, b = self.cv1(x).chunk(2, 1)
            return self.cv2(torch.cat([a, b, self.m(b)], 1))

    class SPPF(nn.Module):
        def __init__(self, c: int) -> None:
            super().__init__()
            self.cv1 = cbs(c, c // 2, 1)
            self.cv2 = cbs(c * 2, c, 1)
            self.pool = nn.MaxPool2d(5, 1, 2)

        def forward(self, x: Any) -> Any:
            y0 = self.cv1(x)
            y1 = self.pool(y0)
            y2 = self.pool(y1)
            return self.cv2(torch.cat([y0, y1, y2, self.pool(y2)], 1))

    class Yolo(nn.Module):
        def __init__(self, nc: int = 4) -> None:
            super().__init__()
            self.nc = nc
            self.stem = cbs(3, 8, 3, 2)
            self.d1 = cbs(8, 16, 3, 2)
            self.c1 = C2f(16)
            self.d2 = cbs(16, 32, 3, 2)
            self.c2 = C2f(32)
            self.sppf = SPPF(32)
            self.up = nn.Upsample(scale_factor=2.0, mode="nearest")
            self.c3 = C2f(48)
            self.h1 = nn.Conv2d(48, 4 + nc, 1)
            self.h2 = nn.Conv2d(32, 4 + nc, 1)

        def forward(self, x: Any) -> Any:
            p3 = self.c1(self.d1(self.stem(x)))
            p4 = self.sppf(self.c2(self.d2(p3)))
            f3 = self.c3(torch.cat([self.up(p4), p3], 1))
            outs = []
            for feat, head in ((f3, self.h1), (p4, self.h2)):
                o = head(feat)
                outs.append(o.flatten(2))
            y = torch.cat(outs, 2)
            box, cls = y.split([4, self.nc], 1)
            return torch.cat([box * 8.0, cls.sigmoid()], 1)

    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    px = torch.rand(1, 3, 64, 64, generator=g)
    return Yolo().eval(), (px,), ["pixel_values"], {"pixel_values": {0: "batch"}}


def _export(src: str, exporter: str, opset: int, dims: str) -> bytes:
    import torch

    from benchmarks.realworld.build import ARCHS, _hf_module, _inputs, export_torch

    torch.manual_seed(0)
    if src == "yolocnn":
        module, args, names, axes = _yolocnn()
    else:
        kind, over = ARCHS[src]
        module, cfg = _hf_module(src, kind, over)
        names, args, axes = _inputs(kind, cfg)
    from benchmarks.realworld.build import _upgrade

    top = 20 if exporter == "torchscript" else opset  # TorchScript writes up to opset 20
    data = export_torch(module, args, names, axes if dims == "dynamic" else None, exporter,
                        min(opset, top))  # fmt: skip
    return _upgrade(data, opset) if opset > top else data


def _input_shapes(data: bytes) -> dict[str, list[int]]:
    import onnx

    m = onnx.load_from_string(data)
    init = {i.name for i in m.graph.initializer}
    return {i.name: FIXED_SHAPES[i.name] for i in m.graph.input if i.name not in init}


def _simplify(data: bytes, how: str, fix: bool) -> bytes:
    import onnx

    with tempfile.TemporaryDirectory() as tmp:
        fin = Path(tmp) / "in.onnx"
        fout = Path(tmp) / "out.onnx"
        fin.write_bytes(data)
        shapes = _input_shapes(data) if fix else None
        if how == "onnxsim":
            import onnxsim

            m, ok = onnxsim.simplify(onnx.load(str(fin)), overwrite_input_shapes=shapes)
            if not ok:
                raise RuntimeError("onnxsim could not validate the simplified model")
            return bytes(m.SerializeToString())
        if how in ("onnxslim", "onnxslim-fp16"):
            import onnxslim

            kw: dict[str, Any] = {}
            if shapes:
                kw["input_shapes"] = [f"{k}:{','.join(map(str, v))}" for k, v in shapes.items()]
            if how == "onnxslim-fp16":
                kw["dtype"] = "fp16"
            m = onnxslim.slim(onnx.load(str(fin)), **kw)
            return bytes(m.SerializeToString())
        if how == "onnxoptimizer":
            import onnxoptimizer

            m = onnxoptimizer.optimize(
                onnx.load(str(fin)), onnxoptimizer.get_fuse_and_elimination_passes()
            )
            return bytes(m.SerializeToString())
        if how == "polygraphy":
            cmd = [str(Path(sys.executable).parent / "polygraphy"), "surgeon", "sanitize",
                   str(fin), "--fold-constants", "-o", str(fout)]  # fmt: skip
            if shapes:
                cmd += ["--override-input-shapes"] + [
                    f"{k}:{v}".replace(" ", "") for k, v in shapes.items()
                ]
            subprocess.run(cmd, check=True, capture_output=True, timeout=600)
            return fout.read_bytes()
    raise ValueError(how)


def _qdq(data: bytes, bits: int = 8) -> bytes:
    import onnx
    from onnxruntime.quantization import QuantFormat, QuantType, quantize, quantize_static
    from onnxruntime.quantization.execution_providers.qnn import get_qnn_qdq_config

    from benchmarks.realworld.build import _quiet, _reader

    with tempfile.TemporaryDirectory() as tmp, _quiet():
        fin = Path(tmp) / "f.onnx"
        fout = Path(tmp) / "q.onnx"
        fin.write_bytes(data)
        if bits == 16:  # the QNN config: uint16 activations, uint8 weights
            cfg = get_qnn_qdq_config(str(fin), _reader(data), activation_type=QuantType.QUInt16,
                                     weight_type=QuantType.QUInt8)  # fmt: skip
            quantize(str(fin), str(fout), cfg)
        else:
            quantize_static(str(fin), str(fout), _reader(data), quant_format=QuantFormat.QDQ,
                            activation_type=QuantType.QUInt8, weight_type=QuantType.QUInt8)  # fmt: skip
        return bytes(onnx.load(str(fout)).SerializeToString())


def _sim20(name: str) -> tuple[bytes, dict[str, Any]]:
    src, exporter, opset, dims, how, fix = SIMPLIFY20[name]
    data = _export(src, exporter, opset, dims)
    if how.startswith(("qdq+", "qdq16+")):
        bits, how = how.split("+")
        data = _qdq(data, 16 if bits == "qdq16" else 8)
    return _simplify(data, how, fix), {"simplifier": how, "fixed_by_simplifier": fix}


def _paddle20(name: str) -> tuple[bytes, dict[str, Any]]:
    import paddle

    # paddle names parameters and ops from process-wide counters: a fresh set per model
    # keeps a file the same whichever models were built before it in the process
    with paddle.utils.unique_name.guard():
        return _paddle20_build(name)


def _paddle20_build(name: str) -> tuple[bytes, dict[str, Any]]:
    import paddle
    from paddle import nn

    net, opset = PADDLE20[name]
    dyn = name.endswith("-dynamic")  # batch (CNN) or batch and sequence (LSTM) left free
    paddle.seed(0)
    paddle.set_device("cpu")
    if net == "cnn":

        class Cnn(nn.Layer):
            def __init__(self) -> None:
                super().__init__()
                self.c1 = nn.Conv2D(3, 8, 3, padding=1)
                self.bn = nn.BatchNorm2D(8)
                self.c2 = nn.Conv2D(8, 16, 3, stride=2, padding=1)
                self.dw = nn.Conv2D(16, 16, 3, padding=1, groups=16)
                self.pool = nn.AdaptiveAvgPool2D(1)
                self.fc = nn.Linear(16, 10)

            def forward(self, x: Any) -> Any:
                y = nn.functional.relu(self.bn(self.c1(x)))
                y = nn.functional.hardswish(self.c2(y))
                y = y + nn.functional.relu6(self.dw(y))
                # paddle2onnx 2.1.0 refuses a scale_factor (a PIR float-list attribute): a size
                y = nn.functional.interpolate(y, size=[32, 32], mode="bilinear")
                y = self.pool(y).flatten(1)
                return nn.functional.softmax(self.fc(y), axis=-1)

        layer: Any = Cnn()
        spec = [paddle.static.InputSpec([None if dyn else 1, 3, 32, 32], "float32", "x")]
    elif net == "lstm":

        class Lstm(nn.Layer):
            def __init__(self) -> None:
                super().__init__()
                self.emb = nn.Embedding(100, 16)
                self.rnn = nn.LSTM(16, 24, num_layers=1)
                self.fc = nn.Linear(24, 4)

            def forward(self, ids: Any) -> Any:
                out, _ = self.rnn(self.emb(ids))
                return self.fc(out[:, -1])

        layer = Lstm()
        spec = [paddle.static.InputSpec([None, None] if dyn else [1, 8], "int64", "input_ids")]
    elif net == "gru":

        class Gru(nn.Layer):
            def __init__(self) -> None:
                super().__init__()
                self.emb = nn.Embedding(100, 16)
                self.rnn = nn.GRU(16, 24, num_layers=1, direction="bidirect")
                self.fc = nn.Linear(48, 4)

            def forward(self, ids: Any) -> Any:
                out, _ = self.rnn(self.emb(ids))
                return self.fc(out.mean(axis=1))

        layer = Gru()
        spec = [paddle.static.InputSpec([None, None] if dyn else [1, 8], "int64", "input_ids")]
    elif net == "fpn":

        class Fpn(nn.Layer):
            def __init__(self) -> None:
                super().__init__()
                self.c1 = nn.Conv2D(3, 8, 3, stride=2, padding=1)
                self.c2 = nn.Conv2D(8, 16, 3, stride=2, padding=1)
                self.lat = nn.Conv2D(16, 8, 1)
                self.up = nn.Conv2DTranspose(8, 8, 2, stride=2)
                self.head = nn.Conv2D(16, 5, 1)

            def forward(self, x: Any) -> Any:
                a = nn.functional.leaky_relu(self.c1(x), 0.1)
                b = nn.functional.swish(self.c2(a))
                u = nn.functional.interpolate(self.lat(b), size=[16, 16], mode="nearest")
                y = self.head(paddle.concat([a, u + self.up(self.lat(b))], axis=1))
                box, score = paddle.split(y, [4, 1], axis=1)
                return paddle.concat([box.exp(), nn.functional.sigmoid(score)], axis=1)

        layer = Fpn()
        spec = [paddle.static.InputSpec([1, 3, 32, 32], "float32", "x")]
    else:

        class Tx(nn.Layer):
            def __init__(self) -> None:
                super().__init__()
                self.emb = nn.Embedding(100, 32)
                self.pos = self.create_parameter([1, 8, 32])
                self.enc = nn.TransformerEncoder(
                    nn.TransformerEncoderLayer(32, 2, 64, dropout=0.0), 2
                )
                self.fc = nn.Linear(32, 4)

            def forward(self, ids: Any) -> Any:
                y = self.enc(self.emb(ids) + self.pos)
                return self.fc(y.mean(axis=1))

        layer = Tx()
        spec = [paddle.static.InputSpec([None, 8] if dyn else [1, 8], "int64", "input_ids")]
    layer.eval()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "m"
        paddle.onnx.export(layer, str(base), input_spec=spec, opset_version=opset)
        return Path(f"{base}.onnx").read_bytes(), {"paddle_net": net, "dynamic": dyn}


def _jax20(name: str) -> tuple[bytes, dict[str, Any]]:
    from flax import nnx
    from jax2onnx import to_onnx

    net, dims = JAX20[name]
    rngs = nnx.Rngs(0)
    if net == "cnn":

        class Cnn(nnx.Module):
            def __init__(self, rngs: nnx.Rngs) -> None:
                self.c1 = nnx.Conv(3, 8, kernel_size=(3, 3), rngs=rngs)
                self.c2 = nnx.Conv(8, 16, kernel_size=(3, 3), strides=(2, 2), rngs=rngs)
                self.ln = nnx.LayerNorm(16, rngs=rngs)
                self.fc = nnx.Linear(16, 10, rngs=rngs)

            def __call__(self, x: Any) -> Any:
                y = nnx.relu(self.c1(x))
                y = nnx.gelu(self.ln(self.c2(y)))
                return nnx.softmax(self.fc(y.mean(axis=(1, 2))))

        model: Any = Cnn(rngs)
        shape: tuple[Any, ...] = ("B", 32, 32, 3) if dims == "dynamic" else (1, 32, 32, 3)
    elif net == "convtranspose":

        class Up(nnx.Module):
            def __init__(self, rngs: nnx.Rngs) -> None:
                self.c1 = nnx.Conv(3, 8, kernel_size=(3, 3), strides=(2, 2), rngs=rngs)
                self.bn = nnx.BatchNorm(8, use_running_average=True, rngs=rngs)
                self.up = nnx.ConvTranspose(8, 4, kernel_size=(2, 2), strides=(2, 2), rngs=rngs)

            def __call__(self, x: Any) -> Any:
                y = nnx.silu(self.bn(self.c1(x)))
                return nnx.sigmoid(self.up(y))

        model = Up(rngs)
        shape = (1, 32, 32, 3)
    elif net == "attention":

        class Attn(nnx.Module):
            def __init__(self, rngs: nnx.Rngs) -> None:
                self.ln = nnx.LayerNorm(32, rngs=rngs)
                self.att = nnx.MultiHeadAttention(num_heads=2, in_features=32, decode=False,
                                                  rngs=rngs)  # fmt: skip
                self.fc = nnx.Linear(32, 4, rngs=rngs)

            def __call__(self, x: Any) -> Any:
                y = x + self.att(self.ln(x))
                return self.fc(y)

        model = Attn(rngs)
        shape = (1, 8, 32)
    else:

        class Mlp(nnx.Module):
            def __init__(self, rngs: nnx.Rngs) -> None:
                self.l1 = nnx.Linear(16, 32, rngs=rngs)
                self.l2 = nnx.Linear(32, 32, rngs=rngs)
                self.l3 = nnx.Linear(32, 4, rngs=rngs)

            def __call__(self, x: Any) -> Any:
                y = nnx.gelu(self.l1(x))
                y = y + nnx.tanh(self.l2(y))
                return self.l3(y)

        model = Mlp(rngs)
        shape = ("B", 16) if dims == "dynamic" else (1, 16)
    m = to_onnx(model, [shape])
    return bytes(m.SerializeToString()), {"flax_net": net}


def jobs() -> list[tuple[str, Callable[[], tuple[bytes, dict[str, Any]]], Entry]]:
    import functools

    out: list[tuple[str, Callable[[], tuple[bytes, dict[str, Any]]], Entry]] = []
    for name, (src, exporter, opset, dims, how, fix) in SIMPLIFY20.items():
        lib = "torch" if src == "yolocnn" else "transformers"
        entry = Entry(name, "simplified", f"{how}:{lib}:{src}", f"{exporter}+{how}", opset,
                      "fixed" if fix else dims)  # fmt: skip
        out.append((name, functools.partial(_sim20, name), entry))
    for name, (net, opset) in PADDLE20.items():
        entry = Entry(name, "paddle", f"paddle2onnx:paddle:{net}", "paddle2onnx", opset, "fixed")
        out.append((name, functools.partial(_paddle20, name), entry))
    for name, (net, dims) in JAX20.items():
        entry = Entry(name, "jax", f"jax2onnx:flax:{net}", "jax2onnx", None, dims)
        out.append((name, functools.partial(_jax20, name), entry))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="model folder")
    ap.add_argument("--only", help="comma-separated substrings of model names to build")
    ap.add_argument("--manifest", default=str(MANIFEST))
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    import torch

    torch.set_num_threads(1)
    wanted = [w for w in (args.only or "").split(",") if w]
    versions = package_versions(PACKAGES)
    entries = []
    for name, build, entry in jobs():
        if wanted and not any(w in name for w in wanted):
            continue
        e = run_job(out, build, entry)
        if not e.error:
            e.extra["simplify20_venv"] = versions
            e.opset = e.opset or main_opset((out / f"{name}.onnx").read_bytes())
        print(f"{'FAIL' if e.error else 'ok  '} {name} {e.bytes} {e.error or ''}", flush=True)
        entries.append(e)
    manifest_path = Path(args.manifest)
    doc = json.loads(manifest_path.read_text())
    models = {m["name"]: m for m in doc["models"]}
    for e in entries:
        if e.error:  # a model that did not build keeps no entry
            continue
        models[e.name] = asdict(e)
    doc["models"] = [models[k] for k in sorted(models)]
    tmp = manifest_path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, manifest_path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
