"""The onnxlint language server (``onnxlint lsp``).

``server.py`` only wires LSP handlers to the plain functions in the other
modules, which are tested without a client: ``settings`` (typed settings),
``sourcemap`` (graph view rendering and the node/value <-> line maps),
``features`` (diagnostics, hover, symbols, definition, hints, code actions),
``workspace`` (finding model files) and ``service`` (debounced, cached,
cancellable linting off the request loop).
"""
