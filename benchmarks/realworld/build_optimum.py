"""Held-out batch 10: what Hugging Face Optimum writes (run by ``build.py``, not by hand).

``optimum-onnx`` 0.1.0 needs ``transformers`` < 4.58, so it cannot share the corpus venv
(``transformers`` 5.24.0); it lives in a venv of its own built from
``requirements-optimum.txt`` (the corpus venv's pins, with the ``transformers`` release
``optimum-onnx`` accepts). ``build.py``'s ``heldout10_jobs`` runs this file in that venv
(``ONNXLINT_OPTIMUM_PYTHON``, default ``.venv-optimum/bin/python``) once per export group
and takes the ONNX files it leaves in ``--out``::

    .venv-optimum/bin/python -m benchmarks.realworld.build_optimum --group t5 --out DIR

Every group saves a small random-weight ``transformers`` model (seed 0) to a local folder and
exports it with ``optimum.exporters.onnx.main_export`` (TorchScript exporter; no download);
some groups go on with ``optimum.onnxruntime``'s ``ORTOptimizer`` (O1-O3) and
``ORTQuantizer`` (dynamic int8, avx512-vnni and arm64) or merge a decoder with and without
past key values into ``decoder_model_merged.onnx`` (an If on ``use_cache_branch``) as
optimum's legacy decoder export did. ``--versions`` prints the versions used as JSON.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.realworld.pkgversions import package_versions

PACKAGES = ("torch", "transformers", "optimum", "optimum-onnx", "onnx", "onnxruntime")


def _tiny(kind: str) -> Any:
    """A small random-weight model of ``kind`` (seed 0)."""
    import torch
    import transformers as tf

    torch.manual_seed(0)
    if kind == "bert":
        cfg = tf.BertConfig(
            vocab_size=512, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=64, max_position_embeddings=64,
        )  # fmt: skip
        return tf.BertForSequenceClassification(cfg)
    if kind == "vit":
        cfg = tf.ViTConfig(
            image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2,
            num_attention_heads=4, intermediate_size=64, num_labels=10,
        )  # fmt: skip
        return tf.ViTForImageClassification(cfg)
    if kind == "gpt2":
        cfg = tf.GPT2Config(vocab_size=512, n_embd=32, n_layer=2, n_head=4, n_positions=64)
        return tf.GPT2LMHeadModel(cfg)
    if kind == "llama":
        cfg = tf.LlamaConfig(
            vocab_size=512, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
        )  # fmt: skip
        return tf.LlamaForCausalLM(cfg)
    if kind == "t5":
        cfg = tf.T5Config(
            vocab_size=256, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
            decoder_start_token_id=0,
        )  # fmt: skip
        return tf.T5ForConditionalGeneration(cfg)
    if kind == "bart":
        cfg = tf.BartConfig(
            vocab_size=256, d_model=32, encoder_layers=2, decoder_layers=2,
            encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
            decoder_ffn_dim=64, max_position_embeddings=64,
        )  # fmt: skip
        return tf.BartForConditionalGeneration(cfg)
    if kind == "whisper":
        cfg = tf.WhisperConfig(
            vocab_size=256, d_model=32, encoder_layers=2, decoder_layers=2,
            encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
            decoder_ffn_dim=64, num_mel_bins=16, max_source_positions=1500,
            max_target_positions=32, decoder_start_token_id=1, pad_token_id=0,
            bos_token_id=1, eos_token_id=2,
        )  # fmt: skip
        return tf.WhisperForConditionalGeneration(cfg)
    raise ValueError(kind)


#: group -> (model kind, optimum task, opset)
GROUPS: dict[str, tuple[str, str, int]] = {
    "bert": ("bert", "text-classification", 14),
    "vit": ("vit", "image-classification", 18),
    "gpt2": ("gpt2", "text-generation-with-past", 18),
    "llama": ("llama", "text-generation-with-past", 18),
    "t5": ("t5", "text2text-generation-with-past", 17),
    "bart": ("bart", "text2text-generation-with-past", 16),
    "whisper": ("whisper", "automatic-speech-recognition-with-past", 18),
}


def export(group: str, out: Path) -> list[str]:
    """Export ``group`` into ``out``; returns the ONNX file names written (sorted)."""
    import torch
    from optimum.exporters.onnx import main_export

    torch.set_num_threads(1)
    kind, task, opset = GROUPS[group]
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / kind
        _tiny(kind).save_pretrained(src)
        main_export(str(src), output=str(out), task=task, opset=opset, do_validation=False)
    return sorted(p.name for p in out.glob("*.onnx"))


def optimize(onnx_dir: Path, out: Path, level: str) -> None:
    """``ORTOptimizer`` at ``level`` (O1-O3) of the single ``model.onnx`` in ``onnx_dir``."""
    from optimum.onnxruntime import ORTOptimizer
    from optimum.onnxruntime.configuration import AutoOptimizationConfig

    opt = ORTOptimizer.from_pretrained(str(onnx_dir), file_names=["model.onnx"])
    opt.optimize(save_dir=str(out), optimization_config=getattr(AutoOptimizationConfig, level)())


def quantize(onnx_dir: Path, file_name: str, out: Path, arch: str) -> None:
    """``ORTQuantizer`` dynamic int8 of ``file_name`` with the ``arch`` preset."""
    from optimum.onnxruntime import ORTQuantizer
    from optimum.onnxruntime.configuration import AutoQuantizationConfig

    q = ORTQuantizer.from_pretrained(str(onnx_dir), file_name=file_name)
    cfg = getattr(AutoQuantizationConfig, arch)(is_static=False, per_channel=False)
    q.quantize(save_dir=str(out), quantization_config=cfg)


def merged_decoder(kind: str, out: Path, opset: int) -> None:
    """A decoder without past inputs (but with ``present`` outputs) and one with them, merged
    by optimum's ``merge_decoders`` into one model with an If on ``use_cache_branch``: what
    optimum's legacy decoder export wrote as ``decoder_model_merged.onnx``."""
    import torch
    from optimum.exporters.onnx import export as onnx_export
    from optimum.exporters.tasks import TasksManager
    from optimum.onnx import merge_decoders

    torch.set_num_threads(1)
    model = _tiny(kind)
    task = "text-generation"
    ctor = TasksManager.get_exporter_config_constructor(
        exporter="onnx", model=model, task=f"{task}-with-past", library_name="transformers"
    )
    with tempfile.TemporaryDirectory() as tmp:
        dec, dec_past = Path(tmp) / "decoder_model.onnx", Path(tmp) / "decoder_with_past.onnx"
        cfg = ctor(model.config, task=task, use_past=True, use_past_in_inputs=False)
        onnx_export(model, cfg, dec, opset=opset)
        cfg = ctor(model.config, task=task, use_past=True, use_past_in_inputs=True)
        onnx_export(model, cfg, dec_past, opset=opset)
        merge_decoders(dec, dec_past, save_path=str(out), strict=False)


