"""Held-out batch 14: what tf2onnx writes of TensorFlow, Keras and TFLite models (run by
``build.py``, not by hand).

tf2onnx 1.17.0 converts Keras 2 models (``tf.keras`` of TensorFlow 2.15), which needs
``numpy`` < 2 and ``protobuf`` < 5, so it cannot share the corpus venv; it lives in a venv of
its own built from ``requirements-tf.txt``. ``build.py``'s ``heldout14_jobs`` runs this file
in that venv (``ONNXLINT_TF_PYTHON``, default ``.venv-tf/bin/python``) once and takes the
ONNX files it leaves in ``--out``::

    .venv-tf/bin/python -m benchmarks.realworld.build_tf --out DIR

Every model has random weights (``keras.utils.set_random_seed(0)``; ``keras.applications``
with ``weights=None``, nothing downloaded) and is converted with ``tf2onnx.convert``:
``from_keras`` (NHWC graphs with Transposes around the convolutions), ``from_function``
(``tf.while_loop`` and ``tf.cond``) or ``from_tflite`` (a float TFLite model, a
dynamic-range one, and fully int8-quantized ones with int8 and float inputs, which tf2onnx
turns into QuantizeLinear/DequantizeLinear pairs). ``--versions`` prints the versions used
as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.realworld.pkgversions import package_versions

PACKAGES = ("tensorflow-cpu", "keras", "tf2onnx", "onnx", "numpy", "protobuf")


def _tf() -> Any:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    tf.keras.utils.set_random_seed(0)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    return tf


def _app(name: str, size: int, **kw: Any) -> Callable[[], Any]:
    def make() -> Any:
        tf = _tf()
        ctor = getattr(tf.keras.applications, name)
        return ctor(weights=None, input_shape=(size, size, 3), classes=10, **kw)

    return make


def _encoder() -> Any:
    """A two-block Keras transformer encoder (MultiHeadAttention, LayerNormalization)."""
    tf = _tf()
    L = tf.keras.layers
    ids = tf.keras.Input((None,), dtype="int32", name="input_ids")
    x = L.Embedding(500, 32)(ids)
    for _ in range(2):
        a = L.MultiHeadAttention(num_heads=4, key_dim=8)(x, x)
        x = L.LayerNormalization(epsilon=1e-6)(x + a)
        f = L.Dense(64, activation="gelu")(x)
        x = L.LayerNormalization(epsilon=1e-6)(x + L.Dense(32)(f))
    out = L.Dense(3)(L.GlobalAveragePooling1D()(x))
    return tf.keras.Model(ids, out)


def _recurrent(kind: str) -> Callable[[], Any]:
    def make() -> Any:
        tf = _tf()
        L = tf.keras.layers
        x = tf.keras.Input((None, 16), name="features")
        if kind == "lstm":
            h = L.LSTM(32, return_sequences=True)(x)
            h = L.LSTM(32)(h)
        elif kind == "gru":
            h = L.GRU(32)(x)
        else:
            h = L.Bidirectional(L.LSTM(16, return_sequences=True))(x)
            h = L.GlobalMaxPooling1D()(h)
        return tf.keras.Model(x, L.Dense(4)(h))

    return make


def _text_cnn() -> Any:
    tf = _tf()
    L = tf.keras.layers
    ids = tf.keras.Input((64,), dtype="int32", name="tokens")
    x = L.Embedding(1000, 32)(ids)
    x = L.Conv1D(32, 5, activation="relu", padding="same")(x)
    x = L.MaxPooling1D(2)(x)
    x = L.Conv1D(32, 3, activation="relu")(x)
    x = L.GlobalMaxPooling1D()(x)
    return tf.keras.Model(ids, L.Dense(2, activation="softmax")(L.Dropout(0.2)(x)))


def _unet() -> Any:
    """A small U-Net (Conv2DTranspose, UpSampling2D, Concatenate, BatchNormalization)."""
    tf = _tf()
    L = tf.keras.layers
    inp = tf.keras.Input((64, 64, 3), name="image")

    def block(x: Any, c: int) -> Any:
        x = L.Conv2D(c, 3, padding="same")(x)
        x = L.BatchNormalization()(x)
        return L.ReLU()(x)

    e1 = block(inp, 8)
    e2 = block(L.MaxPooling2D()(e1), 16)
    e3 = block(L.MaxPooling2D()(e2), 32)
    d2 = L.Conv2DTranspose(16, 2, strides=2)(e3)
    d2 = block(L.Concatenate()([d2, e2]), 16)
    d1 = L.UpSampling2D(interpolation="bilinear")(d2)
    d1 = block(L.Concatenate()([d1, e1]), 8)
    return tf.keras.Model(inp, L.Conv2D(2, 1, activation="sigmoid")(d1))


def _small_cnn() -> Any:
    """The Keras tutorial's MNIST-style CNN (what a TFLite int8 micro model looks like)."""
    tf = _tf()
    L = tf.keras.layers
    inp = tf.keras.Input((28, 28, 1), name="image")
    x = L.Conv2D(8, 3, activation="relu")(inp)
    x = L.DepthwiseConv2D(3, activation="relu6")(x)
    x = L.MaxPooling2D()(x)
    x = L.Conv2D(16, 3, activation="relu")(x)
    x = L.AveragePooling2D()(x)
    x = L.Flatten()(x)
    return tf.keras.Model(inp, L.Dense(10, activation="softmax")(L.Dense(32, activation="relu")(x)))


