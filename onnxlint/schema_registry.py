"""The lock on onnx's schema registry, which is the process's.

An inference that lends schemas to it (``analyses.contrib_types``) holds the lock, and so
does every schema lookup whose answer is kept (``index.resolve_schema``,
``analyses.op_revisions``, the opset rules), so that no other thread sees, or caches, a
lent schema (the language server lints in threads)."""

from __future__ import annotations

import threading

SCHEMAS_LOCK = threading.RLock()
