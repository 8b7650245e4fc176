"""The stdlib's view registry: each `stdlib/*.sql` module names the modules it reads in its
`-- @requires` header, and the load order follows from those headers."""

from importlib import resources

import pytest

from trnprof import stdlib
from trnprof.errors import TrnprofError


def _texts() -> dict[str, str]:
    package = resources.files("trnprof") / "stdlib"
    return {
        entry.name.removesuffix(".sql"): entry.read_text(encoding="utf-8")
        for entry in package.iterdir()
        if entry.name.endswith(".sql")
    }


def test_each_header_names_exactly_the_modules_its_sql_reads():
    module_of = {view.name: view.module for view in stdlib.load_views()}
    read = {module: set() for module in _texts()}
    for name, reads in stdlib.dependencies().items():
        read[module_of[name]] |= {module_of[n] for n in reads if n in module_of} - {module_of[name]}
    declared = {module: set(stdlib.requires(text)) for module, text in _texts().items()}
    assert declared == read


def test_every_view_comes_after_the_views_it_reads():
    loaded = set()
    for name, reads in stdlib.dependencies().items():  # in load order
        assert {n for n in reads if n in stdlib.dependencies()} <= loaded, name
        loaded.add(name)


def test_upstream_is_every_view_a_view_reads_directly_or_not():
    found = stdlib.upstream(["step_breakdown", "events", "no_such_view"])  # tables and unknown names: no views
    assert {"step_breakdown", "steps", "recorded_steps", "device_segments", "_swept", "_sweep_points"} <= found
    assert "collectives" not in found and "events" not in found and "no_such_view" not in found
    deps = stdlib.dependencies()
    for name in found:  # closed: whatever a found view reads is found
        assert {n for n in deps[name] if n in deps} <= found, name


def test_every_module_is_loaded_once():
    modules = list(dict.fromkeys(view.module for view in stdlib.load_views()))
    assert sorted(modules) == sorted(_texts())
    assert len(stdlib.load_views()) == len({view.name for view in stdlib.load_views()})


def test_a_module_loads_after_those_it_requires_the_most_used_first():
    order = stdlib.module_order({"z_base": (), "a_leaf": ("mid",), "mid": ("z_base",), "lone": ()})
    assert order == ["z_base", "mid", "a_leaf", "lone"]  # z_base: two build on it; then ties by name
    assert order.index("z_base") < order.index("mid") < order.index("a_leaf")


def test_a_new_module_is_one_file_loaded_after_what_it_requires():
    texts = _texts() | {
        "aaa_new": "-- @requires step_breakdown\n\n-- Mean compute per step.\n"
        "-- @column compute  mean compute time, ns\n"
        "CREATE VIEW aaa_mean AS SELECT AVG(compute) AS compute FROM step_breakdown;\n"
    }
    views = stdlib.load_modules(texts)
    names = [view.name for view in views]
    assert names.index("step_breakdown") < names.index("aaa_mean")
    new = views[names.index("aaa_mean")]
    assert (new.module, new.doc) == ("aaa_new", "Mean compute per step.")
    assert new.columns == {"compute": "mean compute time, ns"}


def test_a_missing_requirement_is_one_line_naming_the_file():
    texts = {
        "steps": "CREATE VIEW steps AS SELECT 1 AS step;\n",
        "extra": "-- @requires steps, stepz\nCREATE VIEW extra AS SELECT * FROM stepz;\n",
    }
    with pytest.raises(TrnprofError) as error:
        stdlib.load_modules(texts)
    assert str(error.value) == (
        "stdlib module extra.sql requires stepz, which no stdlib/*.sql module is (modules: extra, steps)"
    )


def test_modules_that_require_each_other_are_one_line_naming_the_cycle():
    with pytest.raises(TrnprofError, match=r"require each other: b\.sql -> c\.sql -> b\.sql$"):
        stdlib.module_order({"a": ("b",), "b": ("c",), "c": ("b",), "d": ()})
    with pytest.raises(TrnprofError, match=r"require each other: a\.sql -> a\.sql$"):
        stdlib.module_order({"a": ("a",)})


def test_the_header_is_read_from_its_lines_and_kept_out_of_the_first_views_doc():
    text = "-- @requires a, b\n-- @requires c\n\n-- about v\nCREATE VIEW v AS SELECT 1 AS x;\n"
    assert stdlib.requires(text) == ("a", "b", "c")
    assert [view.doc for view in stdlib.parse_module("m", text)] == ["about v"]
    assert stdlib.requires("-- no header\nCREATE VIEW v AS SELECT 1 AS x;\n") == ()
