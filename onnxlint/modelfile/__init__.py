"""The model file: reading it through the guards, and what was wrong with it as records.

``read`` (:mod:`~onnxlint.modelfile.read`) is the only reader of model bytes; the limits
it enforces are measured before decoding (:mod:`~onnxlint.modelfile.prescan`) and after
(:mod:`~onnxlint.modelfile.measure`); external data is checked without being opened
(:mod:`~onnxlint.modelfile.external`).
"""
