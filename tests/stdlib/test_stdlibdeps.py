"""The stdlib views' reads, parsed once per installation (`trnprof/stdlibdeps.py`)."""

from __future__ import annotations

import duckdb

from trnprof import cachedir, stdlib, stdlibdeps

VIEWS = [
    ("a", "CREATE VIEW a AS SELECT * FROM events"),
    ("b", "CREATE VIEW b AS SELECT * FROM a JOIN ranks USING (rank)"),
]
NAMES = {"a", "b", "events", "ranks"}


def _parse(calls: list):
    def parse():
        calls.append(1)
        return {"a": frozenset({"events"}), "b": frozenset({"a", "ranks"})}

    return parse


def test_parsed_once_then_read_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRNPROF_CACHE_DIR", str(tmp_path))
    calls = []
    first = stdlibdeps.cached(VIEWS, NAMES, _parse(calls))
    second = stdlibdeps.cached(VIEWS, NAMES, _parse(calls))
    assert first == second == {"a": frozenset({"events"}), "b": frozenset({"a", "ranks"})}
    assert len(calls) == 1


def test_changed_sql_or_names_parse_again(tmp_path, monkeypatch):
    monkeypatch.setenv("TRNPROF_CACHE_DIR", str(tmp_path))
    calls = []
    stdlibdeps.cached(VIEWS, NAMES, _parse(calls))
    stdlibdeps.cached([VIEWS[0], ("b", VIEWS[1][1] + " WHERE true")], NAMES, _parse(calls))
    stdlibdeps.cached(VIEWS, NAMES | {"counters"}, _parse(calls))
    assert len(calls) == 3


def test_an_entry_not_signed_by_this_installation_is_not_used(tmp_path, monkeypatch, capsys):
    """Whoever can write the cache folder cannot change how views are batched."""
    monkeypatch.setenv("TRNPROF_CACHE_DIR", str(tmp_path))
    calls = []
    stdlibdeps.cached(VIEWS, NAMES, _parse(calls))
    (entry,) = (tmp_path / "stdlib").iterdir()
    (tmp_path / cachedir.SECRET_FILE).unlink()  # a planted entry: signed under another secret
    cachedir.secret()
    assert stdlibdeps.cached(VIEWS, NAMES, _parse(calls))["b"] == frozenset({"a", "ranks"})
    assert len(calls) == 2
    entry.write_bytes(b"garbage")
    stdlibdeps.cached(VIEWS, NAMES, _parse(calls))
    assert len(calls) == 3


def test_an_unwritable_cache_folder_is_no_error(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("TRNPROF_CACHE_DIR", str(tmp_path / "file"))
    assert stdlibdeps.cached(VIEWS, NAMES, _parse([]))["a"] == frozenset({"events"})


def test_the_cached_dependencies_are_duckdbs_parse(tmp_path, monkeypatch):
    monkeypatch.setenv("TRNPROF_CACHE_DIR", str(tmp_path))
    stdlib.dependencies.cache_clear()
    try:
        stdlib.dependencies()  # parsed and kept
        stdlib.dependencies.cache_clear()
        cached = stdlib.dependencies()  # read back
        names = (
            {view.name for view in stdlib.load_views()} | {"events", "counters", "ranks"} | set(stdlib.DEVICE_TABLES)
        )
        for view in stdlib.load_views():
            parsed = {n for n in duckdb.get_table_names(stdlib._read_tables_sql(view.sql)) if n in names}
            assert cached[view.name] == parsed, view.name
        assert (tmp_path / "stdlib").is_dir()
    finally:
        stdlib.dependencies.cache_clear()
