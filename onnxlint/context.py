"""The per-model lint context: the model, its index, the configuration, the EPs,
and the shared analyses, each computed lazily and at most once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeVar

import onnx

from onnxlint.config import Config
from onnxlint.diagnostics import Diagnostic
from onnxlint.index import ModelIndex
from onnxlint.modelfile.read import LoadedModel

if TYPE_CHECKING:
    from onnxlint.walk import NodeEdit, RuleFindings

T = TypeVar("T")


@dataclass(eq=False)
class SharedModel:
    """One model, linted several times with the same configuration and different EPs (the
    what-ifs: one pinned copy, one lint per EP): the parsed model, its index and the
    analyses that depend on the model and the configuration alone (a factory whose
    ``model_only`` is true: shape inference, constness, the exported graph), computed by
    the first of those lints and read by the others. A lint with another configuration
    (``config_key``) shares nothing."""

    loaded: LoadedModel
    index: ModelIndex | None = None
    analyses: dict[Any, Any] = field(default_factory=dict)
    #: the configuration of the lints that share (EPs aside); set by the first one
    config_key: Config | None = None
    #: the previous lint of this model before one node was edited, whose rule findings the
    #: lint may take over (``onnxlint.walk``; the language server's re-lint)
    edit: NodeEdit | None = None

    def accepts(self, config: Config) -> bool:
        """Whether a lint with ``config`` may share (the first lint's, EPs aside)."""
        key = replace(config, eps=())
        if self.config_key is None:
            self.config_key = key
        return self.config_key == key


@dataclass(eq=False)
class LintContext:
    loaded: LoadedModel
    index: ModelIndex
    config: Config
    #: resolved EP profiles in priority order (CPU implied last); see onnxlint.eps
    eps: list[Any] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    #: the engine's stages that ran after the rules, by name (``engine.stages``)
    stages_run: list[str] = field(default_factory=list)
    #: whether the engine started ORT's level-1 graph before the rules (``engine.plan_lint``)
    level1_prefetched: bool = False
    _analyses: dict[Any, Any] = field(default_factory=dict)
    #: the model-only analyses of a :class:`SharedModel` (None: this lint shares nothing)
    shared: dict[Any, Any] | None = None
    #: what each rule found, when the lint keeps it (``engine.lint(keep_findings=True)``)
    findings: RuleFindings | None = None

    @property
    def model(self) -> onnx.ModelProto:
        assert self.loaded.model is not None
        return self.loaded.model

    def emit(self, diagnostic: Diagnostic) -> None:
        self.diagnostics.append(diagnostic)

    def analysis(self, factory: Callable[[LintContext], T]) -> T:
        """Compute ``factory(ctx)`` once per model and share the result with every rule.

        ``factory`` is usually an analysis class whose constructor takes the context.
        """
        key = factory
        if key not in self._analyses:
            store = self.shared if getattr(factory, "model_only", False) else None
            if store is not None and key in store:
                self._analyses[key] = store[key]
            else:
                self._analyses[key] = factory(self)
                if store is not None:
                    store[key] = self._analyses[key]
        return self._analyses[key]

    def release(self) -> None:
        """Forget the analyses (a :class:`SharedModel` keeps its own): most refer back to
        this context, so without this they outlive the lint until the next full garbage
        collection. Asking for one again computes it again."""
        self._analyses = {}
        self.findings = None

    def computed(self, factory: Callable[[LintContext], T]) -> T | None:
        """The result of ``factory`` if a rule already asked for it; never computes it."""
        return self._analyses.get(factory)

    def options_for(self, code: str, name: str) -> dict[str, Any]:
        return {**self.config.rules.get(name, {}), **self.config.rules.get(code, {})}
