"""The suite's markers (tests/conftest.py MARKS): a test that needs Spark, a browser or torch
carries its marker, so `bash dev.sh fast`, which leaves marked tests out, never runs one; the
table names only what exists, with registered markers only."""

from __future__ import annotations

import ast
import functools
import importlib.util
import re
import tomllib
from types import SimpleNamespace

from tests.conftest import MARKS, REPO, marks_for, pytest_collection_modifyitems

TESTS = REPO / "tests"
# what in a file's text shows that its tests need the marker's tool
USES = {
    "spark": re.compile(r"^\s*(?:import|from) pyspark\b|engines\.using\(\s*\"spark\"|\"--engine\",\s*\"spark\"", re.M),
    "browser": re.compile(r"\bplaywright\b|\bchromium\b", re.I),
    "torch": re.compile(r"(?:^|\"\"\")\s*(?:import|from) torch\b|torch\.distributed\.run", re.M),  # job text too
}
NEEDS_ROOT = re.compile(r"os\.set[ug]id\(|\[\"mount\"")
JOB_FILE = re.compile(r"\"(\w+)\" / \"(\w+\.py)\"")  # a script a test runs: `... / "examples" / "job.py"`
JOB_FOLDERS = ("examples", "tests", "bench")


def _job_texts() -> dict[tuple[str, str], str]:
    """The text of every script a test may run (test modules are not scripts), by its folder's name and its own."""
    return {
        (path.parent.name, path.name): path.read_text()
        for folder in JOB_FOLDERS
        for path in (REPO / folder).rglob("*.py")
        if not path.name.startswith("test_")
    }


def _is_fixture(node: ast.FunctionDef) -> bool:
    return any("fixture" in ast.unparse(decorator) for decorator in node.decorator_list)


@functools.cache
def _parsed(path) -> tuple[str, ast.Module]:
    text = path.read_text()
    return text, ast.parse(text)


@functools.cache
def _functions(path) -> list[ast.FunctionDef]:
    return [n for n in ast.walk(_parsed(path)[1]) if isinstance(n, ast.FunctionDef)]


@functools.cache
def _fixtures(path) -> list[tuple[ast.FunctionDef, str]]:
    """The fixtures `path` defines, with their source."""
    return [(node, ast.get_source_segment(_parsed(path)[0], node)) for node in _functions(path) if _is_fixture(node)]


def _params(node: ast.FunctionDef) -> set[str]:
    return {a.arg for a in node.args.args + node.args.kwonlyargs}


@functools.cache
def _shared_files(path) -> list:
    """The conftest.py files above `path` and the test modules it imports from (their fixtures
    reach its tests by name)."""
    conftests = [folder / "conftest.py" for folder in path.parents if folder.is_relative_to(TESTS)]
    imported = [
        REPO / (node.module.replace(".", "/") + ".py")
        for node in _parsed(path)[1].body
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tests.")
    ]
    return [f for f in conftests + imported if f.is_file()]


def _uses_through_fixtures(marker: str, path) -> bool:
    """Whether a test of `path` asks for a shared fixture that needs `marker`, however indirectly."""
    fixtures = [fixture for shared in _shared_files(path) for fixture in _fixtures(shared)]
    needing, grown = set(), True
    while grown:
        found = {node.name for node, source in fixtures if USES[marker].search(source) or _params(node) & needing}
        grown, needing = found != needing, found
    return any(_params(node) & needing for node in _functions(path))


def uses(path, jobs: dict[tuple[str, str], str]) -> set[str]:
    """The markers a test file's tests need: from its text, the scripts it runs and the shared fixtures."""
    text = _parsed(path)[0]
    scripts = [jobs[place] for place in JOB_FILE.findall(text) if place in jobs]
    return {
        marker
        for marker, pattern in USES.items()
        if any(pattern.search(t) for t in [text, *scripts]) or _uses_through_fixtures(marker, path)
    }


def _test_files():
    return sorted(TESTS.rglob("test_*.py"))


def _relative(path) -> str:
    return path.relative_to(REPO).as_posix()


def test_every_file_that_needs_spark_a_browser_or_torch_is_marked_as_a_whole():
    jobs = _job_texts()
    missing = [
        f"{_relative(path)}: {marker}"
        for path in _test_files()
        for marker in sorted(uses(path, jobs))
        if marker not in marks_for(_relative(path), "")
    ]  # "": marks of the whole file
    assert not missing, f"add these to MARKS in tests/conftest.py: {missing}"


