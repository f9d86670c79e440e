"""``--confirm``'s diagnostics: each disagreement, silent failure and summary as a finding.

Built from an :class:`~onnxlint.confirm.diff.EpConfirmation` with the confirmation
rules' messages (``onnxlint.rules.confirmation``); nothing here runs a session.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from onnxlint.confirm.diff import PREDICTION_LEVEL, EpConfirmation, LevelDiff
from onnxlint.diagnostics import Diagnostic, Fix, Location, Severity

if TYPE_CHECKING:
    from onnxlint.context import LintContext
    from onnxlint.index import ModelIndex, NodeRef


LEVEL_TEXT = {"disabled": "optimizations disabled", "default": "default optimizations"}


def _short(text: str | None, limit: int = 300) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _ep(ep: str) -> str:
    return ep[: -len("ExecutionProvider")] if ep.endswith("ExecutionProvider") else ep


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _side(nodes: dict[str, int], parts: dict[str, int], ep: str) -> str:
    """``QNN 123, CPU 2 nodes, 1 QNN partition``."""
    n = parts.get(ep, 0)
    return f"{_counts(nodes)} nodes, {n} {_ep(ep)} partition{'s' if n != 1 else ''}"


def _counts(d: dict[str, int]) -> str:
    return ", ".join(f"{_ep(k)} {v}" for k, v in sorted(d.items())) or "none"


def diagnostics_for(ctx: LintContext, conf: EpConfirmation) -> list[Diagnostic]:
    """Every diagnostic one EP's confirmation produces."""
    from onnxlint.rules import confirmation as R

    out: list[Diagnostic] = []
    ep = conf.ep
    if conf.discarded:
        out.append(
            R.CacheEntryDiscarded.make(Location(), ep=ep, why=conf.discarded, ep_name=_ep(ep))
        )
    if conf.skipped:
        out.append(R.ConfirmSkipped.make(Location(), ep=ep, why=conf.skipped, ep_name=_ep(ep)))
        return out
    seen_mismatch: set[str] = set()
    for diff in conf.levels:
        res = diff.result
        level_text = LEVEL_TEXT.get(diff.level, diff.level)
        graph_level = PREDICTION_LEVEL.get(diff.level)
        if res.error_kind in ("ep-unavailable", "ort-missing", "runner-missing"):
            missing = res.facts.get("missing_package")
            if isinstance(missing, str) and missing:
                package = missing.replace("_", "-")  # the module's distribution name
                command = f"pip install {package}"
                out.append(
                    R.EpUnavailable.make(
                        Location(),
                        "not_installed",
                        ep=ep,
                        ep_name=_ep(ep),
                        runner=conf.runner,
                        package=package,
                        command=command,
                        fix=Fix(title=f"install {package}", command=command),
                    )
                )
                break
            out.append(
                R.EpUnavailable.make(
                    Location(),
                    ep=ep,
                    ep_name=_ep(ep),
                    runner=conf.runner,
                    error=_short(res.error),
                )
            )
            break  # the other level would say the same
        if not res.ok:
            msg_id = res.status if res.status in R.SessionFailed.messages else "error"
            out.append(
                replace(
                    R.SessionFailed.make(
                        Location(),
                        msg_id,
                        ep=ep,
                        ep_name=_ep(ep),
                        level=level_text,
                        error=_short(res.error),
                        tail=_short(" | ".join(res.log_tail[-3:]), 400),
                    ),
                    graph_level=graph_level,
                )
            )
            continue
        if res.fallback.any:
            # a wholesale CPU run the prediction foresaw is still silent, but no surprise
            foreseen = (
                res.fallback.zero_accelerator_nodes
                and diff.prediction is not None
                and ep not in diff.predicted.values()
            )
            out.append(
                replace(
                    R.SilentFallback.make(
                        Location(),
                        "foreseen" if foreseen else "default",
                        severity=Severity.WARNING if foreseen else None,
                        ep=ep,
                        ep_name=_ep(ep),
                        level=level_text,
                        what=res.fallback.message,
                    ),
                    graph_level=graph_level,
                )
            )
        out += _node_diagnostics(ctx, diff, seen_mismatch, graph_level)
        out.append(_summary(diff, conf))
    return out


