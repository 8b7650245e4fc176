"""Runs the Trn1 execution model writes: tables, manifest, predictions, CLI."""

import json

import pytest

from trnprof.api import open_run
from trnprof.collectors.trn1 import demo_config, load_config, simulate, summary
from trnprof.manifest import read_manifest

GIB = 1 << 30
SMALL = ["cluster.instance=trn1.32xlarge", "parallel.tp=2", "batch.global=64", "batch.micro=2", "run.steps=3"]


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    cfg = load_config(preset="tiny", overrides=SMALL)
    return cfg, simulate(cfg, tmp_path_factory.mktemp("runs") / "small")


def test_summary_equals_the_full_simulation_and_info_agrees(small_run):
    cfg, path = small_run
    manifest = read_manifest(path)
    assert manifest["predictions"] == summary(cfg)
    assert set(summary(cfg)) >= {"step_time_s", "throughput", "mfu", "hbm_peak_bytes", "fits"}
    with open_run(path) as run:
        info = run.info()
    predicted = manifest["predictions"]
    assert info["throughput"]["unit"] == "seq/s" == predicted["throughput"]["unit"]
    assert info["throughput"]["value"] == pytest.approx(predicted["throughput"]["value"], rel=0.03)
    assert info["mfu"] == pytest.approx(predicted["mfu"], rel=0.03)


def test_manifest_job_keys(small_run):
    _, path = small_run
    job = read_manifest(path)["job"]
    assert job["samples_per_step"] == 64 and job["throughput_unit"] == "seq/s"
    assert job["peak_flops_per_s"] == 16 * 190e12
    assert job["model_flops_per_step"] > 0 and job["parallelism"] == {
        "tp": 2,
        "pp": 1,
        "dp": 16,
        "sequence_parallel": True,
        "zero1": False,
        "microbatches": 2,
    }
    assert read_manifest(path)["config"]["batch"]["global"] == 64


def test_events_fill_the_canonical_columns(small_run):
    _, path = small_run
    with open_run(path) as run:
        kinds = set(run.sql("SELECT DISTINCT kind FROM events")["kind"])
        assert kinds == {"compute", "collective", "transfer", "host", "step", "compile"}  # no input wait here
        steps = run.sql("SELECT rank, step, COUNT(*) AS n FROM events WHERE kind = 'step' GROUP BY ALL")
        assert len(steps) == 32 * 3 and (steps["n"] == 1).all()
        assert (
            run.sql("SELECT COUNT(*) FROM events WHERE kind = 'compute' AND (flops IS NULL OR phase IS NULL)").iloc[
                0, 0
            ]
            == 0
        )
        colls = run.sql("SELECT * FROM events WHERE kind = 'collective'")
        assert colls[["coll_op", "coll_group", "coll_seq", "coll_ranks", "bytes"]].notna().all().all()
        assert set(colls["coll_op"]) == {"all_gather", "reduce_scatter", "all_reduce"}
        matched = run.sql(
            "SELECT MIN(ranks_seen) AS lo, MAX(ranks_seen) AS hi, MIN(group_size) AS g FROM collectives "
            "WHERE coll_group LIKE 'tp:%'"
        ).iloc[0]
        assert matched["lo"] == matched["hi"] == matched["g"] == 2
        assert run.sql("SELECT COUNT(*) FROM events WHERE kind = 'compile' AND step = 0").iloc[0, 0] == 32
        phases = set(run.sql("SELECT DISTINCT phase FROM events WHERE kind = 'compute'")["phase"])
        assert phases == {"fwd", "bwd", "opt"}


