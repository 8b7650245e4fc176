"""Hardening of the derived/ cache (issue 28): links are never followed or swept, entries are
checksummed, the key sees a same-size same-mtime replacement, a failed write falls back, and a
process of another trnprof version never removes the entry another one reads."""

import json
import os
import statistics
import subprocess
import threading
from pathlib import Path

import msgspec
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from trnprof import derived, open_run
from trnprof.collectors.synthetic import synthetic_run
from trnprof.derived import FOLDER
from trnprof.whatif.validate import JOB_A, simulate_job


@pytest.fixture
def run_path(tmp_path, monkeypatch):
    monkeypatch.delenv("TRNPROF_CACHE", raising=False)
    return synthetic_run(tmp_path / "runs" / "run", ranks=4, steps=3, ops_per_step=10, seed=1)


def raw_median_step_s(run_dir: Path) -> float:
    """The median step time from the raw events: a rank's step is the hull of its step events,
    cut where its next step starts; a step takes as long as its slowest rank."""
    events = pq.read_table(run_dir / "events", columns=["rank", "kind", "step", "ts", "dur"]).to_pandas()
    steps = events[events["kind"] == "step"].assign(end=lambda e: e["ts"] + e["dur"])
    hulls = steps.groupby(["rank", "step"]).agg(ts=("ts", "min"), end=("end", "max")).reset_index()
    hulls = hulls.sort_values(["rank", "ts", "step"])
    following = hulls.groupby("rank")["ts"].shift(-1).fillna(hulls["end"])
    hulls["dur"] = hulls[["end"]].assign(next=following).min(axis=1) - hulls["ts"]
    return statistics.median(hulls.groupby("step")["dur"].max()) / 1e9


def info(cli, run_dir) -> tuple[dict, str]:
    result = cli("info", run_dir, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), result.stderr


def key_folder(run_dir: Path) -> Path:
    (key,) = (p for p in (run_dir / FOLDER).iterdir() if derived.KEY_NAME.match(p.name))
    return key


def test_a_derived_link_to_the_parent_deletes_nothing_outside_the_run(run_path, cli):
    parent = run_path.parent
    sibling = synthetic_run(parent / "v1-baseline", ranks=2, steps=2, ops_per_step=4)
    keylike = parent / f"v{derived.FORMAT}-{'0' * 16}-{'1' * 16}"  # named like a cache entry
    keylike.mkdir()
    (keylike / "notes.txt").write_text("mine")

    def outside_the_run():
        return sorted(p.relative_to(parent) for p in parent.rglob("*") if run_path not in p.parents)

    before = outside_the_run()
    (run_path / FOLDER).symlink_to("..")  # as unpacked from a tarball
    for command in (["info"], ["analyze", "--format", "json"], ["check"]):
        cli(*command[:1], run_path, *command[1:])
    after = outside_the_run()
    assert after == before and (keylike / "notes.txt").read_text() == "mine"
    assert open_run(sibling).manifest["world_size"] == 2
    data, stderr = info(cli, run_path)
    assert data["step_time_s"]["median"] == pytest.approx(raw_median_step_s(run_path))
    assert stderr.count("\n") == 1 and "symbolic link" in stderr
    result = cli("check", run_path)
    assert result.exit_code == 2 and "derived is a symbolic link" in result.stderr
    result = cli("check", run_path, "--repair")
    assert result.exit_code == 0 and "removed derived" in result.stdout
    assert not (run_path / FOLDER).exists() and sibling.is_dir() and keylike.is_dir()


def test_a_planted_link_inside_the_cache_is_not_read(run_path, cli, tmp_path):
    info(cli, run_path)
    other = synthetic_run(tmp_path / "other", ranks=4, steps=3, ops_per_step=10, seed=7)
    info(cli, other)
    steps = key_folder(run_path) / "steps"
    derived.remove(steps)
    steps.symlink_to(key_folder(other) / "steps")  # checksums and all: whole, but not ours
    data, stderr = info(cli, run_path)
    assert data["step_time_s"]["median"] == pytest.approx(raw_median_step_s(run_path))
    assert raw_median_step_s(other) != pytest.approx(raw_median_step_s(run_path))
    assert (key_folder(other) / "steps").is_dir()  # the link's target is left alone


def _rewrite_steps_part(part: Path, factor: int) -> None:
    table = pq.read_table(part)
    table = table.set_column(
        table.schema.get_field_index("dur"),
        "dur",
        pc.multiply(table["dur"], factor).cast(table.schema.field("dur").type),
    )
    pq.write_table(table, part)


