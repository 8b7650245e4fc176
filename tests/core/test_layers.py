"""The house plan's layers (`trnprof/layers.py`, the one map) checked on the source: every import
(at module level or inside a function) points down the layer order or stays in its layer, no
forbidden reach, no import cycle, and the function-level imports are exactly the map's.

Read with `ast`, so the test sees what the code says, not what one run of it happened to load.
Importing `a.b.c` also runs the `__init__` of `a` and `a.b`, so those count as imported too.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from trnprof.layers import CLI_RENDERS, FORBIDDEN, LAYERS, LAZY_IMPORTS, LAZY_PACKAGES

# package -> source folder (setup.py ships collectors/ and rules/ inside the trnprof namespace)
ROOTS = {"trnprof": REPO / "trnprof", "trnprof.collectors": REPO / "collectors", "trnprof.rules": REPO / "rules"}

LAYER_NAMES = [layer.name for layer in LAYERS]
ENTRIES = {module: index for index, layer in enumerate(LAYERS) for module, _ in layer.parts}


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


def _tree(module: str) -> ast.Module:
    return ast.parse(MODULES[module][0].read_text(encoding="utf-8"))


TREES = {module: _tree(module) for module in MODULES}


def _imports(module: str) -> set[str]:
    """Every trnprof module `module` imports anywhere in its source, with the packages whose
    `__init__` that import runs."""
    found = set()
    for node in ast.walk(TREES[module]):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for target in filter(None, map(_known, _targets(module, MODULES[module][1], node))):
                parts = target.split(".")
                found |= {".".join(parts[:i]) for i in range(2, len(parts) + 1)}
    return {t for t in found if t in MODULES and t != module and not module.startswith(t + ".")}


GRAPH = {module: _imports(module) for module in MODULES}


def _under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def layer_of(module: str) -> int:
    """The layer of the longest entry naming `module`; a package's `__init__` no entry names goes
    with the entries under it, when they share one layer."""
    named = [entry for entry in ENTRIES if _under(module, entry)]
    if named:
        return ENTRIES[max(named, key=len)]
    below = {ENTRIES[entry] for entry in ENTRIES if entry.startswith(module + ".")}
    assert len(below) == 1, f"{module} is in no layer: add it to LAYERS in trnprof/layers.py"
    return below.pop()


def _function_level_imports(module: str) -> set[str]:
    """What the functions of `module` import: trnprof modules by name, other packages as
    written; Python's own modules left out."""
    found = set()
    for function in ast.walk(TREES[module]):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(function):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _targets(module, MODULES[module][1], node):
                    if target.split(".")[0] not in sys.stdlib_module_names:
                        found.add(_known(target) if target.split(".")[0] == "trnprof" else target)
    return found


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


def test_every_entry_of_the_map_is_a_module():
    assert [entry for entry in ENTRIES if entry not in MODULES] == []
    assert len(ENTRIES) == sum(len(layer.parts) for layer in LAYERS), "an entry is in two layers"


def test_imports_point_down_the_layers():
    upward = [
        f"{m} ({LAYER_NAMES[layer_of(m)]}) imports {t} ({LAYER_NAMES[layer_of(t)]})"
        for m in MODULES
        if m != "trnprof"
        for t in GRAPH[m]
        if t != "trnprof" and layer_of(t) > layer_of(m)
    ]
    assert upward == []


def test_the_package_root_imports_nothing_eagerly():
    """`from trnprof.errors import TrnprofError` must not load duckdb or pandas: the root's
    public names load on first use (PEP 562)."""
    assert GRAPH["trnprof"] <= {"trnprof._version"}


@pytest.mark.parametrize("reach", FORBIDDEN, ids=[f"{r.source}-{r.target}" for r in FORBIDDEN])
def test_forbidden_reaches(reach):
    """A module filed under the source package but mapped to another layer (`rules_engine.testing`,
    the interface) is not the source's."""
    home = layer_of(reach.source)
    starts = [m for m in MODULES if _under(m, reach.source) and layer_of(m) == home]
    assert starts, f"no module {reach.source}"
    assert reach.target in MODULES, f"no module {reach.target}"
    reached = sorted(f"{m} -> {t}" for m in starts for t in _reach(m) if _under(t, reach.target))
    assert reached == [], reach.why


def test_function_level_imports_are_the_listed_ones():
    """Every import inside a function is in LAZY_IMPORTS with why (trnprof/layers.py), outside
    the packages that load lazily by design; a listed one that is gone fails too."""
    found = {
        (m, t) for m in MODULES if not any(_under(m, p) for p, _ in LAZY_PACKAGES) for t in _function_level_imports(m)
    }
    listed = {(lazy.importer, lazy.imported) for lazy in LAZY_IMPORTS}
    assert len(listed) == len(LAZY_IMPORTS), "an import is listed twice"
    assert sorted(found - listed) == [], "not in LAZY_IMPORTS: move it to the module's top or list it with why"
    assert sorted(listed - found) == [], "listed in LAZY_IMPORTS but no function imports it"


def test_no_single_letter_module_alias():
    """`from . import scale as S` hides which module a name comes from: import it by its name."""
    short = [
        f"{m}: {alias.name} as {alias.asname}"
        for m in MODULES
        for node in ast.walk(TREES[m])
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
        if alias.asname is not None and len(alias.asname) == 1
    ]
    assert short == []


def _cli_may_import(target: str) -> bool:
    """Allowed to a command; a renderer's packages too, as importing it runs their (empty) `__init__`."""
    return (
        layer_of(target) == 0
        or target in ("trnprof", "trnprof.api")
        or target == "trnprof.cli"
        or target.startswith("trnprof.cli.")
        or any(r == target or r.startswith(target + ".") for r, _ in CLI_RENDERS)
    )


def test_the_cli_reaches_computations_only_through_the_api():
    """Every command is one call into `trnprof.api`: its module imports no computation."""
    reached = sorted(
        f"{m} imports {t}"
        for m in MODULES
        if m == "trnprof.cli" or m.startswith("trnprof.cli.")
        for t in GRAPH[m]
        if not _cli_may_import(t)
    )
    assert reached == [], "the CLI reaches computations only through trnprof.api:\n" + "\n".join(reached)


def test_the_cli_rule_sees_a_computation():
    """The rule fails on a command that imports a computation (here the rule engine's `engine`)."""
    assert not _cli_may_import("trnprof.rules_engine.engine") and not _cli_may_import("trnprof.api.findings")
    assert all(map(_cli_may_import, ["trnprof.api", "trnprof.textfmt", "trnprof.diff.render", "trnprof.cli._output"]))


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
    assert "trnprof.spark.run" in GRAPH["trnprof.engines"]  # imported inside open_run
    assert "trnprof.rules_engine" in GRAPH["trnprof.diff.findings"]  # the package __init__ runs
    assert "trnprof.spark.run" in _function_level_imports("trnprof.engines")
    assert "trnprof.spark.run" not in _function_level_imports("trnprof.run")
