"""docs/execution-model.md's validation report is the current model's (regenerate with
`python scripts/validation_report.py`), and each fit row's band holds its published value."""

from pathlib import Path

from trnprof.collectors.trn1.validation import BEGIN, END, check_rows, render

DOC = Path(__file__).resolve().parents[1] / "docs" / "execution-model.md"


def test_validation_report_in_the_docs_is_up_to_date():
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index(BEGIN): text.index(END) + len(END)]
    assert section == render(), "docs/execution-model.md drifted: run python scripts/validation_report.py"


def test_every_row_is_reported_and_fit_rows_fall_in_their_band():
    checked = check_rows()
    assert {c.row.role for c in checked} == {"fit", "validation"}
    for c in checked:
        assert c.band["low"] < c.predicted < c.band["high"]
        if c.row.role == "fit":
            assert c.covered, c.row.name