def test_an_edited_cache_file_is_dropped_and_recomputed_and_check_finds_it(run_path, cli):
    truth = raw_median_step_s(run_path)
    assert info(cli, run_path)[0]["step_time_s"]["median"] == pytest.approx(truth)
    _rewrite_steps_part(key_folder(run_path) / "steps" / "part-00000.parquet", 10)  # durations x10
    result = cli("check", run_path)
    assert result.exit_code == 2 and "stored view damaged" in result.stderr and "steps" in result.stderr
    data, stderr = info(cli, run_path)
    assert data["step_time_s"]["median"] == pytest.approx(truth)
    assert stderr.count("\n") == 1 and "stored view steps" in stderr and "recomputing" in stderr
    assert info(cli, run_path)[1] == ""  # recomputed and stored whole: no more warnings


def test_a_truncated_cache_file_is_recomputed_and_repair_removes_it(run_path, cli):
    truth = raw_median_step_s(run_path)
    info(cli, run_path)
    part = key_folder(run_path) / "steps" / "part-00000.parquet"
    part.write_bytes(part.read_bytes()[:100])
    result = cli("check", run_path, "--repair")
    assert result.exit_code == 0 and "removed derived/" in result.stdout and "steps" in result.stdout
    assert not (key_folder(run_path) / "steps").exists()
    assert cli("check", run_path).exit_code == 0
    part.parent.mkdir()
    part.write_bytes(b"PAR1")  # and on read, without check
    data, stderr = info(cli, run_path)
    assert data["step_time_s"]["median"] == pytest.approx(truth) and "recomputing" in stderr


def _same_size_replacement(part: Path, change) -> None:
    """Rewrite a Parquet file with `change` applied, padded to its old size (unused bytes before
    the footer, which readers reach by offsets) and given its old mtime."""
    stat = part.stat()
    pq.write_table(change(pq.read_table(part)), part, compression="zstd")
    data = part.read_bytes()
    footer = int.from_bytes(data[-8:-4], "little") + 8
    assert len(data) <= stat.st_size, "the changed file is larger than the original"
    part.write_bytes(data[:-footer] + b"\0" * (stat.st_size - len(data)) + data[-footer:])
    assert part.stat().st_size == stat.st_size
    os.utime(part, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_a_same_size_same_mtime_replacement_of_a_part_is_not_served_stale(run_path, cli):
    before = info(cli, run_path)[0]["step_time_s"]["median"]
    part = next((run_path / "events").glob("rank=0/*.parquet"))

    def slower_steps(table):
        for column in ("ts", "dur"):  # rank 0 three times slower in every step
            table = table.set_column(table.schema.get_field_index(column), column, pc.multiply(table[column], 3))
        return table

    _same_size_replacement(part, slower_steps)
    truth = raw_median_step_s(run_path)
    assert truth == pytest.approx(3 * before, rel=0.2)
    assert info(cli, run_path)[0]["step_time_s"]["median"] == pytest.approx(truth)


def test_an_entry_in_use_by_another_version_is_not_swept(run_path, monkeypatch):
    first = open_run(run_path)
    first.sql("SELECT COUNT(*) FROM step_breakdown")
    held = key_folder(run_path)
    monkeypatch.setattr(derived, "__version__", "0.0.0-other")  # another trnprof on the same run
    derived.stdlib_fingerprint.cache_clear()
    try:
        with open_run(run_path) as second:
            second.sql("SELECT COUNT(*) FROM step_breakdown")
        assert held.is_dir()  # the first process still reads it
        expected = first.sql("SELECT rank, step, dur FROM step_breakdown ORDER BY rank, step")
        first.close()
        with open_run(run_path) as third:
            assert third.sql("SELECT rank, step, dur FROM step_breakdown ORDER BY rank, step").equals(expected)
        assert not held.exists()  # swept once no process held it
    finally:
        derived.stdlib_fingerprint.cache_clear()


def test_two_versions_racing_on_one_run_never_fail(run_path, tmp_path):
    """Each of two processes alternates trnprof versions on the run; none fails to read its views."""
    script = (
        "import sys, trnprof.derived as d\n"
        "from trnprof import open_run\n"
        "for i in range(6):\n"
        "    d.__version__ = sys.argv[2] + str(i % 2); d.stdlib_fingerprint.cache_clear()\n"
        "    with open_run(sys.argv[1]) as run:\n"
        "        assert len(run.sql('SELECT * FROM event_stats')) > 0\n"
    )
    procs = [
        subprocess.Popen([os.sys.executable, "-c", script, str(run_path), tag], stderr=subprocess.PIPE)
        for tag in ("a", "b")
    ]
    errors = [p.communicate(timeout=600)[1].decode() for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errors


def _mount_tmpfs(where: Path, size: str) -> None:
    where.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True, text=True
    )
    if done.returncode:
        pytest.fail(f"this test needs a small file system to fill (mount -t tmpfs as root): {done.stderr.strip()}")


def test_a_full_disk_during_the_cache_write_falls_back_with_one_warning(tmp_path, cli, monkeypatch):
    monkeypatch.delenv("TRNPROF_CACHE", raising=False)
    disk = tmp_path / "disk"
    _mount_tmpfs(disk, "8m")
    try:
        run_dir = simulate_job(JOB_A, "A", disk / "run")
        filler = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT)
        try:  # fill what is left
            while os.write(filler, b"\1" * 4096):
                pass
        except OSError:
            pass
        finally:
            os.close(filler)
        monkeypatch.setenv("TRNPROF_CACHE", "off")
        expected = cli("analyze", run_dir, "--format", "json")
        monkeypatch.delenv("TRNPROF_CACHE")
        for command in (["analyze", "--format", "json"], ["whatif", "--set", "nodes=2", "--format", "json"]):
            result = cli(command[0], run_dir, *command[1:])
            assert result.exit_code == 0, result.output
            assert result.stderr.count("\n") == 1 and "cannot write the cache" in result.stderr
        result = cli("analyze", run_dir, "--format", "json")
        assert json.loads(result.stdout)["findings"] == json.loads(expected.stdout)["findings"]
    finally:
        subprocess.run(["umount", str(disk)], check=True)


