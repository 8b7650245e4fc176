"""Every package the source imports is a declared dependency (issue 34: `pip install trnprof`
could not `diff`, as scipy was only in the test extras, which the suite always has).

The check reads every import of trnprof/ and collectors/ with `ast` (module level and inside
functions) and maps each third-party module to the distribution that provides it in this
environment. A few imports belong to an extra or to another process, each listed with why;
`.ci/run` also installs the package alone and runs every command (scripts/plain_install_smoke.sh).
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib

from tests.conftest import REPO

SOURCE_FOLDERS = ("trnprof", "collectors", "rules", "sample_traces")
OWN = {"trnprof", "collectors", "tests"}
# module -> where it legitimately comes from when it is no [project] dependency
NOT_DEPENDENCIES = {
    "pyspark": "extra spark",  # --engine spark only (docs/scale-out.md)
    "sqlglot": "extra spark",
    "torch": "the profiled job's own torch (trnprof/record/runtime.py runs inside the user's job)",
}


def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", re.match(r"\s*([A-Za-z0-9._-]+)", requirement).group(1)).lower()


def _project() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def declared() -> set[str]:
    return {_name(r) for r in _project()["dependencies"]}


def imported_modules() -> dict[str, set[str]]:
    """Top-level third-party module -> the source files importing it."""
    found: dict[str, set[str]] = {}
    for folder in SOURCE_FOLDERS:
        for path in sorted((REPO / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in OWN:
                        found.setdefault(top, set()).add(str(path.relative_to(REPO)))
    return found


def undeclared(modules, dependencies: set[str], providers: dict[str, list[str]]) -> dict[str, str]:
    """Module -> why it is not covered, for each import no declared dependency provides."""
    missing = {}
    for module in modules:
        if module in NOT_DEPENDENCIES:
            continue
        dists = {_name(d) for d in providers.get(module, [])}
        if not dists:
            missing[module] = "no installed distribution provides it"
        elif not dists & dependencies:
            missing[module] = f"provided by {', '.join(sorted(dists))}, not in [project].dependencies"
    return missing


def test_every_imported_package_is_a_declared_dependency():
    modules = imported_modules()
    assert {"pandas", "duckdb", "scipy"} <= set(modules)  # the scan sees the source
    missing = undeclared(modules, declared(), importlib.metadata.packages_distributions())
    assert not missing, {m: (why, sorted(modules[m])[:3]) for m, why in missing.items()}


def test_the_check_fails_on_the_scipy_case():
    """As before issue 34: scipy imported by `diff`, declared only in the test extras."""
    providers = importlib.metadata.packages_distributions()
    before = declared() - {"scipy"}
    assert "scipy" in undeclared({"scipy": {"trnprof/diff/stats.py"}}, before, providers)


def test_extras_hold_only_what_the_exceptions_name():
    spark = {_name(r) for r in _project()["optional-dependencies"]["spark"]}
    assert spark == {"pyspark", "sqlglot"}
    assert not {_name(r) for r in _project()["optional-dependencies"]["test"]} & declared()
