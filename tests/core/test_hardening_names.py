"""Hostile op names (issue 28): Markdown escapes CR, HTML and link syntax; text output shows
control characters (ESC sequences, CR) as escapes instead of passing them to the terminal."""

import re

import pyarrow.compute as pc
import pyarrow.parquet as pq
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import write_inline_run
from trnprof.collectors.synthetic import synthetic_run
from trnprof.textfmt import markdown_table, markdown_text, terminal

HOSTILE = (
    "matmul\r| [click](http://evil.example) <img src=x onerror=alert(1)> **bold** `code`"
    "\x1b[2J\x1b]8;;http://evil.example\x07link\x1b]8;;\x07 \u202egnp.exe\n# heading"
)
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _unescaped(text: str, char: str) -> int:
    return len(re.findall(r"(?<!\\)(?:\\\\)*" + re.escape(char), text))


@given(st.text())
def test_markdown_text_is_one_inert_line_for_any_name(name):
    text = markdown_text(name)
    assert "\r" not in text and "\n" not in text and "<" not in text and not CONTROL.search(text)
    for char in "|[]`*_":
        assert _unescaped(text, char) == 0, (char, text)
    assert not re.search(r"(?i)[a-z]:(?=//)", text) and not re.match(r"\d*[.)]\s|[#>+=-]", text)


@given(st.text())
def test_terminal_text_has_no_control_characters_but_newline_and_tab(name):
    assert not CONTROL.search(terminal(name).replace("\t", "").replace("\n", ""))


def test_a_markdown_table_keeps_its_columns_whatever_the_cells():
    lines = markdown_table([[HOSTILE, 1.5, "ok"]], ["name", "ms", "note"])
    assert len(lines) == 3 and all(_unescaped(line, "|") == 4 for line in lines)


def _hostile(tmp_path, name: str, **options):
    """A synthetic run with its compute ops named HOSTILE plus a number."""
    source = synthetic_run(tmp_path / f"{name}-source", ranks=2, steps=4, ops_per_step=6, **options)
    events = pq.read_table(source / "events").to_pandas()
    compute = events["kind"] == "compute"
    events.loc[compute, "name"] = [f"{HOSTILE} {i % 3}" for i in range(compute.sum())]
    events["rank"] = events["rank"].astype(int)
    return write_inline_run(tmp_path / name, events.to_dict("records"), ranks=2)


def _same_columns(markdown: str) -> bool:
    tables = re.findall(r"(?m)(?:^\|.*\n)+", markdown)
    return bool(tables) and all(len({_unescaped(line, "|") for line in t.splitlines()}) == 1 for t in tables)


def test_hostile_names_stay_inert_in_markdown_and_text(tmp_path, cli):
    base = _hostile(tmp_path, "base", seed=2)
    new = _hostile(tmp_path, "new", seed=2, slow_rank=1)
    names = pq.read_table(base / "events", columns=["name"])["name"]
    assert pc.any(pc.match_substring(names, "\x1b[2J")).as_py()  # the runs do hold them
    markdown = cli("diff", base, new, "--format", "markdown").stdout
    assert "\\[click\\]" in markdown  # the names are there, escaped
    assert "\r" not in markdown and "\x1b" not in markdown and "<img" not in markdown
    assert not re.search(r"(?<!\\)\]\(", markdown)  # no link a renderer would follow
    assert _same_columns(markdown)
    for args in (["diff", base, new], ["analyze", base], ["query", base, "SELECT DISTINCT name FROM events"]):
        result = cli(*args)
        assert result.exit_code == 0 and not CONTROL.search(result.stdout.replace("\n", "").replace("\t", ""))
    shown = cli("query", base, "SELECT DISTINCT name FROM events WHERE kind = 'compute'").stdout
    assert "\\x1b[2J" in shown  # shown as an escape, not acted on
