"""`trnprof analyze TRACE`: a trace given where a run is expected is ingested in the same process
and analyzed as its run would be; the run is kept (the user's cache, or --run-dir) and found
again by the trace's content; an unwritable cache never fails the command."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile

import pytest

from tests.conftest import KINETO

TRACE = KINETO / "trace_filter" / "sampled_rank-0.json.gz"  # a real Kineto trace (HTA test data, MIT)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("TRNPROF_CACHE_DIR", str(folder))
    return folder


def _verdict(document: dict) -> dict:
    """What the analysis found, without where the run is and how long it took."""
    return {
        "findings": document["findings"],
        "not_evaluated": document["not_evaluated"],
        "errors": document["errors"],
        "steps": document["steps"],
        "warmup_steps": document["warmup_steps"],
        "mean_step_s": document["mean_step_s"],
    }


def _analyze(cli, *args):
    done = cli("analyze", *args, "--format", "json")
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout), done.stderr


def test_a_trace_is_analyzed_as_its_ingested_run_would_be(cli, cache, tmp_path):
    assert cli("ingest", TRACE, "-o", tmp_path / "run").exit_code == 0
    expected, _ = _analyze(cli, tmp_path / "run")
    document, said = _analyze(cli, TRACE)
    assert _verdict(document) == _verdict(expected) and expected["findings"]
    assert f"ingested {TRACE} into {cache / 'runs'}" in said
    kept = json.loads((cache / "runs" / document["run"].rsplit("/", 1)[1] / "trnprof.json").read_text())
    assert kept["source"]["inputs"][0]["sha256"] == hashlib.sha256(TRACE.read_bytes()).hexdigest()


def test_the_same_trace_again_opens_the_kept_run(cli, cache, tmp_path):
    first, said = _analyze(cli, TRACE)
    assert "ingested" in said
    manifest = (cache / "runs").glob("*/trnprof.json").__next__()
    written = manifest.stat().st_mtime_ns
    copy = tmp_path / "elsewhere" / TRACE.name  # the same bytes under another folder: the same run
    copy.parent.mkdir()
    shutil.copyfile(TRACE, copy)
    second, said = _analyze(cli, copy)
    assert "ingested" not in said and second["run"] == first["run"]
    assert manifest.stat().st_mtime_ns == written and _verdict(second) == _verdict(first)


def test_a_changed_trace_is_ingested_again(cli, cache, tmp_path):
    events = json.loads(gzip.decompress(TRACE.read_bytes()))
    trace = tmp_path / TRACE.name
    trace.write_bytes(gzip.compress(json.dumps(events).encode()))
    first, _ = _analyze(cli, trace)
    events["traceEvents"] = [e for e in events["traceEvents"] if not str(e.get("name", "")).startswith("ProfilerStep")]
    trace.write_bytes(gzip.compress(json.dumps(events).encode()))
    second, said = _analyze(cli, trace)
    assert "ingested" in said and second["run"] != first["run"]
    assert len(list((cache / "runs").iterdir())) == 2


def test_run_dir_keeps_the_run_there_and_refuses_another_runs_folder(cli, cache, tmp_path):
    document, said = _analyze(cli, TRACE, "--run-dir", tmp_path / "mine")
    assert document["run"] == str(tmp_path / "mine") and (tmp_path / "mine" / "trnprof.json").is_file()
    assert not (cache / "runs").exists()
    again, said = _analyze(cli, TRACE, "--run-dir", tmp_path / "mine")
    assert "ingested" not in said and _verdict(again) == _verdict(document)
    other = KINETO / "trace_filter" / "sampled_rank-1.json.gz"
    done = cli("analyze", other, "--run-dir", tmp_path / "mine")
    assert done.exit_code == 2 and "not a run of these traces" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_run_dir_is_refused_for_a_run(cli, sample_run, tmp_path):
    done = cli("analyze", sample_run, "--run-dir", tmp_path / "x")
    assert done.exit_code == 2 and "is a run" in done.stderr and not (tmp_path / "x").exists()


def test_an_unwritable_cache_is_bypassed_and_leaves_nothing(cli, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("TRNPROF_CACHE_DIR", str(blocker / "cache"))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    document, said = _analyze(cli, TRACE)
    assert "warning: the cache folder" in said and "for this command only" in said
    assert document["findings"] and list(scratch.iterdir()) == []
    assert blocker.read_text() == "not a folder"


def test_a_file_that_is_no_trace_is_one_error_line(cli, cache, tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_text("hello")
    done = cli("analyze", bad)
    assert done.exit_code == 2 and "not a trace trnprof knows" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (cache / "runs").exists()


def test_analyze_of_a_run_loads_no_ingest_code(sample_run, tmp_path):
    """Taking traces costs `analyze RUN` nothing: the ingest loads only for a trace."""
    probe = (
        "import sys\nfrom trnprof.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "print('INGEST', sorted(m for m in sys.modules if m.startswith('trnprof.collectors.ingest')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, "analyze", str(sample_run), "-o", str(tmp_path / "f.txt")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert (tmp_path / "f.txt").read_text() and done.stdout.strip().splitlines()[-1] == "INGEST []"


def test_a_damaged_run_in_the_cache_is_made_again(cli, cache):
    first, _ = _analyze(cli, TRACE)
    manifest = next((cache / "runs").glob("*/trnprof.json"))
    manifest.write_text("{not json")
    second, said = _analyze(cli, TRACE)
    assert "ingested" in said and second["run"] == first["run"] and _verdict(second) == _verdict(first)


def test_a_link_at_the_caches_key_is_never_followed_or_removed(cli, cache, tmp_path):
    first, _ = _analyze(cli, TRACE)
    kept = next((cache / "runs").glob("*/trnprof.json")).parent
    shutil.rmtree(kept)
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "data.txt").write_text("keep me")
    kept.symlink_to(theirs)
    second, said = _analyze(cli, TRACE)
    assert "is not a folder trnprof made" in said and _verdict(second) == _verdict(first)
    assert kept.is_symlink() and [p.name for p in theirs.iterdir()] == ["data.txt"]


def test_a_folder_of_per_rank_traces_is_one_run(cli, cache, tmp_path):
    folder = tmp_path / "job"
    folder.mkdir()
    for rank in (0, 1):
        shutil.copyfile(
            KINETO / "trace_filter" / f"sampled_rank-{rank}.json.gz", folder / f"sampled_rank-{rank}.json.gz"
        )
    assert cli("ingest", folder, "-o", tmp_path / "run").exit_code == 0
    expected, _ = _analyze(cli, tmp_path / "run")
    document, said = _analyze(cli, folder)
    assert "ingested" in said and _verdict(document) == _verdict(expected)
    ranks = json.loads((cache / "runs" / document["run"].rsplit("/", 1)[1] / "trnprof.json").read_text())
    assert sorted(f["rank"] for f in ranks["ingest"]["files"]) == [0, 1]
