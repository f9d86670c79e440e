"""Held-out batch 13: diffusion models as NPU users deploy them (run by ``build.py``).

``diffusers`` would add packages to the corpus venv (``requests``, ``importlib_metadata``
and others), so it lives in a venv of its own built from ``requirements-diffusers.txt``
(torch 2.13.0+cpu first, then the corpus venv's ONNX pins). ``build.py``'s
``heldout13_jobs`` runs this file in that venv (``ONNXLINT_DIFFUSERS_PYTHON``, default
``.venv-diffusers/bin/python``) once per float model and quantizes some of them itself::

    .venv-diffusers/bin/python -m benchmarks.realworld.build_diffusers --model NAME --out FILE

Every model is a ``diffusers`` class built from a small config with random weights (seed 0),
``HF_HUB_OFFLINE=1`` and every socket connection made to raise: nothing is fetched. Stable
Diffusion's pieces as its ONNX pipelines split them: the UNet (timestep embedding,
cross-attention, GroupNorm, nearest upsampling), the VAE decoder and encoder, the tiny
autoencoder (TAESD), a ControlNet, and DiT and SD3 (MM-DiT) transformers.
``--versions`` prints the versions used as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

PACKAGES = ("torch", "diffusers", "onnx", "onnxscript", "onnxruntime")

#: name -> (module, exporter, opset, dims, float16); dims: "fixed", "batch" (batch and text
#: length) or "spatial" (batch, height and width)
DIFFUSERS_HELDOUT13: dict[str, tuple[str, str, int, str, bool]] = {
    "sd-unet-op17-fixed": ("unet", "torchscript", 17, "fixed", False),
    "sd-unet-op14-dynamic": ("unet", "torchscript", 14, "spatial", False),
    "sd-unet-dynamo-op18-fixed": ("unet", "dynamo", 18, "fixed", False),
    "sd-unet-dynamo-op18-dynamic": ("unet", "dynamo", 18, "batch", False),
    "sd-unet-fp16-op17-fixed": ("unet", "torchscript", 17, "fixed", True),
    "sd-vae-decoder-op17-fixed": ("vae_decoder", "torchscript", 17, "fixed", False),
    "sd-vae-decoder-op17-dynamic": ("vae_decoder", "torchscript", 17, "spatial", False),
    "sd-vae-decoder-dynamo-op18-fixed": ("vae_decoder", "dynamo", 18, "fixed", False),
    "sd-vae-decoder-fp16-op17-fixed": ("vae_decoder", "torchscript", 17, "fixed", True),
    "sd-vae-encoder-op17-fixed": ("vae_encoder", "torchscript", 17, "fixed", False),
    "sd-vae-encoder-dynamo-op18-fixed": ("vae_encoder", "dynamo", 18, "fixed", False),
    "sd-taesd-decoder-op17-fixed": ("taesd_decoder", "torchscript", 17, "fixed", False),
    "sd-controlnet-op17-fixed": ("controlnet", "torchscript", 17, "fixed", False),
    "sd-dit-op17-fixed": ("dit", "torchscript", 17, "fixed", False),
    "sd-sd3-transformer-dynamo-op18-fixed": ("sd3", "dynamo", 18, "fixed", False),
}

LATENT = 16  # latent side (the VAE's image side is 2x: two decoder levels)
TEXT_LEN = 8
TEXT_DIM = 32


def _module(kind: str) -> Any:
    import diffusers as d
    import torch

    torch.manual_seed(0)
    unet_kw: dict[str, Any] = dict(
        block_out_channels=(32, 64), layers_per_block=1, cross_attention_dim=TEXT_DIM,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), attention_head_dim=8,
        norm_num_groups=32,
    )  # fmt: skip
    vae_kw: dict[str, Any] = dict(
        down_block_types=("DownEncoderBlock2D",) * 2, up_block_types=("UpDecoderBlock2D",) * 2,
        block_out_channels=(32, 64), latent_channels=4, layers_per_block=1, norm_num_groups=32,
    )  # fmt: skip
    if kind == "unet":
        m = d.UNet2DConditionModel(sample_size=LATENT, in_channels=4, out_channels=4,
                                   up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), **unet_kw)  # fmt: skip

        class Unet(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.m = m

            def forward(self, sample: Any, timestep: Any, encoder_hidden_states: Any) -> Any:
                return self.m(sample, timestep, encoder_hidden_states, return_dict=False)[0]

        return Unet().eval()
    if kind == "controlnet":
        cn = d.ControlNetModel(in_channels=4, conditioning_embedding_out_channels=(16, 32),
                               **unet_kw)  # fmt: skip

        class Control(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.m = cn

            def forward(self, sample: Any, timestep: Any, encoder_hidden_states: Any,
                        controlnet_cond: Any) -> Any:  # fmt: skip
                down, mid = self.m(sample, timestep, encoder_hidden_states, controlnet_cond,
                                   return_dict=False)  # fmt: skip
                return (*down, mid)

        return Control().eval()
    if kind in ("vae_decoder", "vae_encoder"):
        vae = d.AutoencoderKL(in_channels=3, out_channels=3, **vae_kw)

        class Part(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.m = vae

            def forward(self, x: Any) -> Any:
                if kind == "vae_decoder":
                    return self.m.decode(x, return_dict=False)[0]
                return self.m.encode(x, return_dict=False)[0].mean

        return Part().eval()
    if kind == "taesd_decoder":
        tiny = d.AutoencoderTiny(
            encoder_block_out_channels=(32, 32), decoder_block_out_channels=(32, 32),
            num_encoder_blocks=(1, 1), num_decoder_blocks=(1, 1), latent_channels=4,
            upsampling_scaling_factor=2,
        )  # fmt: skip

        class Dec(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.m = tiny

            def forward(self, x: Any) -> Any:
                return self.m.decode(x, return_dict=False)[0]

        return Dec().eval()
    if kind == "dit":
        dit = d.DiTTransformer2DModel(num_attention_heads=2, attention_head_dim=16, in_channels=4,
                                      out_channels=8, num_layers=2, sample_size=LATENT,
                                      patch_size=2, num_embeds_ada_norm=10)  # fmt: skip

        class DiT(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.m = dit

            def forward(self, sample: Any, timestep: Any, class_labels: Any) -> Any:
                return self.m(sample, timestep, class_labels, return_dict=False)[0]

        return DiT().eval()
    if kind == "sd3":
        sd3 = d.SD3Transformer2DModel(
            sample_size=LATENT, patch_size=2, in_channels=4, num_layers=2, attention_head_dim=16,
            num_attention_heads=2, joint_attention_dim=TEXT_DIM, caption_projection_dim=32,
            pooled_projection_dim=TEXT_DIM, out_channels=4, pos_embed_max_size=32,
        )  # fmt: skip

        class SD3(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.m = sd3

            def forward(self, hidden_states: Any, encoder_hidden_states: Any,
                        pooled_projections: Any, timestep: Any) -> Any:  # fmt: skip
                return self.m(hidden_states=hidden_states, encoder_hidden_states=encoder_hidden_states,
                              pooled_projections=pooled_projections, timestep=timestep,
                              return_dict=False)[0]  # fmt: skip

        return SD3().eval()
    raise ValueError(kind)


def _inputs(kind: str, dims: str) -> tuple[list[str], tuple[Any, ...], dict[str, dict[int, str]]]:
    """Input names, example tensors (seed 1) and the dynamic axes for ``dims``."""
    import torch

    torch.manual_seed(1)
    lat = torch.rand(1, 4, LATENT, LATENT)
    text = torch.rand(1, TEXT_LEN, TEXT_DIM)
    step = torch.tensor([10.0])
    spatial = {0: "batch", 2: "height", 3: "width"}
    if kind in ("unet", "controlnet"):
        names = ["sample", "timestep", "encoder_hidden_states"]
        args: tuple[Any, ...] = (lat, step, text)
        axes = {"sample": {0: "batch"}, "timestep": {0: "batch"},
                "encoder_hidden_states": {0: "batch", 1: "sequence"}}  # fmt: skip
        if dims == "spatial":
            axes["sample"] = spatial
        if kind == "controlnet":
            names.append("controlnet_cond")
            args = (*args, torch.rand(1, 3, 2 * LATENT, 2 * LATENT))
        return names, args, axes
    if kind in ("vae_decoder", "taesd_decoder"):
        return ["latent_sample"], (lat,), {"latent_sample": spatial}
    if kind == "vae_encoder":
        return ["sample"], (torch.rand(1, 3, 2 * LATENT, 2 * LATENT),), {"sample": spatial}
    if kind == "dit":
        return ["sample", "timestep", "class_labels"], (lat, step, torch.tensor([3])), {}
    if kind == "sd3":
        names = ["hidden_states", "encoder_hidden_states", "pooled_projections", "timestep"]
        return names, (lat, text, torch.rand(1, TEXT_DIM), step), {}
    raise ValueError(kind)


class _Star:
    """``module`` called as ``forward(*args)`` (a torch Module made on first use)."""

    def __new__(cls, module: Any) -> Any:
        import torch

        class Star(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.m = module

            def forward(self, *args: Any) -> Any:
                return self.m(*args)

        return Star().eval()


def export(name: str) -> bytes:
    """The ONNX file of ``name`` (``build.py``'s exporter settings, offline)."""
    import torch

    from benchmarks.realworld.build import _no_network, export_torch

    os.environ["HF_HUB_OFFLINE"] = "1"
    torch.set_num_threads(1)
    kind, exporter, opset, dims, half = DIFFUSERS_HELDOUT13[name]
    with _no_network():
        module = _module(kind)
        names, args, axes = _inputs(kind, dims)
        if half:
            module = module.half()
            args = tuple(a.half() if a.is_floating_point() else a for a in args)
        if exporter == "dynamo":  # build.py's dynamic_shapes are for a ``forward(*args)``
            module = _Star(module)
        return export_torch(module, args, names, axes if dims != "fixed" else None, exporter,
                            opset)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    from benchmarks.realworld.build import versions

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=sorted(DIFFUSERS_HELDOUT13))
    ap.add_argument("--out", type=Path)
    ap.add_argument("--versions", action="store_true", help="print the versions used (JSON)")
    args = ap.parse_args(argv)
    if args.versions:
        print(json.dumps(versions(PACKAGES), sort_keys=True))
    elif not args.model or not args.out:
        ap.error("give --model and --out")
    else:
        args.out.write_bytes(export(args.model))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
