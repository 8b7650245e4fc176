"""Regenerate the documentation that is generated from the code (docs/*.md), and the generated
sections of the pages written by hand."""

from pathlib import Path

from trnprof.docgen import GENERATED, SPLICED

DOCS = Path(__file__).resolve().parent.parent / "docs"


def main() -> None:
    for name, render in GENERATED.items():
        (DOCS / name).write_text(render(), encoding="utf-8")
        print(f"wrote docs/{name}")
    for name, splice in SPLICED.items():
        path = DOCS / name
        path.write_text(splice(path.read_text(encoding="utf-8")), encoding="utf-8")
        print(f"wrote the generated sections of docs/{name}")


if __name__ == "__main__":
    main()