def build(group: str, out: Path) -> None:
    """Everything of ``group`` into ``out`` (flat: ``<step>-<file>.onnx``)."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        base = group
        export(base, t / "export")
        for f in sorted((t / "export").glob("*.onnx")):
            shutil.copy(f, out / f"export-{f.name}")
        if base == "bert" or base == "vit":
            for level in ("O1", "O2", "O3"):
                optimize(t / "export", t / level, level)
                shutil.copy(t / level / "model_optimized.onnx", out / f"{level}-model.onnx")
        if base == "bert":
            for arch in ("avx512_vnni", "avx2"):
                quantize(t / "export", "model.onnx", t / arch, arch)
                shutil.copy(t / arch / "model_quantized.onnx", out / f"{arch}-model.onnx")
        if base == "gpt2":
            quantize(t / "export", "model.onnx", t / "arm64", "arm64")
            shutil.copy(t / "arm64" / "model_quantized.onnx", out / "arm64-model.onnx")
        if base in ("gpt2", "llama"):
            merged_decoder(base, out / "merged.onnx", GROUPS[base][2])
        if base == "t5":
            quantize(t / "export", "decoder_model_merged.onnx", t / "arm64", "arm64")
            q = t / "arm64" / "decoder_model_merged_quantized.onnx"
            shutil.copy(q, out / "arm64-decoder_model_merged.onnx")


def versions() -> dict[str, str]:
    return package_versions(PACKAGES)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--group", choices=sorted(GROUPS))
    ap.add_argument("--out", type=Path)
    ap.add_argument("--versions", action="store_true")
    args = ap.parse_args(argv)
    if args.versions:
        print(json.dumps(versions(), sort_keys=True))
        return 0
    if not args.group or not args.out:
        ap.error("give --group and --out")
    build(args.group, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
