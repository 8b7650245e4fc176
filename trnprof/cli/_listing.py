"""The commands' names and one-line help, read from their source without importing them: what
`trnprof --help` lists costs a file read each, not each command's imports (duckdb, pandas, ...).
The help is the docstring of the module's `command` function, shortened the way click shortens
it (tests/core/test_cli_startup.py checks both agree)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from click.utils import make_default_short_help

FOLDER = Path(__file__).parent


def names() -> list[str]:
    """Every command: the modules of this package whose names do not start with `_`."""
    return sorted(path.stem for path in FOLDER.glob("*.py") if not path.stem.startswith("_"))


def _docstring(name: str) -> str:
    tree = ast.parse((FOLDER / f"{name}.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "command":
            return ast.get_docstring(node, clean=False) or ""
    return ""


def short_help(name: str, limit: int = 45) -> str:
    """The command's help cut to one line of at most `limit` characters, as click does."""
    text = inspect.cleandoc(_docstring(name)).partition("\f")[0]
    return make_default_short_help(text, limit)
