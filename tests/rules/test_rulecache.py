"""The SQL checks of rule packs done once (`rules_engine.rulecache`): a second load parses no SQL
and gives the same rules; an edited rule, a corrupt or tampered entry or an unwritable cache
folder never changes what is loaded, and a broken rule is reported from its file every time."""

from __future__ import annotations

import msgspec
import pytest

from tests.rules.test_rules_loader import rule_dict, write_rule
from trnprof import sqlparse
from trnprof.rules_engine import rulecache
from trnprof.rules_engine.loader import RuleError, builtin_dir, load_folder


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("TRNPROF_CACHE_DIR", str(folder))
    return folder


def _no_sql_parse(monkeypatch):
    def refuse(sql):
        raise AssertionError("a rule's SQL was parsed again")

    monkeypatch.setattr(sqlparse, "statements", refuse)
    monkeypatch.setattr(sqlparse, "table_names", refuse)


def test_the_builtin_packs_parse_no_sql_the_second_time(cache, monkeypatch):
    first = load_folder(builtin_dir())
    assert list((cache / "rules").iterdir()), "no cache entry was written"
    _no_sql_parse(monkeypatch)
    second = load_folder(builtin_dir())
    assert second == first and len(second) >= 20


def test_a_tampered_entry_changes_no_rule(cache, tmp_path):
    """The entry holds no rule, and a table list naming what rules may not read is not used."""
    write_rule(tmp_path / "rules", rule_dict())
    expected = load_folder(tmp_path / "rules")
    entry = rulecache.entry_path(tmp_path / "rules")
    held = msgspec.msgpack.decode(entry.read_bytes())
    held["tables"] = {digest: ["events; DROP TABLE x", "/etc/passwd"] for digest in held["tables"]}
    entry.write_bytes(msgspec.msgpack.encode(held))
    assert load_folder(tmp_path / "rules") == expected


def test_an_edited_rule_is_read_again(cache, tmp_path):
    path = write_rule(tmp_path / "rules", rule_dict())
    assert load_folder(tmp_path / "rules")[0].spec.title == "Idle steps"
    write_rule(tmp_path / "rules", rule_dict(title="Idle steps, edited"))
    assert [r.spec.title for r in load_folder(tmp_path / "rules")] == ["Idle steps, edited"]
    assert load_folder(tmp_path / "rules")[0].path == path


def test_a_broken_rule_is_reported_every_time(cache, tmp_path):
    write_rule(tmp_path / "rules", rule_dict(severity="critical"))
    for _ in range(2):
        with pytest.raises(RuleError, match="critical"):
            load_folder(tmp_path / "rules")


def test_a_corrupt_entry_is_made_again(cache, tmp_path):
    write_rule(tmp_path / "rules", rule_dict())
    expected = load_folder(tmp_path / "rules")
    entry = rulecache.entry_path(tmp_path / "rules")
    entry.write_bytes(b"\x93not msgpack")
    assert load_folder(tmp_path / "rules") == expected
    assert entry.read_bytes() != b"\x93not msgpack"


def test_an_unwritable_cache_folder_is_bypassed(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("TRNPROF_CACHE_DIR", str(blocker / "cache"))  # cannot be created
    write_rule(tmp_path / "rules", rule_dict())
    assert [r.name for r in load_folder(tmp_path / "rules")] == ["testpack.long_idle"]
    assert blocker.read_text() == "not a folder"
