"""docs/tutorial-first-rule.md, executed: its files are written and its commands run in order;
each command's shown output lines must appear in the real output, `[exit N]` sets the expected
exit code (0 otherwise)."""

from __future__ import annotations

import re
import shlex

from tests.conftest import REPO

TUTORIAL = REPO / "docs" / "tutorial-first-rule.md"
FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```", re.M | re.S)


def steps(text: str):
    """('file', path, content) and ('command', argv, expected lines, exit code) in order."""
    for lang, info, body in FENCE.findall(text):
        if lang == "yaml" and "file=" in info:
            yield ("file", info.split("file=", 1)[1].strip(), body)
        elif lang == "console":
            for chunk in body.split("$ ")[1:]:
                command, *shown = chunk.rstrip("\n").split("\n")
                code = next((int(line[6:-1]) for line in shown if re.fullmatch(r"\[exit \d+\]", line)), 0)
                expected = [line.strip() for line in shown if line.strip() and not line.startswith("[exit")]
                yield ("command", shlex.split(command), expected, code)


def test_the_tutorial_runs_as_written(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    done = []
    for step in steps(TUTORIAL.read_text(encoding="utf-8")):
        if step[0] == "file":
            (tmp_path / step[1]).write_text(step[2], encoding="utf-8")
            continue
        _, argv, expected, code = step
        assert argv[0] == "trnprof", f"tutorial commands are trnprof commands: {argv}"
        result = cli(*argv[1:])
        assert result.exit_code == code, f"$ {' '.join(argv)} exited {result.exit_code}:\n{result.output}"
        for line in expected:
            assert line in result.output, f"$ {' '.join(argv)}: {line!r} not in output:\n{result.output}"
        done.append(argv[1] if argv[1] != "rules" else " ".join(argv[1:3]))
    assert done == ["simulate", "rules new", "rules test", "analyze", "analyze", "analyze", "rules show"]