# Issue 34: every cache read is a bounded regular file, locks never open a FIFO, and a cache entry
# whoever can write the cache folder plants cannot change what trnprof does.


def finishes(work, fifos, seconds: float = 60):
    """work()'s result; fails when it is still running after `seconds` (blocked on one of `fifos`,
    which are then opened for writing so that the blocked reader returns and the test ends)."""
    outcome = {}
    worker = threading.Thread(target=lambda: outcome.setdefault("value", work()), daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        for fifo in fifos:
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
        worker.join(30)
        pytest.fail(f"still running after {seconds} s: blocked on a FIFO")
    return outcome["value"]


def fifo(path: Path) -> Path:
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    return path


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "user-cache"
    monkeypatch.setenv("TRNPROF_CACHE_DIR", str(folder))
    return folder


@pytest.fixture
def findings_run(tmp_path, monkeypatch):
    """A run on which the built-in rules find something (rank 2 is slow)."""
    monkeypatch.delenv("TRNPROF_CACHE", raising=False)
    return synthetic_run(tmp_path / "runs" / "slow", ranks=4, steps=3, ops_per_step=10, slow_rank=2, seed=1)


def _tampered(value, fake_sql: str):
    """`value` with every `sql` text replaced by `fake_sql` and every list of names emptied."""
    if isinstance(value, dict):
        return {k: fake_sql if k == "sql" and isinstance(v, str) else _tampered(v, fake_sql) for k, v in value.items()}
    if isinstance(value, list):
        return [] if value and all(isinstance(v, str) for v in value) else [_tampered(v, fake_sql) for v in value]
    return value


def _analyze_json(cli, run):
    result = cli("analyze", run, "--fail-on", "low", "--format", "json")
    return result, json.loads(result.stdout)


def test_a_tampered_rules_cache_does_not_silence_the_builtin_rules(findings_run, cli, cache):
    result, clean = _analyze_json(cli, findings_run)
    assert result.exit_code == 1 and clean["findings"]
    entries = list((cache / "rules").iterdir())
    assert entries
    for entry in entries:  # what the issue did: every rule's SQL a query that returns nothing
        held = msgspec.msgpack.decode(entry.read_bytes())
        entry.write_bytes(msgspec.msgpack.encode(_tampered(held, "SELECT 1 AS x WHERE false")))
    result, tampered = _analyze_json(cli, findings_run)
    assert result.exit_code != 0, "the tampered cache silenced the rules"
    if result.exit_code == 1:
        assert [f["name"] for f in tampered["findings"]] == [f["name"] for f in clean["findings"]]
    else:  # a table list emptied: the rules fail loudly, each named
        assert result.exit_code == 2 and tampered["errors"] and "rule(s) failed" in result.stderr


def test_the_rules_cache_entry_cannot_replace_a_rule(findings_run, cli, cache):
    """The issue's attack on the cache as it stands: it holds no rule text to replace."""
    _analyze_json(cli, findings_run)
    for entry in (cache / "rules").iterdir():
        held = msgspec.msgpack.decode(entry.read_bytes())
        entry.write_bytes(
            msgspec.msgpack.encode(_tampered(held, "SELECT 1 AS x WHERE false") | {"tables": held["tables"]})
        )
    result, tampered = _analyze_json(cli, findings_run)
    assert result.exit_code == 1 and tampered["findings"] and not tampered["errors"]


def test_a_fifo_rules_cache_entry_does_not_hang_analyze(findings_run, cli, cache):
    _analyze_json(cli, findings_run)
    planted = [fifo(entry) for entry in (cache / "rules").iterdir()]
    result = finishes(lambda: cli("analyze", findings_run, "--fail-on", "low"), planted)
    assert result.exit_code == 1
    assert [line for line in result.stderr.splitlines() if "cache entry" in line] == [
        f"warning: cache entry {entry} is not a regular file: not used" for entry in planted
    ]


def test_a_rules_cache_entry_larger_than_its_bound_is_not_read(cache, tmp_path):
    from trnprof.rules_engine import loader, rulecache

    expected = loader.load_folder(loader.builtin_dir())
    entry = rulecache.entry_path(loader.builtin_dir())
    with open(entry, "r+b") as handle:  # sparse: no disk used
        handle.truncate(rulecache.MAX_ENTRY_BYTES + 1)
    assert loader.load_folder(loader.builtin_dir()) == expected
    assert entry.stat().st_size < rulecache.MAX_ENTRY_BYTES  # made again


def test_cache_reads_follow_no_link_and_read_no_device(tmp_path, capsys):
    from trnprof import cachedir

    zero = tmp_path / "entry"
    zero.symlink_to("/dev/zero")
    assert cachedir.read_entry(zero, 1024) is None
    assert capsys.readouterr().err == f"warning: cache entry {zero} is a symbolic link: not used\n"
    with pytest.raises(cachedir.NotRegular, match="symbolic link"):
        cachedir.read_regular(zero, 1024)
    with pytest.raises(cachedir.NotRegular, match="not a regular file"):
        cachedir.read_regular(Path("/dev/zero"), 1024)
    assert finishes(lambda: cachedir.read_entry(fifo(tmp_path / "fifo"), 1024), [tmp_path / "fifo"]) is None
    assert cachedir.read_entry(tmp_path / "missing", 1024) is None


def test_a_planted_or_fifo_chart_bundle_is_never_put_in_a_report(cache):
    from trnprof import cachedir
    from trnprof.report import vega

    path = cache / "vega-bundle-signed-test.js"
    assert vega._cached(path, lambda: "made") == "made"
    assert vega._cached(path, lambda: pytest.fail("made again")) == "made"  # signed: used
    path.write_bytes(b"\0" * 32 + b"window.evil = 1")  # planted: no valid HMAC
    assert vega._cached(path, lambda: "made") == "made"
    fifo(path)
    assert finishes(lambda: vega._cached(path, lambda: "made"), [path]) == "made"
    path.unlink()
    path.symlink_to("/dev/zero")
    assert vega._cached(path, lambda: "made") == "made"
    assert (cache / cachedir.SECRET_FILE).stat().st_mode & 0o777 == 0o600


def test_a_secret_others_can_read_or_replace_signs_nothing(cache, capsys):
    from trnprof import cachedir

    assert cachedir.sign("entry", b"x") is not None
    secret = cache / cachedir.SECRET_FILE
    secret.chmod(0o644)
    assert cachedir.sign("entry", b"x") is None and cachedir.verified("entry", b"\0" * 33) is None
    secret.unlink()
    secret.symlink_to(cache / "elsewhere")
    assert cachedir.sign("entry", b"x") is None
    assert "mode 0600" in capsys.readouterr().err


def test_a_fifo_lock_in_the_run_cache_hangs_no_command(run_path, cli):
    info(cli, run_path)
    ours = fifo(key_folder(run_path) / derived.LOCK)
    foreign = run_path / FOLDER / f"v{derived.FORMAT}-{'0' * 16}-{'1' * 16}"  # swept by the next open
    foreign.mkdir()
    theirs = fifo(foreign / derived.LOCK)
    data, stderr = finishes(lambda: info(cli, run_path), [ours, theirs])
    assert data["step_time_s"]["median"] == pytest.approx(raw_median_step_s(run_path))
    assert stderr.splitlines() == [
        f"warning: {ours} is not a regular file: trnprof does not use it and works "
        "without the cache (`trnprof check --repair` removes it)"
    ]
    result = finishes(lambda: cli("check", run_path), [ours, theirs])
    assert result.exit_code == 2 and f"{ours.relative_to(run_path)} is not a regular file" in result.stderr
    result = finishes(lambda: cli("check", run_path, "--repair"), [ours, theirs])
    assert result.exit_code == 0 and not ours.exists() and not theirs.exists()
    assert info(cli, run_path)[1] == ""


def test_a_fifo_checksum_list_is_a_damaged_entry(run_path, cli):
    info(cli, run_path)
    view = next(p for p in key_folder(run_path).iterdir() if p.is_dir())
    planted = fifo(view / derived.CHECKSUMS)
    data, stderr = finishes(lambda: info(cli, run_path), [planted])
    assert data["step_time_s"]["median"] == pytest.approx(raw_median_step_s(run_path))
    assert f"stored view {view.name} of" in stderr and "not a regular file" in stderr
