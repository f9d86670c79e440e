"""Helpers for the compiled-model tests: EPContext models built with onnx.helper."""

from __future__ import annotations

from pathlib import Path

import onnx
import onnx.helper as oh

from onnxlint.config import Config
from onnxlint.engine import lint
from onnxlint.report import Report

TP = onnx.TensorProto
#: an EP name onnxlint cannot create sessions for, so no worker ever starts
FAKE_EP = "ExampleExecutionProvider"


def tiny_conv(name: str = "conv0") -> onnx.ModelProto:
    graph = oh.make_graph(
        [
            oh.make_node("Conv", ["x", "w"], ["c"], name=name),
            oh.make_node("Relu", ["c"], ["y"], name="relu0"),
        ],
        "tiny",
        [oh.make_tensor_value_info("x", TP.FLOAT, [1, 3, 8, 8])],
        [oh.make_tensor_value_info("y", TP.FLOAT, [1, 4, 6, 6])],
        [oh.make_tensor("w", TP.FLOAT, [4, 3, 3, 3], [0.05 * (i % 7) for i in range(108)])],
    )
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def epcontext_model(
    caches: list[tuple[int, bytes | str | None, int | None]],
    *,
    source: str | None = FAKE_EP,
    compat: dict[str, str] | None = None,
    metadata: dict[str, str] | None = None,
    extra_attrs: dict[str, object] | None = None,
) -> onnx.ModelProto:
    """A chain of EPContext nodes: one per ``(embed_mode, ep_cache_context, main_context)``."""
    nodes = []
    prev = "x"
    for i, (embed, cache, main) in enumerate(caches):
        out = "y" if i == len(caches) - 1 else f"t{i}"
        attrs: dict[str, object] = {"embed_mode": embed, "partition_name": f"p{i}"}
        if cache is not None:
            attrs["ep_cache_context"] = cache
        if source is not None:
            attrs["source"] = source
        if main is not None:
            attrs["main_context"] = main
        attrs.update(extra_attrs or {})
        nodes.append(
            oh.make_node(
                "EPContext", [prev], [out], name=f"ctx{i}", domain="com.microsoft", **attrs
            )
        )
        prev = out
    graph = oh.make_graph(
        nodes,
        "compiled",
        [oh.make_tensor_value_info("x", TP.FLOAT, [1, 4])],
        [oh.make_tensor_value_info("y", TP.FLOAT, [1, 4])],
    )
    model = oh.make_model(
        graph, opset_imports=[oh.make_opsetid("", 17), oh.make_opsetid("com.microsoft", 1)]
    )
    model.ir_version = 8
    props = dict(metadata or {})
    for ep, info in (compat or {}).items():
        props[f"ep_compatibility_info.{ep}"] = info
    for k, v in props.items():
        model.metadata_props.add(key=k, value=v)
    return model


def lint_file(path: Path, **confirm: object) -> Report:
    """Lint a model file with no EP, the compiled-model rules only."""
    config = Config(select=("OL7",), confirm=dict(confirm))
    return lint(path, config=config, path_label=str(path))


def codes(report: Report) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for d in report.diagnostics:
        out.setdefault(d.code, []).append(d.message_id)
    return out
