"""The house plan's layers, checked on the source: every import (at module level or inside a
function) points down the layer order or stays in its layer, and the import graph has no cycle.

Read with `ast`, so the test sees what the code says, not what one run of it happened to load.
Importing `a.b.c` also runs the `__init__` of `a` and `a.b`, so those count as imported too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from tests.conftest import REPO

# package -> source folder (setup.py ships collectors/ and rules/ inside the trnprof namespace)
ROOTS = {"trnprof": REPO / "trnprof", "trnprof.collectors": REPO / "collectors", "trnprof.rules": REPO / "rules"}

# Lowest first: a module may import modules of its own layer and of the layers below, never above.
# A module belongs to the layer of the longest prefix that names it (docs/architecture.md).
LAYERS = [
    ("foundation", ["trnprof._version", "trnprof.errors", "trnprof.jsonplain", "trnprof.yamlio", "trnprof.textfmt",
                    "trnprof.hardware", "trnprof.schema", "trnprof.units", "trnprof.breakdown", "trnprof.exitcodes",
                    "trnprof.validation", "trnprof.atomic", "trnprof.progress", "trnprof.cachedir", "trnprof.heap"]),
    ("model", ["trnprof.model"]),
    ("storage", ["trnprof.manifest", "trnprof.integrity", "trnprof.runstore", "trnprof.derived", "trnprof.tableread"]),
    ("collectors", ["trnprof.collectors"]),
    ("query", ["trnprof.stdlib", "trnprof.stdlibdeps", "trnprof.device_tables", "trnprof.batches", "trnprof.session", "trnprof.session_tables", "trnprof.info",
               "trnprof.run", "trnprof.spark", "trnprof.engines", "trnprof.critical_path"]),
    ("analysis", ["trnprof.rules_engine", "trnprof.whatif", "trnprof.diff", "trnprof.export", "trnprof.rules"]),
    ("report", ["trnprof.report"]),
    ("api", ["trnprof.api"]),
    # the commands, the docs generator, and `trnprof rules test`, which makes runs with collectors
    ("interface", ["trnprof.cli", "trnprof.record", "trnprof.__main__", "trnprof.docgen", "trnprof.docgen_hardware",
                   "trnprof.rules_engine.testing"]),
]
# Within a layer: packages that must not reach one another (directly or through others).
NEVER = [
    ("trnprof.rules_engine", "trnprof.whatif"),        # the API composes findings and their prices
    ("trnprof.rules_engine", "trnprof.collectors.trn1"),
    ("trnprof.report", "trnprof.collectors.trn1"),
    ("trnprof.report", "trnprof.whatif"),
    ("trnprof.report", "trnprof.rules_engine.engine"),  # the report draws documents, it runs no rules
    ("trnprof.report", "trnprof.diff.document"),
    ("trnprof.collectors.neuron", "trnprof.session"),
    ("trnprof.diff", "trnprof.whatif"),
]
EXEMPT_FROM_NEVER = {"trnprof.rules_engine.testing"}  # the interface layer, filed under rules_engine


def _modules() -> dict[str, tuple[Path, bool]]:
    modules = {}
    for package, folder in ROOTS.items():
        for path in folder.rglob("*.py"):
            if ".venv" in path.parts:
                continue
            parts = list(path.relative_to(folder).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            modules[".".join([package, *parts[:-1]] if is_package else [package, *parts])] = (path, is_package)
    return modules


MODULES = _modules()


def _known(name: str) -> str | None:
    """The module `name` is, or the nearest package holding it (`from pkg import attr`)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _targets(module: str, is_package: bool, node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = module if is_package else module.rpartition(".")[0]
    for _ in range(node.level - 1):
        base = base.rpartition(".")[0]
    stem = (base + "." + node.module if node.module else base) if node.level else node.module
    return [f"{stem}.{a.name}" if f"{stem}.{a.name}" in MODULES else stem for a in node.names]


def _imports(module: str) -> set[str]:
    """Every trnprof module `module` imports anywhere in its source, with the packages whose
    `__init__` that import runs."""
    path, is_package = MODULES[module]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for target in filter(None, map(_known, _targets(module, is_package, node))):
                parts = target.split(".")
                found |= {".".join(parts[:i]) for i in range(2, len(parts) + 1)}
    return {t for t in found if t in MODULES and t != module and not module.startswith(t + ".")}


GRAPH = {module: _imports(module) for module in MODULES}


def layer_of(module: str) -> int:
    best, layer = "", None
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
                best, layer = prefix, index
    assert layer is not None, f"{module} is in no layer: add it to LAYERS (and to docs/architecture.md)"
    return layer


def _reach(start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for target in GRAPH[todo.pop()] - seen:
            seen.add(target)
            todo.append(target)
    return seen


def test_every_module_has_a_layer():
    for module in MODULES:
        if module != "trnprof":
            layer_of(module)


def test_imports_point_down_the_layers():
    upward = [f"{m} ({LAYERS[layer_of(m)][0]}) imports {t} ({LAYERS[layer_of(t)][0]})"
              for m in MODULES if m != "trnprof" for t in GRAPH[m] if t != "trnprof" and layer_of(t) > layer_of(m)]
    assert upward == []


def test_the_package_root_imports_nothing_eagerly():
    """`from trnprof.errors import TrnprofError` must not load duckdb or pandas: the root's
    public names load on first use (PEP 562)."""
    assert GRAPH["trnprof"] <= {"trnprof._version"}


@pytest.mark.parametrize("low, high", NEVER, ids=[f"{a}-{b}" for a, b in NEVER])
def test_forbidden_reaches(low, high):
    starts = [m for m in MODULES if (m == low or m.startswith(low + ".")) and m not in EXEMPT_FROM_NEVER]
    assert starts, f"no module {low}"
    reached = sorted(f"{m} -> {t}" for m in starts for t in _reach(m) if t == high or t.startswith(high + "."))
    assert reached == []


def test_no_import_cycle():
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(node):  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in GRAPH[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while node not in component:
                component.add(stack.pop())
            on_stack.difference_update(component)
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(MODULES):
        if module not in index:
            visit(module)
    assert cycles == []


def test_the_checker_sees_function_level_imports_and_package_inits():
    """The graph is only worth its verdicts if it sees the imports that hide in functions."""
    assert "trnprof.spark.run" in GRAPH["trnprof.engines"]       # imported inside open_run
    assert "trnprof.rules_engine" in GRAPH["trnprof.diff.findings"]  # the package __init__ runs
