"""Generated docs match the code (regenerate with `python scripts/gen_docs.py`)."""

import pytest

from tests.conftest import REPO
from trnprof.docgen import GENERATED, SPLICED
from trnprof.docgen_layers import SECTIONS, spliced


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_generated_doc_is_up_to_date(name):
    path = REPO / "docs" / name
    assert path.exists(), f"docs/{name} is missing: run python scripts/gen_docs.py"
    assert path.read_text(encoding="utf-8") == GENERATED[name](), (
        f"docs/{name} drifted from the code: run python scripts/gen_docs.py"
    )


@pytest.mark.parametrize("name", sorted(SPLICED))
def test_generated_sections_are_up_to_date(name):
    text = (REPO / "docs" / name).read_text(encoding="utf-8")
    assert text == SPLICED[name](text), f"generated sections of docs/{name} drifted: run python scripts/gen_docs.py"


def test_the_layer_sections_are_rendered_from_the_map():
    """Splicing replaces what is between the markers, whatever it was, and refuses a page
    without them."""
    page = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    stale = page.replace("robuststats (the noise", "robuststats (stale text", 1)
    assert stale != page and spliced(stale) == page
    with pytest.raises(ValueError, match="markers"):
        spliced(page.replace(f"end of generated: {next(iter(SECTIONS))}", "end"))