def _node_ref(index: ModelIndex, path: str) -> NodeRef | None:
    return index.node_by_path(path)


def _node_diagnostics(
    ctx: LintContext, diff: LevelDiff, seen: set[str], graph_level: str | None
) -> list[Diagnostic]:
    from onnxlint.rules import confirmation as R

    pred = diff.prediction
    if pred is None:
        return []
    out: list[Diagnostic] = []
    level_text = LEVEL_TEXT.get(diff.level, diff.level)
    for path in diff.mismatches:
        node = _node_ref(pred.index, path)
        if node is None:
            continue
        # report in the user's model where the node has a counterpart there
        src = ctx.index.node_by_path(path) if diff.level == "disabled" else None
        if diff.level != "disabled" and node.name:
            src = next((n for n in ctx.index.nodes if n.name == node.name), None)
        where = (src or node).location()
        key = (src or node).path
        if key in seen:
            continue
        seen.add(key)
        predicted, actual = diff.predicted[path], diff.actual[path]
        verdict = pred.verdicts.get(path)
        since = node.since_version
        reasons = diff.reasons.get(path) or []
        if predicted == diff.ep and actual != diff.ep:
            if reasons:
                msg_id, why = "refused", "; ".join(_short(r, 200) for r in reasons[:2])
            else:
                msg_id, why = "released", ""
            d = R.PredictedClaimRefused.make(
                where,
                msg_id,
                ep=diff.ep,
                ep_name=_ep(diff.ep),
                op=node.op_type,
                revision=since if since is not None else "?",
                actual=_ep(actual),
                reason=why,
                level=level_text,
            )
        elif actual == diff.ep and predicted != diff.ep:
            d = R.UnpredictedClaim.make(
                where,
                ep=diff.ep,
                ep_name=_ep(diff.ep),
                op=node.op_type,
                revision=since if since is not None else "?",
                predicted=_ep(predicted),
                profile_reason=_short(getattr(verdict, "reason", "") or "no reason recorded", 200),
                level=level_text,
            )
        else:
            continue
        out.append(replace(d, graph_level=graph_level))
    return out


def _summary(diff: LevelDiff, conf: EpConfirmation) -> Diagnostic:
    from onnxlint.rules import confirmation as R

    res = diff.result
    info = diff.to_dict()
    extras: list[str] = []
    if diff.level == "default":
        if diff.only_predicted:
            extras.append(f"{len(diff.only_predicted)} predicted nodes absent from ORT's graph")
        if diff.inserted:
            extras.append(
                "ORT added "
                + ", ".join(f"{n} {op}" for op, n in sorted(info["inserted"].items()))
                + " (layout transform, duplicated DQ, expanded ops)"
            )
    elif diff.inserted:
        extras.append(
            "ORT inserted " + ", ".join(f"{n} {op}" for op, n in sorted(info["inserted"].items()))
        )
    create = f"{res.create_s:.2f} s" if res.create_s is not None else "n/a"
    return replace(
        R.ConfirmSummary.make(
            Location(),
            ep=diff.ep,
            ep_name=_ep(diff.ep),
            level=LEVEL_TEXT.get(diff.level, diff.level),
            predicted=_side(info["predicted_nodes"], diff.predicted_partitions, diff.ep)
            if diff.predicted
            else "nothing (no prediction for this graph)",
            actual=_side(info["actual_nodes"], info["actual_partitions"], diff.ep)
            if res.assignment
            else "nothing reported",
            agree=info["agree"],
            compared=info["compared"],
            pct=_pct(diff.agreement),
            create=create + (" (cached)" if diff.cached else ""),
            notes=("; " + "; ".join(extras)) if extras else "",
            confusion=info["confusion"],
        ),
        graph_level=PREDICTION_LEVEL.get(diff.level),
    )
