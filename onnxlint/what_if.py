"""What-if predictions: the predicted outcome of a cause's remedy, next to the cause.

For an EP that needs static shapes and refuses nodes because of dynamic input dims, the
remedy is ``onnxlint fix-shapes`` with those dims pinned. The model is fixed the way that
command fixes it (:func:`onnxlint.fixes.shapes.fix_shapes`, size inputs folded), linted
again for that EP alone on the exported graph (no ORT worker, no session), and the
prediction before and after is recorded as a :class:`~onnxlint.causes.WhatIf` on the
report; what still keeps nodes off the EP is listed by cause.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import onnx

from onnxlint.causes import WhatIf, dynamic_dims_causes, group
from onnxlint.config import Config
from onnxlint.context import SharedModel
from onnxlint.diagnostics import Diagnostic
from onnxlint.index import input_dim_params
from onnxlint.loader import load
from onnxlint.report import Report
from onnxlint.runtime.identity import cache_enabled

#: a dim the fix command cannot name a value for gets this one in the prediction (any fixed
#: size gives the same verdicts: the EPs' shape rules ask whether a dim is static, not its size)
PREDICTION_SIZE = 128
_SEQUENCE = re.compile(r"seq|len|token|time|frame|step", re.I)


#: a what-if copies the model and lints it again: above these it is skipped (and says so)
MAX_NODES = 50_000
MAX_WEIGHT_BYTES = 512 * 2**20


def too_large(model: onnx.ModelProto) -> str | None:
    """Why a what-if of ``model`` would cost too much, or None."""
    if len(model.graph.node) > MAX_NODES:
        return f"more than {MAX_NODES} nodes"
    weights = sum(len(t.raw_data) for t in model.graph.initializer)
    if weights > MAX_WEIGHT_BYTES:
        return f"more than {MAX_WEIGHT_BYTES // 2**20} MiB of weights"
    return None


def pinned_dims(dims: Sequence[str], config: Config) -> dict[str, int]:
    """The values a what-if pins: the configured or suggested ones, else a fixed size."""
    from onnxlint.fixes.shapes import suggested_value

    out: dict[str, int] = {}
    for name in dims:
        value = suggested_value(name, config.assume_dims)
        out[name] = value if isinstance(value, int) else PREDICTION_SIZE
    return out


def _plan_numbers(report: Report, ep_name: str) -> tuple[int, int, int] | None:
    """(nodes on the EP, nodes, partitions of the EP) on the exported graph of ``report``."""
    for plan in report.partitions:
        if getattr(plan, "level", None) == "exported":
            return plan.nodes_on(ep_name), len(plan.node_ep), len(plan.partitions_on(ep_name))
    return None


def what_ifs(
    model: onnx.ModelProto,
    diagnostics: Sequence[Diagnostic],
    report: Report,
    config: Config,
    profiles: Sequence[Any],
    lint: Callable[..., Report],
) -> list[WhatIf]:
    """One what-if per EP whose findings have dynamic dims as their cause, for the causes
    that are reported as such (``causes.group``: the what-if is shown with them). With
    several EPs, a later one whose nodes an earlier EP took has only its graph input's
    finding: no cause, no what-if (it cost most of an every-EP lint, and nobody saw it).

    ``lint`` is the engine's (handed in: this module sits beside the engine, below it).
    """
    from onnxlint.fixes.shapes import FixShapesError, fix_command, fix_shapes

    by_ep = dynamic_dims_causes(diagnostics)
    out: list[WhatIf] = []
    big = too_large(model) if by_ep else None
    # only a graph input's named dim can be pinned; the others (a NonZero count, a dim
    # computed inside the graph) follow from those or stay dynamic whatever is pinned
    pinnable = input_dim_params(model)
    # ORT's symbolic inference of a pinned copy is cached under the linted model's hash
    origin = report.content_hash if cache_enabled(config) else ""
    # EPs refused for the same dims get the same pinned model: it is made once (the shape
    # fix runs ORT's symbolic inference, seconds on a 10k-node model), and the inner lints
    # only read it (tests/test_model_untouched.py)
    fixed_by_pins: dict[tuple[tuple[str, int], ...], SharedModel | FixShapesError] = {}
    for prof in profiles:
        dims = (by_ep.get(prof.id) or by_ep.get(prof.ep) or set()) & pinnable
        before = _plan_numbers(report, prof.ep)
        if not dims or before is None:
            continue
        pins = pinned_dims(sorted(dims), config)
        command = fix_command(report.path, [], None)
        command += "".join(f" --dim {k}={v}" for k, v in pins.items()) + f" --ep {prof.id}"
        w = WhatIf(ep=prof.id, dims=pins, command=command, before=before, after=before)
        if big:
            w.error = f"the model has {big}; run the command and lint the result"
            out.append(w)
            continue
        try:
            key = tuple(sorted(pins.items()))
            if key not in fixed_by_pins:
                try:
                    fixed = fix_shapes(model, pins, origin=origin).model
                    # read and checked once; the inner lints of every EP pinned the same
                    # way share it and its model-only analyses (shape inference, constness)
                    loaded = load(fixed, config.limits, hash_proto=False)
                    fixed_by_pins[key] = SharedModel(loaded)
                except FixShapesError as exc:
                    fixed_by_pins[key] = exc
            made = fixed_by_pins[key]
            if isinstance(made, FixShapesError):
                raise made
            inner_config = config.merged(
                select=("ep-support", "partition", "shapes"),
                ignore=(),
                assume_dims={},
                partition={**config.partition, "graph-level": "exported"},
                confirm={"mode": "off"},
                per_file_ignores={},
                per_node_ignores={},
            )
            after = lint(
                made.loaded, eps=[prof.id], config=inner_config, what_if=False, shared=made
            )
        except (FixShapesError, ValueError) as exc:
            w.error = str(exc)
            out.append(w)
            continue
        w.after = _plan_numbers(after, prof.ep) or before
        w.remaining = [
            (g.title(), len(g.nodes))
            for g in group(after, min_members=1)
            if g.cause.kind != "dynamic-dims" and g.nodes
        ]
        out.append(w)
    return out
