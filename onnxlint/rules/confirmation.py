"""Confirmation rules (OL9xx): what real ONNX Runtime sessions said about the prediction.

These rules are emitted by ``--confirm`` (:mod:`onnxlint.confirm`), not by the
graph walk: each finding comes from a real session in an isolated worker. They
are rules all the same, so ``onnxlint rule OL901`` documents them and
``--ignore OL9`` silences them.
"""

from __future__ import annotations

from onnxlint.diagnostics import Category, Severity
from onnxlint.rule import Rule, register


class ConfirmRule(Rule):
    category = Category.CONFIRMATION
    emitted_by = "confirm"


@register
class PredictedClaimRefused(ConfirmRule):
    """The prediction put a node on the EP, but the real EP left it to another EP (usually CPU).

    What it does:
        Compares the predicted EP of each node with where a real session put it. When the
        EP's verbose log gives a reason for refusing the node (QNN: ``Validation FAILED ...
        REASON : ...``), the profile claimed too much and the message carries that reason;
        without a reason the EP's own check passed and the partitioner released the node
        (a grouping rule the prediction does not model).

    Why it matters:
        A profile gap means the static lint promised a placement the device will not give:
        the node runs on CPU, with copies around it. The message is a ready-made bug report
        against the profile.

    Fix:
        Treat the node as unsupported (see the reason); report the profile gap with the
        message, the ORT and EP versions, and the node's op, revision and types.

    Execution providers:
        Every EP that can be confirmed here: CPU, QNN (HTP simulator), OpenVINO (CPU) and any
        EP installed in a configured runner.
    """

    code = "OL901"
    name = "predicted-claim-refused"
    severity = Severity.WARNING
    messages = {
        "refused": "profile says {ep_name} supports {op} (revision {revision}); the real EP "
        "refused it ({level}) and it ran on {actual}: REASON {reason}",
        "released": "profile says {ep_name} supports {op} (revision {revision}); the real EP's "
        "check passed but ORT ran it on {actual} ({level}): the partitioner released it",
    }


@register
class UnpredictedClaim(ConfirmRule):
    """The real EP claimed a node the prediction left to another EP.

    What it does:
        Reports each node a real session put on the EP although the profile predicted it
        would not, with the profile's reason for refusing it.

    Why it matters:
        The profile is too conservative: the lint warns about fallbacks that do not happen,
        and users learn to ignore it. Often the EP gained support in a newer release.

    Fix:
        Report the profile gap with the message and the ORT/EP versions; meanwhile trust the
        confirmed placement.

    Execution providers:
        Every EP that can be confirmed here.
    """

    code = "OL902"
    name = "unpredicted-claim"
    severity = Severity.INFO
    messages = {
        "default": "profile says {ep_name} refuses {op} (revision {revision}: {profile_reason}), "
        "but the real EP claimed it ({level}); the prediction said {predicted}",
    }


@register
class SessionFailed(ConfirmRule):
    """Session creation on the EP failed, crashed, hung or ran out of memory.

    What it does:
        Reports a real session that could not be created, with ORT's error, or how the
        isolated worker died (signal, timeout, memory cap) and the tail of the EP's log.

    Why it matters:
        A claimed-then-failing graph fails at deployment, often with no fallback (OpenVINO),
        or takes the process down (a QNN finalize crash). The worker isolates it here.

    Fix:
        Read the error; the usual causes are dynamic shapes inside a claimed partition,
        partitions that depend only on constants, or an op the EP's compiler rejects.

    Execution providers:
        Every EP that can be confirmed here.
    """

    code = "OL903"
    name = "session-failed"
    severity = Severity.ERROR
    messages = {
        "error": "{ep_name} session creation failed ({level}): {error}",
        "crash": "{ep_name} crashed the worker while creating the session ({level}): {error}; "
        "log: {tail}",
        "timeout": "{ep_name} session creation did not finish ({level}): {error}",
        "oom": "{ep_name} session creation ran out of memory ({level}): {error}",
        "runner-error": "{ep_name} worker could not run ({level}): {error}",
    }


