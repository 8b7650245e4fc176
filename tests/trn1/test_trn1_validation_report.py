"""docs/execution-model.md's validation report is the current model's (regenerate with
`python scripts/validation_report.py`), and each fit row's band holds its published value."""

from pathlib import Path

from trnprof.collectors.trn1.validation import BEGIN, END, check_rows, figures, render

DOC = Path(__file__).resolve().parents[2] / "docs" / "execution-model.md"


def test_validation_report_in_the_docs_is_up_to_date():
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index(BEGIN) : text.index(END) + len(END)]
    assert section == render(), "docs/execution-model.md drifted: run python scripts/validation_report.py"


def test_every_row_is_reported_and_fit_rows_fall_in_their_band():
    checked = check_rows()
    assert {c.row.role for c in checked} == {"fit", "validation", "excluded"}
    for c in checked:
        assert c.band["low"] < c.predicted < c.band["high"]
        if c.row.role == "fit":
            assert c.covered, c.row.name


def test_excluded_rows_are_reported_with_their_reason_and_kept_out_of_the_figures():
    checked = check_rows()
    excluded = [c for c in checked if c.row.role == "excluded"]
    assert excluded and all(c.row.excluded_because for c in excluded)
    with_them = figures(checked)
    without = figures([c for c in checked if c.row.role != "excluded"])
    assert with_them == without
    assert with_them["validation_rows"] == sum(c.row.role == "validation" for c in checked)
    report = render()
    for c in excluded:
        assert f"| {c.row.name} | excluded |" in report and c.row.excluded_because in report