def _marked_anywhere_in(path) -> set[str]:
    """The markers of the file, of a folder above it or of any one of its tests."""
    file = _relative(path)
    return {
        marker
        for place, markers in MARKS.items()
        for marker in markers
        if place.partition("::")[0] == file or file.startswith(place + "/")
    }


def test_a_file_that_switches_uids_or_mounts_marks_its_tests_that_need_root():
    unmarked = [
        _relative(path)
        for path in _test_files()
        if NEEDS_ROOT.search(_parsed(path)[0]) and "root" not in _marked_anywhere_in(path)
    ]
    assert not unmarked, f"mark the tests that need root in MARKS (tests/conftest.py): {unmarked}"


def test_the_checks_see_what_they_look_for():
    jobs = _job_texts()
    assert uses(TESTS / "spark" / "test_hardening_spark.py", jobs) == {"spark"}  # through the sandbox fixture
    assert uses(TESTS / "diff" / "test_diff_report.py", jobs) == {"browser"}  # a fixture imported from a test module
    assert uses(TESTS / "record" / "test_record_live.py", jobs) == {"torch"}  # the example job it runs
    assert uses(TESTS / "record" / "test_record_stack.py", jobs) == {"torch"}  # a job written from a string
    assert uses(TESTS / "spark" / "test_spark_transpile.py", jobs) == set()  # sqlglot only: no Spark session
    assert uses(TESTS / "core" / "test_dependencies.py", jobs) == set()  # names pyspark and torch, runs neither


def _registered() -> set[str]:
    options = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "--strict-markers" in options["addopts"]
    return {line.split(":")[0] for line in options["markers"]}


def test_every_place_in_the_table_exists_with_registered_markers():
    for place, markers in MARKS.items():
        where, _, name = place.partition("::")
        assert (REPO / where).exists(), f"MARKS names {where}, which does not exist"
        if name:
            assert name in {n.name for n in _functions(REPO / where)}, f"MARKS names {place}, which does not exist"
        assert set(markers) <= _registered(), place


def test_a_place_marks_what_it_holds_and_nothing_else():
    assert marks_for("tests/spark/test_spark_cli.py", "test_anything") == {"spark", "slow"}
    assert marks_for("tests/spark/test_spark_transpile.py", "test_exact_percentiles_stay_exact") == set()
    root_test = "test_a_group_writable_share_works_for_two_users"
    assert "root" in marks_for("tests/storage/test_hardening_store.py", root_test)
    assert marks_for("tests/storage/test_hardening_store.py", root_test + "_too") == set()
    assert marks_for("tests/spark/test_spark_cli.pyx", "test_anything") == set()


def test_the_fast_loop_leaves_out_every_marker():
    expression = re.search(r'-m "not \(([^)]*)\)"', (REPO / "dev.sh").read_text()).group(1)
    assert set(expression.split(" or ")) == _registered()


def test_the_collection_hook_marks_each_test_by_its_place():
    def item(path, name):
        return SimpleNamespace(path=REPO / path, originalname=name, add_marker=got.append)

    got = []
    pytest_collection_modifyitems(
        [
            item("tests/spark/test_spark_sandbox.py", "test_refused_queries"),
            item("tests/spark/test_spark_transpile.py", "test_exact_percentiles_stay_exact"),
        ]
    )
    assert got == ["slow", "spark"]


def test_slow_places_come_from_a_timed_run(tmp_path):
    """scripts/mark_slow.py: a slow call marks its function (all parameters), a slow setup (a
    module fixture) its whole file; Spark files are left to their marker."""
    spec = importlib.util.spec_from_file_location("mark_slow", REPO / "scripts" / "mark_slow.py")
    mark_slow = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mark_slow)
    log = tmp_path / "suite.log"
    log.write_text(
        "2.50s call     tests/a/test_x.py::test_big[1-2]\n"
        "0.20s call     tests/a/test_x.py::test_small\n"
        "4.00s setup    tests/a/test_y.py::test_first\n"
        "0.90s call     tests/a/test_y.py::test_first\n"
        "9.00s call     tests/spark/test_spark_cli.py::test_anything\n"
    )
    places = mark_slow.slow_places(mark_slow.durations(log), 1.0, 1.0)
    assert places == {"tests/a/test_x.py::test_big": 2.5, "tests/a/test_y.py": 4.0}
