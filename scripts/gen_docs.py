"""Regenerate every doc generated from the code: the pages of docs/ made whole (run format,
stdlib, CLI, hardware), the generated sections of pages written by hand (the layer map in
docs/architecture.md) and the rule reference in docs/rules/ (`trnprof rules docs`).
`bash dev.sh docs` runs it; the tests fail when a generated doc drifts."""

from pathlib import Path

from trnprof import api
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
    for path in api.rule_docs(DOCS / "rules")["written"]:
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