#: name -> (model maker, batch dim (None: dynamic), opset)
KERAS: dict[str, tuple[Callable[[], Any], int | None, int]] = {
    "tf-keras-mobilenetv2-a035-96-op13": (_app("MobileNetV2", 96, alpha=0.35), 1, 13),
    "tf-keras-mobilenetv2-a035-96-dyn-op15": (_app("MobileNetV2", 96, alpha=0.35), None, 15),
    "tf-keras-mobilenetv3small-96-op15": (_app("MobileNetV3Small", 96, alpha=0.75), 1, 15),
    "tf-keras-mobilenetv3large-96-dyn-op17": (_app("MobileNetV3Large", 96, minimalistic=True), None, 17),
    "tf-keras-efficientnetb0-64-op17": (_app("EfficientNetB0", 64), 1, 17),
    "tf-keras-efficientnetv2b0-64-dyn-op18": (_app("EfficientNetV2B0", 64), None, 18),
    "tf-keras-resnet50-64-op13": (_app("ResNet50", 64), 1, 13),
    "tf-keras-densenet121-64-dyn-op14": (_app("DenseNet121", 64), None, 14),
    "tf-keras-nasnetmobile-64-op13": (_app("NASNetMobile", 64), 1, 13),
    "tf-keras-transformer-encoder-op17": (_encoder, None, 17),
    "tf-keras-lstm2-op14": (_recurrent("lstm"), None, 14),
    "tf-keras-gru-op14": (_recurrent("gru"), None, 14),
    "tf-keras-bilstm-op16": (_recurrent("bilstm"), 1, 16),
    "tf-keras-textcnn-op13": (_text_cnn, None, 13),
    "tf-keras-unet-op16": (_unet, 1, 16),
}  # fmt: skip


def _fixed(model: Any, batch: int | None) -> list[Any]:
    import tensorflow as tf

    specs = []
    for t in model.inputs:
        shape = [batch, *t.shape[1:]]
        specs.append(tf.TensorSpec(shape, t.dtype, name=t.name.split(":")[0]))
    return specs


def _while_fn() -> tuple[Any, list[Any]]:
    """``tf.while_loop`` over a dense layer, trip count from an input (tf2onnx: Loop)."""
    tf = _tf()
    w = tf.constant(tf.random.normal((16, 16), seed=1) * 0.1)

    @tf.function
    def f(x: Any, n: Any) -> Any:
        def body(i: Any, h: Any) -> tuple[Any, Any]:
            return i + 1, tf.nn.relu(tf.matmul(h, w) + h)

        _, h = tf.while_loop(lambda i, h: i < n, body, (tf.constant(0), x))
        return h

    sig = [tf.TensorSpec((None, 16), tf.float32, name="x"), tf.TensorSpec((), tf.int32, name="n")]
    return f, sig


