"""Write tests/slow.txt, the tests `bash dev.sh fast` leaves out for their time, from a run of the
whole suite with `--durations=0`:

    bash dev.sh test -n 0 -p no:cacheprovider --durations=0 > /tmp/suite.log; python scripts/mark_slow.py /tmp/suite.log

A test whose call took at least --call seconds is slow (by its function: all its parameters); a
file in which a test's setup took at least --setup seconds (a module fixture: the next test
would pay it) is slow as a whole. Tests already marked spark, browser or torch are left out of
the list (the fast loop leaves them out anyway)."""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from tests.conftest import marks_for  # noqa: E402  (the repository's own tests)

SLOW_ANYWAY = {"spark", "browser", "torch"}  # markers the fast loop leaves out already
LINE = re.compile(r"^([\d.]+)s (call|setup|teardown)\s+(\S+)$")


def durations(log: Path) -> dict[str, dict[str, float]]:
    """test id -> {phase: seconds}."""
    found: dict[str, dict[str, float]] = defaultdict(dict)
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        match = LINE.match(line.strip())
        if match:
            found[match.group(3)][match.group(2)] = float(match.group(1))
    return found


def slow_places(found: dict[str, dict[str, float]], call_s: float, setup_s: float) -> dict[str, float]:
    """place (a file, or file::function) -> the seconds that make it slow."""
    files: dict[str, float] = {}
    functions: dict[str, float] = defaultdict(float)
    for test, phases in found.items():
        path, _, rest = test.partition("::")
        if phases.get("setup", 0) >= setup_s:
            files[path] = max(files.get(path, 0), phases["setup"])
        if phases.get("call", 0) >= call_s:
            function = re.sub(r"\[.*$", "", rest.split("::")[-1])
            functions[f"{path}::{function}"] += phases["call"]
    places = dict(files)
    places.update({place: s for place, s in functions.items() if place.partition("::")[0] not in files})
    return {place: s for place, s in places.items() if not _marked_anyway(place)}


def _marked_anyway(place: str) -> bool:
    path, _, function = place.partition("::")
    return bool(marks_for(path, function) & SLOW_ANYWAY)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("log", type=Path)
    parser.add_argument("--call", type=float, default=1.0, help="seconds of a test's call (default 1)")
    parser.add_argument("--setup", type=float, default=1.0, help="seconds of a test's setup (default 1)")
    args = parser.parse_args()
    places = slow_places(durations(args.log), args.call, args.setup)
    lines = [
        "# Tests `bash dev.sh fast` leaves out for their time (marker `slow`): a file or file::function a line,",
        f"# with the seconds measured. Made by scripts/mark_slow.py (call >= {args.call} s, setup >= {args.setup} s).",
        *(f"{place}  # {seconds:.1f} s" for place, seconds in sorted(places.items())),
    ]
    (REPO / "tests" / "slow.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote tests/slow.txt: {len(places)} places")


if __name__ == "__main__":
    main()
