"""Generated docs match the code (regenerate with `python scripts/gen_docs.py`)."""

import pytest

from trnprof.docgen import GENERATED

from tests.conftest import REPO


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_generated_doc_is_up_to_date(name):
    path = REPO / "docs" / name
    assert path.exists(), f"docs/{name} is missing: run python scripts/gen_docs.py"
    assert path.read_text(encoding="utf-8") == GENERATED[name](), \
        f"docs/{name} drifted from the code: run python scripts/gen_docs.py"
