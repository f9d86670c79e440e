"""Building the immutable :class:`~onnxlint.profiles.model.Profile` from validated JSON,
and a profile as it applies under a given ORT release (its ORT-release opset limit)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from onnxlint.profiles.model import (
    BoundaryTensorFailure,
    ChainLink,
    Constraint,
    EmptyInputFailure,
    FinalizeFailure,
    IntegerTensorRule,
    LayoutConstantRewrite,
    LayoutGatherCrash,
    LayoutPassFailure,
    LayoutReshapeRewrite,
    OpRange,
    OpsetLimit,
    OpSupport,
    Partitioning,
    Profile,
    Provenance,
    QdqSelector,
    RankLosingOp,
    RefusedQdqUnit,
    RequantizedConstantFailure,
    TensorDtypes,
)


def _constraint(c: Mapping[str, Any]) -> Constraint:
    def idx(key: str) -> tuple[int, ...] | None:
        v = c.get(key)
        return tuple(v) if v is not None else None

    def vals(key: str) -> tuple[Any, ...] | None:
        v = c.get(key)
        return tuple(_freeze(x) for x in v) if v is not None else None

    return Constraint(
        kind=c["kind"],
        reason=c["reason"],
        effect=c.get("effect", "refuse"),
        provenance=c.get("provenance"),
        inputs=idx("inputs"),
        outputs=idx("outputs"),
        value=c.get("value"),
        name=c.get("name"),
        allowed=vals("allowed"),
        forbidden=vals("forbidden"),
        absent=bool(c.get("absent", False)),
        default=_freeze(c.get("default")),
        graph_nodes_at_most=c.get("graph_nodes_at_most"),
        except_ops=frozenset(c.get("except_ops", [])),
        skip_constant_inputs=bool(c.get("skip_constant_inputs", False)),
        graph_inputs_only=bool(c.get("graph_inputs_only", False)),
        only_beside_elements=bool(c.get("only_beside_elements", False)),
        when_input_empty=c.get("when_input_empty"),
        divisor=c.get("divisor"),
        axis_attribute=c.get("axis_attribute"),
        unless_inputs_known=idx("unless_inputs_known"),
    )


def _freeze(v: Any) -> Any:
    return tuple(_freeze(x) for x in v) if isinstance(v, list) else v


def _types(t: Mapping[str, list[str]] | None) -> dict[str, frozenset[str]]:
    return {k: frozenset(v) for k, v in (t or {}).items()}


def _tensor_dtypes(t: Mapping[str, Any] | None) -> TensorDtypes | None:
    if not t:
        return None
    const = t.get("allowed_constant")
    return TensorDtypes(
        allowed=frozenset(t["allowed"]),
        allowed_constant=frozenset(const) if const is not None else None,
        reason=t["reason"],
        provenance=t.get("provenance"),
        forbidden_on_graph_io=frozenset(t.get("forbidden_on_graph_io", [])),
        fails_on_graph_io=frozenset(t.get("fails_on_graph_io", [])),
    )


#: provenance id of an opset limit that belongs to the ORT release, not to the EP
ORT_MAX_OPSET = "ort-max-opset"


def _opset_limit(ep: str, domain: str, v: Mapping[str, Any]) -> OpsetLimit:
    """A profile's opset limit; the ORT release's limit follows the installed ORT for EPs
    built into it (the profile's number describes the ORT it was generated with)."""
    limit = OpsetLimit(
        min=v.get("min"),
        max=v.get("max"),
        reason=v.get("reason"),
        provenance=v.get("provenance"),
        min_reason=v.get("min_reason"),
        min_provenance=v.get("min_provenance"),
    )
    if limit.provenance != ORT_MAX_OPSET or domain != "ai.onnx":
        return limit
    from onnxlint.ort_versions import runtime_opset_limit

    found = runtime_opset_limit(ep, plugin=bool(v.get("plugin_host")))
    if found is None:
        return limit
    top, version = found
    return dataclasses.replace(
        limit, max=top, reason=f"onnxruntime {version} (installed) loads ai.onnx up to opset {top}"
    )


def for_ort(profile: Profile, ort_version: str | None) -> Profile:
    """``profile`` as it applies under ``ort_version`` (e.g. a recorded measurement's ORT):
    its ORT-release opset limit from that release's table row, the rest unchanged."""
    from onnxlint.ort_versions import table_release

    if not ort_version:
        return profile
    top = table_release(ort_version).max_opset
    opsets = {
        d: (
            dataclasses.replace(
                lim, max=top, reason=f"onnxruntime {ort_version} loads ai.onnx up to opset {top}"
            )
            if lim.provenance == ORT_MAX_OPSET and d == "ai.onnx"
            else lim
        )
        for d, lim in profile.opsets.items()
    }
    return dataclasses.replace(profile, opsets=opsets)


def build_profile(data: Mapping[str, Any], source: str = "") -> Profile:
    """Turn validated profile JSON into a :class:`Profile` (no validation here)."""
    ops: dict[tuple[str, str], OpSupport] = {}
    for i, o in enumerate(data["ops"]):
        ranges = None
        if "versions" in o:
            ranges = tuple(
                OpRange(
                    first=r["from"],
                    last=r.get("to"),
                    types=_types(r.get("types")),
                    constraints=tuple(_constraint(c) for c in r.get("constraints", [])),
                )
                for r in sorted(o["versions"], key=lambda r: r["from"])
            )
        ops[(o["domain"], o["op"])] = OpSupport(
            domain=o["domain"],
            op=o["op"],
            ranges=ranges,
            types=_types(o.get("types")),
            constraints=tuple(_constraint(c) for c in o.get("constraints", [])),
            provenance=o["provenance"],
            note=o.get("note"),
            index=i,
            graph_io_types=_types(o.get("graph_io_types")),
        )
    domains = frozenset(data.get("domains") or {d for d, _ in ops} or {"ai.onnx"})
    part = data.get("partitioning", {})
    return Profile(
        id=data["id"],
        ep=data["ep"],
        display_name=data.get("display_name", data["ep"]),
        variant=dict(data.get("variant", {})),
        aliases=tuple(data.get("aliases", [])),
        describes=dict(data["describes"]),
        provenance={
            p["id"]: Provenance(
                id=p["id"],
                kind=p["kind"],
                repository=p.get("repository"),
                file=p.get("file"),
                version=p.get("version"),
                commit=p.get("commit"),
                date=p.get("date"),
                packages=dict(p.get("packages", {})),
                tool=p.get("tool"),
                note=p.get("note"),
            )
            for p in data["provenance"]
        },
        kind=data["kind"],
        requires_static_shapes=bool(data.get("requires_static_shapes", False)),
        requires_static_control_flow=bool(data.get("requires_static_control_flow", False)),
        refusal_consequence={
            k: v for k, v in data.get("refusal_consequence", {}).items() if k != "provenance"
        },
        device_memory=data.get("device_memory", "host"),
        cpu_preferred_shape_nodes=bool(data.get("cpu_preferred_shape_nodes", False)),
        fusions=frozenset(data.get("fusions", [])),
        kernel_cpu_outputs={
            op: tuple(slots)
            for op, slots in data.get("kernel_memory", {}).get("cpu_outputs", {}).items()
        },
        kernel_cpu_inputs={
            op: tuple(slots)
            for op, slots in data.get("kernel_memory", {}).get("cpu_inputs", {}).items()
        },
        dequantized_constants=bool(data.get("dequantized_constants", False)),
        runtime_onnxruntime=data.get("runtime_onnxruntime"),
        requantized_constant_failures=tuple(
            RequantizedConstantFailure(
                op=r["op"],
                domain=r.get("domain", "ai.onnx"),
                inputs=tuple(r["inputs"]),
                quantized_types=frozenset(r["quantized_types"]),
                constant=r.get("constant", "any"),
                computed_constants=bool(r.get("computed_constants", False)),
                activation_input=bool(r.get("activation_input", False)),
                activation_producers=frozenset(r.get("activation_producers", [])),
                activation_producer_computed=bool(r.get("activation_producer_computed", False)),
                except_consumers=frozenset(r.get("except_consumers", [])),
                except_dequantized_from=frozenset(r.get("except_dequantized_from", [])),
                except_shared_dequantize=bool(r.get("except_shared_dequantize", False)),
                except_channel_broadcast=bool(r.get("except_channel_broadcast", False)),
                constant_operand_axis=r.get("constant_operand_axis"),
                except_output_types=frozenset(r.get("except_output_types", [])),
                reason=r["reason"],
                provenance=r.get("provenance"),
            )
            for r in data.get("requantized_constant_failures", [])
        ),
        layout=data.get("layout", "NCHW"),
        opsets={d: _opset_limit(data["ep"], d, v) for d, v in data.get("opsets", {}).items()},
        unlisted_ops=data.get("unlisted_ops", "refuse"),
        domains=domains,
        partitioning=Partitioning(
            grouping=part.get("grouping", "greedy"),
            cluster_breakers=frozenset(part.get("cluster_breakers", [])),
            min_partition_nodes=part.get("min_partition_nodes", 1),
            drop_single_op_partitions=tuple(part.get("drop_single_op_partitions", [])),
            drop_if_output_used_outside=tuple(part.get("drop_if_output_used_outside", [])),
            constant_only_partition_fails=bool(part.get("constant_only_partition_fails", False)),
            unknown_rank_input_fails=bool(part.get("unknown_rank_input_fails", False)),
            rank_losing_ops=tuple(
                RankLosingOp(
                    op=r["op"],
                    domain=r.get("domain", "ai.onnx"),
                    since_version=int(r["since_version"]),
                    reason=r["reason"],
                    provenance=r.get("provenance"),
                )
                for r in part.get("rank_losing_ops", [])
            ),
            cyclic_partition_fails=bool(part.get("cyclic_partition_fails", False)),
            claimed_body_partition_fails=tuple(part.get("claimed_body_partition_fails", [])),
            bodies_compiled_with_node=tuple(part.get("bodies_compiled_with_node", [])),
            keeps_last_small_cluster=bool(part.get("keeps_last_small_cluster", False)),
            refused_qdq_units=tuple(
                RefusedQdqUnit(
                    op=u["op"],
                    input_types={int(k): frozenset(v) for k, v in u["input_types"].items()},
                    reason=u["reason"],
                    provenance=u.get("provenance"),
                    accepted_types=tuple(
                        {int(k): frozenset(v) for k, v in row.items()}
                        for row in u.get("accepted_types", [])
                    ),
                    per_axis_scale=bool(u.get("per_axis_scale", False)),
                    per_axis_zero_points=_zero_point_rule(u.get("per_axis_zero_points")),
                )
                for u in part.get("refused_qdq_units", [])
            ),
            late_pass_takes_assigned=bool(part.get("late_pass_takes_assigned", False)),
            refuses_captured_initializers=tuple(
                (r["op"], r["reason"]) for r in part.get("refuses_captured_initializers", [])
            ),
            refuses_unsupported_bodies=tuple(
                (r["op"], r["reason"]) for r in part.get("refuses_unsupported_bodies", [])
            ),
            qdq_selectors=tuple(
                QdqSelector(
                    ops=tuple(u["ops"]),
                    dq_inputs=str(u["dq_inputs"]),
                    empty_q=bool(u.get("empty_q", False)),
                    check_q=bool(u.get("check_q", True)),
                    same_types=tuple(tuple(group) for group in u.get("same_types", [])),
                    int32_bias=bool(u.get("int32_bias", False)),
                    same_scale=bool(u.get("same_scale", False)),
                    clip=bool(u.get("clip", True)),
                    data_dq=bool(u.get("data_dq", False)),
                    needs_q=bool(u.get("needs_q", False)),
                    since_versions=tuple(int(v) for v in u.get("since_versions", [])),
                )
                for u in part.get("qdq_selectors", [])
            ),
            layout_pass_failures=tuple(
                LayoutPassFailure(
                    op=u["op"],
                    condition=u["condition"],
                    reason=u["reason"],
                    slot=u.get("slot"),
                    provenance=u.get("provenance"),
                    unit_types=tuple(
                        {int(k): frozenset(v) for k, v in row.items()}
                        for row in u.get("unit_types", [])
                    ),
                )
                for u in part.get("layout_pass_failures", [])
            ),
            finalize_failures=tuple(
                FinalizeFailure(
                    chain=tuple(
                        ChainLink(
                            op=c["op"],
                            constant=c.get("constant"),
                            fed_at=c.get("fed_at"),
                            axis_outside_slice=bool(c.get("axis_outside_slice", False)),
                            squeezes_dynamic_dims=bool(c.get("squeezes_dynamic_dims", False)),
                            per_axis_scale=bool(c.get("per_axis_scale", False)),
                            coords_unresolved=bool(c.get("coords_unresolved", False)),
                        )
                        for c in u["chain"]
                    ),
                    reason=u["reason"],
                    provenance=u.get("provenance"),
                )
                for u in part.get("finalize_failures", [])
            ),
            grouping_ignores_captured_inputs=bool(
                part.get("grouping_ignores_captured_inputs", False)
            ),
            layout_reshape_rewrite=_layout_reshape_rewrite(part.get("layout_reshape_rewrite")),
            layout_constant_rewrite=_layout_constant_rewrite(part.get("layout_constant_rewrite")),
            layout_gather_crash=_layout_gather_crash(part.get("layout_gather_crash")),
            integer_tensor_registration=_integer_tensor_rule(
                part.get("integer_tensor_registration")
            ),
            empty_input_failure=_empty_input_failure(part.get("empty_input_failure")),
            boundary_tensor_failures=tuple(
                BoundaryTensorFailure(
                    dtype=u["dtype"],
                    rank=int(u["rank"]) if u.get("rank") is not None else None,
                    direction=u["direction"],
                    reason=u["reason"],
                    provenance=u.get("provenance"),
                    op=u.get("op"),
                )
                for u in part.get("boundary_tensor_failures", [])
            ),
            notes=tuple(part.get("notes", [])),
        ),
        tensor_dtypes=_tensor_dtypes(data.get("tensor_dtypes")),
        global_constraints=tuple(_constraint(c) for c in data.get("global_constraints", [])),
        notes=tuple(data.get("notes", [])),
        ops=ops,
        source=source,
    )


def _zero_point_rule(spec: Mapping[str, Any] | None) -> tuple[int, Mapping[str, int]] | None:
    """A refused QDQ unit's ``per_axis_zero_points``: the slot and the zero point per type."""
    if spec is None:
        return None
    return int(spec["slot"]), {str(k): int(v) for k, v in spec["types"].items()}


def _layout_reshape_rewrite(spec: Mapping[str, Any] | None) -> LayoutReshapeRewrite | None:
    if spec is None:
        return None
    return LayoutReshapeRewrite(
        extra_layout_ops=frozenset(spec.get("extra_layout_ops", [])),
        orphan_reason=str(spec.get("orphan_reason", "")),
        provenance=spec.get("provenance"),
    )


def _layout_constant_rewrite(spec: Mapping[str, Any] | None) -> LayoutConstantRewrite | None:
    if spec is None:
        return None
    return LayoutConstantRewrite(reason=str(spec["reason"]), provenance=spec.get("provenance"))


def _layout_gather_crash(spec: Mapping[str, Any] | None) -> LayoutGatherCrash | None:
    if spec is None:
        return None
    return LayoutGatherCrash(reason=str(spec["reason"]), provenance=spec.get("provenance"))


def _integer_tensor_rule(spec: Mapping[str, Any] | None) -> IntegerTensorRule | None:
    if spec is None:
        return None
    return IntegerTensorRule(
        quantizing_ops=frozenset(spec["quantizing_ops"]),
        plain_ops=frozenset(spec["plain_ops"]),
        carries_quantization=frozenset(spec.get("carries_quantization", [])),
        refused_on_quantized_input=frozenset(spec.get("refused_on_quantized_input", [])),
        dequantize_reason=str(spec["dequantize_reason"]),
        quantized_input_reason=str(spec["quantized_input_reason"]),
        provenance=spec.get("provenance"),
        weight_ops={op: tuple(slots) for op, slots in spec.get("weight_ops", {}).items()},
        weight_reason=str(spec.get("weight_reason", "")),
        unit_reason=str(spec.get("unit_reason", "")),
        unit_provenance=spec.get("unit_provenance"),
        weight_provenance=spec.get("weight_provenance"),
        layout_weight_ops={
            op: tuple(slots) for op, slots in spec.get("layout_weight_ops", {}).items()
        },
        layout_weight_reason=str(spec.get("layout_weight_reason", "")),
        layout_weight_provenance=spec.get("layout_weight_provenance"),
    )


def _empty_input_failure(spec: Mapping[str, Any] | None) -> EmptyInputFailure | None:
    if spec is None:
        return None
    return EmptyInputFailure(
        reason=str(spec["reason"]),
        except_ops=frozenset(spec.get("except_ops", [])),
        first_input_reason=spec.get("first_input_reason"),
        provenance=spec.get("provenance"),
    )
