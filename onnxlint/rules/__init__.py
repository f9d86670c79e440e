"""Rule families, one module each; ``onnxlint.rule.all_rules`` imports them on first use."""
