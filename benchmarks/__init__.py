"""Benchmarks: onnxlint's speed and memory against the tools users would otherwise run.

``python -m benchmarks`` (``--quick`` for a short run) generates the corpus
(:mod:`benchmarks.corpus`), times whole commands and writes
``benchmarks/results/*.json`` and ``*.md``. ``docs/performance.md`` explains the
method and the budget.
"""