@register
class SilentFallback(ConfirmRule):
    """The session was created, but the EP silently did not take part.

    What it does:
        Detects the silent cases: ORT falling back to CPU after the EP failed
        ("Falling back to ['CPUExecutionProvider']"), an EP that is missing from the
        session's providers (an option or the EP ignored), and a session (or compile) in
        which the EP was assigned no node at all.

    Why it matters:
        Nothing fails, nothing is logged at the default level: the model simply runs on CPU,
        and the first sign is a latency regression in production.

    Fix:
        Check the EP options (a misspelled option can disable it) and the verbose log; see
        the node diagnostics for the reasons of each refusal.

    Execution providers:
        Every accelerator EP.
    """

    code = "OL904"
    name = "silent-fallback"
    severity = Severity.ERROR
    messages = {
        "default": "{ep_name} ({level}): {what}",
        "foreseen": "{ep_name} ({level}): {what}, as the prediction said (see OL5xx/OL6xx)",
    }


@register
class ConfirmSummary(ConfirmRule):
    """Prediction against the real session for one EP and graph level.

    What it does:
        Prints, per EP and session level (optimizations disabled: node for node; default
        optimizations: what really runs), the predicted and the actual node counts and
        partitions per EP, how many nodes agree, and the session-creation time.
        ``args.confusion`` holds the confusion counts (predicted -> actual).

    Why it matters:
        The agreement says how far the static prediction can be trusted for this model; the
        creation time is the compile cost users pay at every start without an EPContext cache.

    Fix:
        Nothing to fix; read the node diagnostics (OL901, OL902) for the disagreements.

    Execution providers:
        Every EP that can be confirmed here.
    """

    code = "OL905"
    name = "confirm-summary"
    severity = Severity.INFO
    messages = {
        "default": "{ep_name}, {level}: predicted {predicted}; actual {actual}; "
        "{agree}/{compared} nodes agree ({pct}); session created in {create}{notes}",
    }


@register
class EpUnavailable(ConfirmRule):
    """The EP cannot be confirmed: its runner interpreter lacks it or cannot start.

    What it does:
        Reports an EP for which no real session could be attempted, with the interpreter
        that was tried.

    Why it matters:
        The prediction stays unconfirmed; EP wheels conflict, so each EP may need its own
        Python environment.

    Fix:
        Install the EP (``onnxruntime-qnn``; for OpenVINO run ``.ci/setup-openvino.sh``), or
        point ``[tool.onnxlint.runners]`` at an interpreter that has it, e.g.
        ``openvino = ".venv-openvino/bin/python"`` (relative to the config file).

    Execution providers:
        Every EP.
    """

    code = "OL906"
    name = "ep-unavailable"
    severity = Severity.WARNING
    messages = {
        "default": "{ep_name} cannot be confirmed with {runner}: {error}; configure "
        "[tool.onnxlint.runners] to point at a Python that has it",
        "not_installed": "{ep_name} cannot be confirmed: its package {package} is not installed "
        "under {runner}; install it ({command}) or configure [tool.onnxlint.runners] to point "
        "at a Python that has it",
    }


@register
class CacheEntryDiscarded(ConfirmRule):
    """A cached confirmation result was corrupt or truncated and was thrown away.

    What it does:
        Reports a cache entry that failed its checks (JSON, schema, key, checksum); the
        entry is deleted and the sessions are created again.

    Why it matters:
        A corrupt cache must never be trusted; a recurring message points at a disk or a
        concurrent writer problem.

    Fix:
        Nothing; use ``--no-cache`` to bypass the cache, or delete the cache folder.

    Execution providers:
        Every EP.
    """

    code = "OL907"
    name = "cache-entry-discarded"
    severity = Severity.HINT
    messages = {"default": "{ep_name}: discarded a corrupt confirmation cache entry ({why})"}


@register
class ConfirmSkipped(ConfirmRule):
    """No real session was created for an EP, and why.

    What it does:
        Reports when ``--confirm`` did not create sessions: the model points at files
        onnxlint refuses to let ORT read (external data or an EPContext sidecar outside the
        model folder), or the cache-only mode (language server) had no cached result.

    Why it matters:
        The prediction stays unconfirmed for this EP.

    Fix:
        Fix the load findings first, or run ``onnxlint MODEL --ep EP --confirm`` once so
        the cache holds the result.

    Execution providers:
        Every EP.
    """

    code = "OL908"
    name = "confirm-skipped"
    severity = Severity.INFO
    messages = {"default": "{ep_name}: not confirmed: {why}"}
