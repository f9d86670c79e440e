"""The per-model lint context: the model, its index, the configuration, the EPs,
and the shared analyses, each computed lazily and at most once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import onnx

from onnxlint.config import Config
from onnxlint.diagnostics import Diagnostic
from onnxlint.index import ModelIndex
from onnxlint.modelfile.read import LoadedModel

T = TypeVar("T")


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
            self._analyses[key] = factory(self)
        return self._analyses[key]

    def computed(self, factory: Callable[[LintContext], T]) -> T | None:
        """The result of ``factory`` if a rule already asked for it; never computes it."""
        return self._analyses.get(factory)

    def options_for(self, code: str, name: str) -> dict[str, Any]:
        return {**self.config.rules.get(name, {}), **self.config.rules.get(code, {})}
