"""The repository is self-contained: no code, test, doc or rule refers to files outside it (the
folders it was once developed beside), so a plain clone with nothing beside it is complete."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import REPO

TEXT = {".py", ".md", ".yaml", ".yml", ".sql", ".toml", ".sh", ".j2", ".css", ".txt", ".cfg", ".csv"}
SKIP = {".git", ".venv", "__pycache__", ".pytest_cache", ".hypothesis", "build", "dist", "artifacts", "trnprof-demo"}
OUTSIDE = re.compile(r"\.\./" + "shared|/work/|(?<![\\w-])" + r"shared/(?:traces|trn1|formats|DESIGN)")


def _text_files():
    for path in REPO.rglob("*"):
        parts = set(path.relative_to(REPO).parts)
        skipped = parts & SKIP or any(p.endswith(".egg-info") for p in parts)
        if path.suffix in TEXT and path.is_file() and path != Path(__file__) and not skipped:
            yield path


def test_nothing_refers_to_files_outside_the_repository():
    found = [
        f"{path.relative_to(REPO)}:{n}: {line.strip()}"
        for path in _text_files()
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert found == []


def _path(*parts: str) -> str:
    """A sample path for the pattern, joined here so this file holds no such path itself."""
    return "/".join(parts)


def test_the_pattern_catches_what_it_should():
    beside = "sha" + "red"
    assert OUTSIDE.search("see " + _path("..", beside, "DESIGN.md"))
    assert OUTSIDE.search(_path("", "work", "main", "x"))
    assert OUTSIDE.search("`" + _path(beside, "traces", "kineto") + "`")
    assert not OUTSIDE.search(beside + " by its 2 NeuronCores")
