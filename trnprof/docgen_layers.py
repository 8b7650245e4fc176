"""The layer sections of docs/architecture.md, generated from the layer map (`trnprof/layers.py`):
the diagram, the forbidden reaches and the function-level imports. The rest of the page is
written by hand; each generated section sits between two markers, and `spliced` replaces what is
between them."""

from __future__ import annotations

import re
import textwrap

from .layers import FORBIDDEN, LAYERS, LAZY_IMPORTS, LAZY_PACKAGES
from .textfmt import markdown_table

WIDTH = 100
NAME_WIDTH = 12  # the diagram's column of layer names


def _short(module: str) -> str:
    return module.removeprefix("trnprof.")


def diagram() -> list[str]:
    """The layers, top first: name and role, then the modules of each."""
    indent = " " * (NAME_WIDTH + 1)
    lines = ["```"]
    for layer in reversed(LAYERS):
        parts = ", ".join(f"{_short(m)} ({what})" if what else _short(m) for m, what in layer.parts)
        lines.append(f" {layer.name:<{NAME_WIDTH}}{layer.role}")
        lines += textwrap.wrap(parts, WIDTH, initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False)
        if layer is not LAYERS[0]:
            lines.append("     |")
    return lines + ["```"]


def _bullets(items: list[str]) -> list[str]:
    """A Markdown list, wrapped, the items separated by semicolons."""
    lines = []
    for k, item in enumerate(items):
        text = item + (";" if k < len(items) - 1 else ".")
        lines += textwrap.wrap(text, WIDTH, initial_indent="- ", subsequent_indent="  ", break_on_hyphens=False)
    return lines


def forbidden() -> list[str]:
    lines = [
        "Forbidden reaches inside the order (directly or through other modules; a module filed under",
        "the first package but mapped to another layer, as `rules_engine.testing`, is not bound):",
        "",
    ]
    return lines + _bullets([f"`{_short(r.source)}` never reaches `{_short(r.target)}`: {r.why}" for r in FORBIDDEN])


def lazy_imports() -> list[str]:
    lines = [
        "Imports inside functions are listed, each with why (`LAZY_IMPORTS`); the layer test fails on",
        "one not listed, and counts them like any other import. Two packages load lazily by design:",
        "",
    ]
    lines += _bullets([f"`{_short(package)}`: {why}" for package, why in LAZY_PACKAGES])
    lines += ["", "Every other function-level import:", ""]
    rows = [(f"`{_short(lazy.importer)}`", f"`{_short(lazy.imported)}`", lazy.why) for lazy in LAZY_IMPORTS]
    return lines + markdown_table(rows, ("module", "imports, in a function", "why"), markdown=True)


SECTIONS = {"layers": diagram, "forbidden reaches": forbidden, "function-level imports": lazy_imports}


def _markers(name: str) -> tuple[str, str]:
    return (
        f"<!-- generated from trnprof/layers.py by scripts/gen_docs.py: {name} -->",
        f"<!-- end of generated: {name} -->",
    )


def spliced(text: str) -> str:
    """`text` (docs/architecture.md) with each generated section rendered anew between its markers."""
    for name, render in SECTIONS.items():
        begin, end = _markers(name)
        pattern = re.compile(re.escape(begin) + r"\n.*?" + re.escape(end), re.S)
        if len(pattern.findall(text)) != 1:
            raise ValueError(f"docs/architecture.md needs the markers {begin} ... {end} once")
        text = pattern.sub(lambda _: "\n".join([begin, *render(), end]), text)
    return text
