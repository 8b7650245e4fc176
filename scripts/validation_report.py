"""Write the execution model's validation report into docs/execution-model.md.

Every row of collectors/trn1/data/calibration.csv predicted with the shipped parameters, against
its published throughput, with its role (fit or validation), error and band.

    python scripts/validation_report.py
"""

from pathlib import Path

from trnprof.collectors.trn1.validation import render, replace_section

DOC = Path(__file__).resolve().parent.parent / "docs" / "execution-model.md"


def main() -> None:
    DOC.write_text(replace_section(DOC.read_text(encoding="utf-8"), render()), encoding="utf-8")
    print(f"wrote the validation report into {DOC}")


if __name__ == "__main__":
    main()
