"""Regenerate the documentation that is generated from the code (docs/*.md)."""

from pathlib import Path

from trnprof.docgen import GENERATED

DOCS = Path(__file__).resolve().parent.parent / "docs"


def main() -> None:
    for name, render in GENERATED.items():
        (DOCS / name).write_text(render(), encoding="utf-8")
        print(f"wrote docs/{name}")


if __name__ == "__main__":
    main()
