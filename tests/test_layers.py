"""The package's layering (docs/architecture.md), checked on the source.

Every module of ``onnxlint`` belongs to one layer; a module may import its own layer
and the layers below it, never one above. Imports under ``if TYPE_CHECKING:`` are
annotations only and are not counted. Imports inside functions are counted: a lazy
import that runs up the layers is still an upward dependency.

``KNOWN_UPWARD`` lists the upward imports that existed when this test was written
(issue #15 tracks their removal). The test fails on any upward import that is not in
the list, and on a listed one that no longer exists (so the list only shrinks).

A module holds one job: none may exceed ``MAX_MODULE_LINES`` except those in
``OVERSIZE_ALLOWED``, which says why for each and also only shrinks.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "onnxlint"

#: lowest first; a module's layer is that of its longest matching prefix
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "core",
        (
            "onnxlint.version",
            "onnxlint.names",
            "onnxlint.diagnostics",
            "onnxlint.limits",
            "onnxlint.fsutil",
            "onnxlint.cachefs",
            "onnxlint.progress",
            "onnxlint.suggest",
            "onnxlint.selection",
            "onnxlint.data",
            "onnxlint.ep_names",
            "onnxlint.config",
            "onnxlint.lintdeps",
            "onnxlint.filestamp",
            "onnxlint.distinfo",
            "onnxlint.heap",
            "onnxlint.schema_registry",
        ),
    ),
    (
        "model",
        (
            "onnxlint.tensors",
            "onnxlint.modelfile",
            "onnxlint.index",
            "onnxlint.node_order",
            "onnxlint.reverse_dfs",
            "onnxlint.rewrites",
        ),
    ),
    (
        "ort",
        (
            "onnxlint.runtime",
            "onnxlint.ort_versions",
            "onnxlint.analyses.level1",
            "onnxlint.installed",
        ),
    ),
    ("profiles", ("onnxlint.profiles", "onnxlint.signatures")),
    (
        "analyses",
        ("onnxlint.analyses", "onnxlint.context", "onnxlint.compiled", "onnxlint.fixes"),
    ),
    ("rules", ("onnxlint.rule", "onnxlint.rules")),
    (
        "stages",
        (
            "onnxlint.confirm",
            "onnxlint.confirmed",
            "onnxlint.causes",
            "onnxlint.report",
            "onnxlint.partition_summary",
            "onnxlint.load_failures",
        ),
    ),
    (
        "engine",
        (
            "onnxlint.loader",
            "onnxlint.engine",
            "onnxlint.walk",
            "onnxlint.what_if",
            "onnxlint.baseline",
            "onnxlint.report_cache",
        ),
    ),
    ("render", ("onnxlint.render",)),
    (
        "front",
        (
            "onnxlint.__main__",
            "onnxlint.cli",
            "onnxlint.commands",
            "onnxlint.settings_report",
            "onnxlint.probe",
            "onnxlint.lsp",
            "onnxlint.pytest_plugin",
            "onnxlint.testing",
            "onnxlint.torch",
            "onnxlint.torch_export",
        ),
    ),
    # the package itself is the Python API facade
    ("api", ("onnxlint",)),
]

#: (importer, imported) pairs that run upward today; remove a pair when it is fixed
KNOWN_UPWARD: set[tuple[str, str]] = set()


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    name = ".".join(rel.parts)
    return name.removesuffix(".__init__")


def layer_of(module: str) -> int:
    best, best_len = -1, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            nested = prefix != "onnxlint" and module.startswith(prefix + ".")
            if (module == prefix or nested) and len(prefix) > best_len:
                best, best_len = i, len(prefix)
    return best


def _is_type_checking(test: ast.expr) -> bool:
    return "TYPE_CHECKING" in ast.unparse(test)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The onnxlint modules ``path`` imports at run time (top level or lazily)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def resolve(target: str) -> str | None:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        return target or None

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for other in child.orelse:
                    visit(other)
                continue
            if isinstance(child, ast.Import):
                for alias in child.names:
                    hit = resolve(alias.name)
                    if hit:
                        found.add(hit)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - child.level + 1])
                    mod = f"{base}.{child.module}" if child.module else base
                else:
                    mod = child.module or ""
                for alias in child.names:
                    # ``from pkg import sub`` imports the submodule, not the package
                    hit = (
                        resolve(f"{mod}.{alias.name}") if f"{mod}.{alias.name}" in modules else None
                    )
                    hit = hit or resolve(mod)
                    if hit:
                        found.add(hit)
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    found.discard(name)
    return found


def _graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    modules = set(paths)
    return {name: imports_of(path, modules) for name, path in paths.items()}


def upward_imports() -> set[tuple[str, str]]:
    out = set()
    for importer, targets in _graph().items():
        for target in targets:
            if importer == "onnxlint.runtime._worker":
                continue
            if layer_of(target) > layer_of(importer):
                out.add((importer, target))
    return out


def test_every_module_has_a_layer() -> None:
    missing = sorted(m for m in _graph() if layer_of(m) < 0)
    assert missing == [], f"add these modules to a layer in {__name__}.LAYERS: {missing}"


def test_no_new_upward_import() -> None:
    new = sorted(upward_imports() - KNOWN_UPWARD)
    assert new == [], "imports that run up the layers (docs/architecture.md):\n" + "\n".join(
        f"  {a} ({LAYERS[layer_of(a)][0]}) -> {b} ({LAYERS[layer_of(b)][0]})" for a, b in new
    )


def test_known_upward_imports_still_exist() -> None:
    fixed = sorted(KNOWN_UPWARD - upward_imports())
    assert fixed == [], f"remove these fixed pairs from KNOWN_UPWARD: {fixed}"


def test_no_import_cycle() -> None:
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    known = [c for c in cycles if _cycle_is_known(c)]
    assert [c for c in cycles if c not in known] == []


def _cycle_is_known(cycle: list[str]) -> bool:
    """A cycle is tolerated only while it contains a listed upward import."""
    members = set(cycle)
    return any(a in members and b in members for a, b in KNOWN_UPWARD)


def test_known_pairs_are_upward() -> None:
    assert [(a, b) for a, b in sorted(KNOWN_UPWARD) if layer_of(b) <= layer_of(a)] == []


#: a module holds one job; past this many lines it almost always holds several
MAX_MODULE_LINES = 600

#: modules allowed past MAX_MODULE_LINES, each with why (the list only shrinks)
OVERSIZE_ALLOWED: dict[str, str] = {
    # runs in the runner's interpreter with the standard library only, so it cannot
    # share code with the package and is one file by design
    "onnxlint/runtime/_worker.py": "stdlib-only worker",
    # owned by other engineers in the current wave (issue #15); split after merging
}


def _module_lines() -> dict[str, int]:
    root = PACKAGE.parent
    return {
        p.relative_to(root).as_posix(): len(p.read_text(encoding="utf-8").splitlines())
        for p in PACKAGE.rglob("*.py")
    }


def test_no_module_over_the_line_limit() -> None:
    over = sorted(
        f"{path} ({n} lines)"
        for path, n in _module_lines().items()
        if n > MAX_MODULE_LINES and path not in OVERSIZE_ALLOWED
    )
    assert over == [], f"modules over {MAX_MODULE_LINES} lines; split them along their jobs: {over}"


def test_oversize_allowances_are_still_needed() -> None:
    lines = _module_lines()
    stale = sorted(p for p in OVERSIZE_ALLOWED if lines.get(p, 0) <= MAX_MODULE_LINES)
    assert stale == [], f"remove these from OVERSIZE_ALLOWED: {stale}"