def _cond_fn() -> tuple[Any, list[Any]]:
    """``tf.cond`` on a reduction of the input, a convolution in one branch (tf2onnx: If)."""
    tf = _tf()
    k = tf.constant(tf.random.normal((3, 3, 3, 8), seed=2) * 0.1)
    k2 = tf.constant(tf.random.normal((1, 1, 3, 8), seed=3) * 0.1)

    @tf.function
    def f(x: Any) -> Any:
        return tf.cond(
            tf.reduce_mean(x) > 0.0,
            lambda: tf.nn.relu(tf.nn.conv2d(x, k, 1, "SAME")),
            lambda: tf.nn.sigmoid(tf.nn.conv2d(x, k2, 1, "SAME")),
        )

    return f, [tf.TensorSpec((1, 32, 32, 3), tf.float32, name="x")]


FUNCTIONS: dict[str, tuple[Callable[[], tuple[Any, list[Any]]], int]] = {
    "tf-function-while-loop-op15": (_while_fn, 15),
    "tf-function-cond-conv-op15": (_cond_fn, 15),
}

#: name -> (Keras model maker, TFLite quantization, opset)
TFLITE: dict[str, tuple[Callable[[], Any], str, int]] = {
    "tflite-mobilenetv2-a035-96-float-op13": (_app("MobileNetV2", 96, alpha=0.35), "float", 13),
    "tflite-mobilenetv2-a035-96-dynrange-op13": (_app("MobileNetV2", 96, alpha=0.35), "dynamic", 13),
    "tflite-mobilenetv2-a035-96-int8-op13": (_app("MobileNetV2", 96, alpha=0.35), "int8", 13),
    "tflite-mobilenetv2-a035-96-int8-floatio-op13": (_app("MobileNetV2", 96, alpha=0.35), "int8-floatio", 13),
    "tflite-smallcnn-int8-op17": (_small_cnn, "int8", 17),
    "tflite-efficientnetb0-64-int8-op13": (_app("EfficientNetB0", 64), "int8", 13),
}  # fmt: skip


def _tflite_bytes(model: Any, quant: str) -> bytes:
    import numpy as np
    import tensorflow as tf

    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    if quant != "float":
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
    if quant.startswith("int8"):
        shape = (1, *model.inputs[0].shape[1:])
        rng = np.random.default_rng(0)

        def data() -> Any:
            for _ in range(8):
                yield [rng.uniform(-1, 1, shape).astype(np.float32)]

        conv.representative_dataset = data
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        if quant == "int8":
            conv.inference_input_type = tf.int8
            conv.inference_output_type = tf.int8
    return bytes(conv.convert())


def _keras(name: str, out: Path) -> None:
    import tf2onnx

    make, batch, opset = KERAS[name]
    m = make()
    tf2onnx.convert.from_keras(
        m, input_signature=_fixed(m, batch), opset=opset, output_path=str(out / f"{name}.onnx")
    )


def _function(name: str, out: Path) -> None:
    import tf2onnx

    fn, opset = FUNCTIONS[name]
    f, sig = fn()
    tf2onnx.convert.from_function(
        f, input_signature=sig, opset=opset, output_path=str(out / f"{name}.onnx")
    )


def _tflite(name: str, out: Path) -> None:
    import tf2onnx

    make, quant, opset = TFLITE[name]
    data = _tflite_bytes(make(), quant)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "model.tflite"
        src.write_bytes(data)
        tf2onnx.convert.from_tflite(str(src), opset=opset, output_path=str(out / f"{name}.onnx"))


def build(out: Path, only: list[str]) -> list[str]:
    """Every model (or those whose names contain one of ``only``) into ``out`` as
    ``<name>.onnx``; one that fails is reported on stderr and the others go on."""
    out.mkdir(parents=True, exist_ok=True)
    done: list[str] = []
    steps = [(n, _keras) for n in KERAS] + [(n, _function) for n in FUNCTIONS]
    for name, step in [*steps, *((n, _tflite) for n in TFLITE)]:
        if only and not any(w in name for w in only):
            continue
        try:
            step(name, out)
        except Exception as exc:  # one model's failure is recorded by build.py
            print(f"FAIL {name}: {type(exc).__name__}: {exc}"[:400], file=sys.stderr)
            continue
        done.append(name)
    return done


def versions() -> dict[str, str]:
    return package_versions(PACKAGES)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--only", default="", help="comma-separated substrings of model names")
    ap.add_argument("--versions", action="store_true")
    args = ap.parse_args(argv)
    if args.versions:
        print(json.dumps(versions(), sort_keys=True))
        return 0
    if not args.out:
        ap.error("give --out")
    for name in build(args.out, [w for w in args.only.split(",") if w]):
        print(name, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
