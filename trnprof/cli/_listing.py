"""The commands' names and one-line help, read from their source without importing them: what
`trnprof --help` lists costs a file read each, not each command's imports (duckdb, pandas, ...).
The help is the docstring of the module's `command` function, shortened the way click shortens
it (tests/core/test_cli_startup.py checks both agree)."""

from __future__ import annotations

import ast
import functools
import inspect
import re
import warnings
from pathlib import Path

with warnings.catch_warnings():  # deprecated in click 8.2+, kept until 9 (pyproject pins click < 9)
    warnings.simplefilter("ignore", DeprecationWarning)
    from click.utils import make_default_short_help

FOLDER = Path(__file__).parent


@functools.cache
def names() -> tuple[str, ...]:
    """Every command: the modules of this package whose names do not start with `_` (read once per
    process: a process that later drops privileges need not read the folder again)."""
    return tuple(sorted(path.stem for path in FOLDER.glob("*.py") if not path.stem.startswith("_")))


# the `command` function's signature (over any number of lines), then its docstring literal
_DOCSTRING = re.compile(
    r'^def command\(.*?\)(?:\s*->[^:]+)?:\s*\n\s*((?:[rRuU]?)(?:"""|\'\'\'))', re.DOTALL | re.MULTILINE
)


def _docstring(name: str) -> str:
    """The docstring of the module's `command`: only that literal is parsed, not the module."""
    source = (FOLDER / f"{name}.py").read_text(encoding="utf-8")
    found = _DOCSTRING.search(source)
    if not found:
        return ""
    quote = found.group(1)[-3:]
    end = source.index(quote, found.end(1)) + 3
    return ast.literal_eval(source[found.start(1) : end])


def short_help(name: str, limit: int = 45) -> str:
    """The command's help cut to one line of at most `limit` characters, as click does."""
    text = inspect.cleandoc(_docstring(name)).partition("\f")[0]
    return make_default_short_help(text, limit)