def test_counters_and_ranks(small_run):
    _, path = small_run
    with open_run(path) as run:
        names = set(run.sql("SELECT DISTINCT name FROM counters")["name"])
        assert names == {
            "hbm.params",
            "hbm.grads",
            "hbm.optimizer_state",
            "hbm.activations",
            "hbm.runtime",
            "input.queue_depth",
        }
        per_ts = run.sql("SELECT rank, ts, COUNT(*) AS n FROM counters WHERE name LIKE 'hbm.%' GROUP BY ALL")
        assert (per_ts["n"] == 5).all() and len(per_ts) == 32 * 3 * 3
        ranks = run.sql("SELECT * FROM ranks ORDER BY rank")
        assert (ranks["rank"] == ranks["dp_rank"] * 2 + ranks["tp_rank"]).all()
        assert (ranks["chip"] == ranks["rank"] // 2).all() and (ranks["hbm_capacity_bytes"] == 16 * GIB).all()
        peak = run.sql("SELECT MAX(peak_bytes) FROM memory_peak").iloc[0, 0]
        assert peak == pytest.approx(read_manifest(path)["predictions"]["hbm_peak_bytes"], rel=1e-6)


def test_a_job_that_does_not_fit_is_flagged_with_an_event(tmp_path):
    cfg = load_config(preset="tiny", overrides=["run.steps=3", "faults=[{kind: memory_leak, bytes_per_step: 9.0e9}]"])
    path = simulate(cfg, tmp_path / "leak")
    manifest = read_manifest(path)
    assert manifest["fits"] is False and manifest["predictions"]["fits"] is False
    with open_run(path) as run:
        oom = run.sql("SELECT rank, step, bytes FROM events WHERE kind = 'memory' AND name = 'oom_risk'")
        assert sorted(oom["rank"]) == [0, 1] and set(oom["step"]) == {2}
        runtime = run.sql(
            "SELECT step, MAX(value) AS v FROM counters c JOIN steps s ON c.rank = s.rank "
            "AND c.ts >= s.ts AND c.ts < s.end_ts WHERE name = 'hbm.runtime' GROUP BY step ORDER BY step"
        )
        assert list(runtime["v"].diff().dropna().round()) == [9e9, 9e9]
    assert not summary(load_config(preset="llama2-7b", overrides=["parallel.tp=1"]))["fits"]


def test_recompile_fault_compiles_again(tmp_path):
    cfg = load_config(preset="tiny", overrides=["run.steps=5", "faults=[{kind: recompile, every: 2}]"])
    with open_run(simulate(cfg, tmp_path / "re")) as run:
        steps = run.sql("SELECT DISTINCT step FROM events WHERE kind = 'compile' ORDER BY step")["step"]
        assert list(steps) == [0, 2, 4]
        assert run.sql("SELECT SUM(compile) FROM step_breakdown WHERE step = 2").iloc[0, 0] > 0


def test_vision_models_report_images_per_second(tmp_path):
    cfg = load_config(
        preset="vit-base",
        overrides=[
            "cluster.instance=trn1.2xlarge",
            "batch.global=16",
            "batch.micro=8",
            "run.steps=2",
            "model.layers=2",
        ],
    )
    with open_run(simulate(cfg, tmp_path / "vit")) as run:
        assert run.info()["throughput"]["unit"] == "img/s"


def test_demo_config_has_a_visible_input_bottleneck(tmp_path):
    with open_run(simulate(demo_config(), tmp_path / "demo")) as run:
        share = run.sql("SELECT SUM(input_wait) / SUM(dur) FROM steady_breakdown").iloc[0, 0]
    assert share > 0.3


def test_existing_output_needs_overwrite(small_run, tmp_path):
    cfg, path = small_run
    from trnprof.errors import TrnprofError

    with pytest.raises(TrnprofError, match="output exists"):
        simulate(cfg, path)


def test_cli_simulate_summary_and_presets(cli, tmp_path):
    out = tmp_path / "cli"
    result = cli("simulate", "--preset", "tiny", "-o", str(out), "--steps", "2", "--seed", "4")
    assert result.exit_code == 0, result.output
    assert "wrote" in result.output and read_manifest(out)["config"]["run"]["seed"] == 4
    info = json.loads(cli("info", str(out), "--format", "json").output)
    assert info["throughput"]["unit"] == "seq/s" and info["mfu"] > 0
    summ = cli("simulate", "--preset", "llama2-7b", "--set", "cluster.nodes=64", "--summary-only", "--format", "json")
    doc = json.loads(summ.output)
    assert set(doc) >= {"step_time_s", "throughput", "mfu", "hbm_peak_bytes", "fits"}
    assert doc["throughput"]["unit"] == "seq/s"
    listed = json.loads(cli("simulate", "--list-presets", "--format", "json").output)
    assert "llama2-70b" in listed["model"] and "gpt3-23b-32node" in listed["job"]


def test_cli_errors_are_one_line_exit_2(cli, tmp_path):
    for args in (
        ["simulate", "--preset", "tiny", "--set", "parallel.tp=3", "-o", str(tmp_path / "x")],
        ["simulate", "--preset", "tiny"],
        ["simulate"],
    ):
        result = cli(*args)
        assert result.exit_code == 2, result.output
        assert result.output.startswith("error: ") and result.output.count("\n") == 1
    assert not (tmp_path / "x").exists()


def test_list_presets_shows_each_default_layout(cli):
    from trnprof.model.hardware import INSTANCES

    listed = json.loads(cli("simulate", "--list-presets", "--format", "json").output)
    text = cli("simulate", "--list-presets").output
    for name in listed["job"] + listed["model"]:
        layout = listed["layouts"][name]
        config = load_config(preset=name)
        assert layout["nodes"] == config.cluster.nodes and layout["instance"] == config.cluster.instance
        assert layout["ranks"] == layout["nodes"] * INSTANCES[layout["instance"]].cores
        assert layout["tp"] * layout["pp"] * layout["dp"] == layout["ranks"]
        line = next(line for line in text.splitlines() if line.split()[:1] == [name])
        assert f"tp {layout['tp']}, pp {layout['pp']}" in line and f"{layout['ranks']} ranks" in line
