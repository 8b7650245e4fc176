"""Recurring costs: a job that recompiles every 4 steps against the same job clean (the tiny
decoder, 12 steps, simulated). Expected numbers come from the runs' raw step and compile events:
samples over wall time, the compile time each recompile adds."""

from __future__ import annotations

import pytest

from trnprof.api import open_run
from trnprof.collectors.trn1 import load_config, simulate

STEPS = 12
EVERY = 4


def _simulate(path, faults=None):
    config = load_config(preset="tiny", overrides=[f"run.steps={STEPS}", "run.seed=1"], faults=faults)
    return simulate(config, path)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("recurring")
    return {
        "clean": _simulate(folder / "clean"),
        "recompile": _simulate(folder / "recompile", [{"kind": "recompile", "every": EVERY}]),
    }


def raw(path) -> dict:
    """From the raw events: samples per step, steps after the first (compiling) one, their wall
    time (first start to last end, any rank) and the compile steps after the first."""
    with open_run(path) as run:
        steps = run.sql(
            "SELECT step, MIN(ts) AS ts, MAX(ts + dur) AS end_ts FROM events "
            "WHERE kind = 'step' GROUP BY step ORDER BY step"
        )
        compiles = run.sql("SELECT DISTINCT step FROM events WHERE kind = 'compile' ORDER BY step")
        samples = run.manifest["job"]["samples_per_step"]
    later = steps[steps["step"] > steps["step"].min()]
    wall_s = (later["end_ts"].max() - later["ts"].min()) / 1e9
    return {
        "samples": samples,
        "steps": len(later),
        "wall_s": wall_s,
        "recompile_steps": [int(s) for s in compiles["step"] if s > steps["step"].min()],
    }


def test_info_effective_throughput_is_samples_over_wall_time(runs):
    for name, path in runs.items():
        truth = raw(path)
        with open_run(path) as run:
            info = run.info()
        step = info["step_time_s"]
        assert step["steps"] == truth["steps"], name
        assert step["effective"] == pytest.approx(truth["wall_s"] / truth["steps"], rel=0.02), name
        assert info["throughput"]["effective"] == pytest.approx(
            truth["samples"] * truth["steps"] / truth["wall_s"], rel=0.02
        ), name


def test_info_typical_step_ignores_the_recompiles_and_effective_step_pays_them(runs):
    with open_run(runs["clean"]) as clean, open_run(runs["recompile"]) as faulty:
        c, f = clean.info(), faulty.info()
    truth = raw(runs["recompile"])
    assert truth["recompile_steps"] == list(range(EVERY, STEPS, EVERY))
    # the median is blind to 2 long steps in 11; the wall time is not
    assert f["step_time_s"]["median"] == pytest.approx(c["step_time_s"]["median"], rel=0.02)
    assert f["step_time_s"]["effective"] > 100 * c["step_time_s"]["effective"]
    # MFU on each view moves with its step time, so the two rates never contradict each other
    assert f["mfu"] == pytest.approx(c["mfu"], rel=0.02)
    assert f["effective_mfu"] / c["effective_mfu"] == pytest.approx(
        c["step_time_s"]["effective"] / f["step_time_s"]["effective"], rel=0.02
    )


def test_outlier_steps_name_the_recompiles(runs):
    with open_run(runs["recompile"]) as run:
        outliers = run.info()["outlier_steps"]
        compile_s = run.sql("SELECT step, MAX(dur) / 1e9 AS s FROM events WHERE kind = 'compile' GROUP BY step")
    truth = raw(runs["recompile"])
    assert [o["step"] for o in outliers] == truth["recompile_steps"]
    assert {o["cause"] for o in outliers} == {"compile"}
    longest = dict(zip(compile_s["step"], compile_s["s"]))
    for outlier in outliers:  # the excess over the typical step is the compile
        assert outlier["excess_s"] == pytest.approx(longest[outlier["step"]], rel=0.01)
    with open_run(runs["clean"]) as run:
        assert run.info()["outlier_steps"] == []


def test_outlier_steps_tell_a_checkpoint_between_steps_and_a_late_rank(tmp_path):
    # 2 ranks, 8 steps of 10 ms: step 3 is followed by a 40 ms save outside any step, and in step 5
    # rank 1 computes 30 ms longer while rank 0 waits in the all-reduce
    from tests.conftest import write_inline_run

    events, t = [], 0
    for step in range(8):
        extra = 30_000_000 if step == 5 else 0
        for rank in (0, 1):
            compute = 8_000_000 + (extra if rank == 1 else 0)
            events += [
                {
                    "rank": rank,
                    "ts": t,
                    "dur": 10_000_000 + extra,
                    "kind": "step",
                    "name": "s",
                    "lane": "host/main",
                    "step": step,
                },
                {
                    "rank": rank,
                    "ts": t,
                    "dur": compute,
                    "kind": "compute",
                    "name": "mm",
                    "lane": "nc/tensor",
                    "step": step,
                },
                {
                    "rank": rank,
                    "ts": t + compute,
                    "dur": 10_000_000 + extra - compute,
                    "kind": "collective",
                    "name": "ar",
                    "lane": "nc/cc",
                    "step": step,
                },
            ]
        t += 10_000_000 + extra + (40_000_000 if step == 3 else 0)
    run_path = write_inline_run(tmp_path / "r", events)
    with open_run(run_path) as run:
        outliers = {o["step"]: o for o in run.info()["outlier_steps"]}
    assert set(outliers) == {3, 5}
    assert outliers[3]["cause"] == "between steps" and outliers[3]["excess_s"] == pytest.approx(0.04, rel=0.01)
    assert outliers[5]["cause"] == "late rank" and outliers[5]["rank"] == 1


@pytest.fixture(scope="module")
def recompile_diff(runs):
    import trnprof

    return trnprof.api.diff(runs["clean"], runs["recompile"])


def test_diff_flags_the_effective_step_and_the_gate_trips(runs, recompile_diff, cli):
    clean, faulty = raw(runs["clean"]), raw(runs["recompile"])
    step = recompile_diff["step_time"]
    assert not step["significant"]  # the median is blind to 2 long steps in 11 ...
    effective = step["effective"]  # ... the wall time is not
    assert effective["significant"]
    assert effective["change"] == pytest.approx(
        (faulty["wall_s"] / faulty["steps"]) / (clean["wall_s"] / clean["steps"]) - 1, rel=0.02
    )
    assert recompile_diff["mfu"]["effective"]["significant"]
    assert recompile_diff["throughput"]["effective"]["significant"]
    result = cli("diff", runs["clean"], runs["recompile"], "--fail-if", "step_time>+5%")
    assert result.exit_code == 1, result.output
    assert "TRIPPED  step_time>+5%" in result.stdout and "effective step" in result.stdout


def test_diff_of_two_clean_seeds_passes_the_effective_gate(runs, tmp_path, cli):
    other = simulate(load_config(preset="tiny", overrides=[f"run.steps={STEPS}", "run.seed=2"]), tmp_path / "seed2")
    result = cli("diff", runs["clean"], other, "--fail-if", "step_time>+5%")
    assert result.exit_code == 0, result.output


def test_a_new_op_above_the_noise_floor_is_never_within_noise(recompile_diff):
    compile_rows = [r for r in recompile_diff["top_regressions"] if r["kind"] == "compile"]
    assert compile_rows and compile_rows[0]["change"] is None  # an op the base never ran
    assert compile_rows[0]["new_s"] > recompile_diff["step_time"]["noise_floor_s"]
    assert compile_rows[0]["significant"]


def test_a_halved_rate_is_never_within_noise():
    from trnprof.diff.headline import _rate

    assert _rate(0.0644, 0.0322, significant=False)["significant"]
    assert not _rate(0.0644, 0.0640, significant=False)["significant"]


def test_a_relative_gate_on_a_base_of_zero_trips_on_a_significant_rise():
    from trnprof.diff.gates import evaluate_gates
    from trnprof.errors import TrnprofError

    row = {
        "category": "input_wait",
        "base_s": 0.0,
        "new_s": 0.047,
        "delta_s": 0.047,
        "change": None,
        "p_value": 1e-5,
        "significant": True,
    }
    document = {"breakdown": [row]}
    [result] = evaluate_gates(["input_wait>+5%"], document)
    assert result["tripped"] and result["from_zero"]
    [quiet] = evaluate_gates(["input_wait>+5%"], {"breakdown": [{**row, "significant": False}]})
    assert not quiet["tripped"]
    with pytest.raises(TrnprofError, match="absolute threshold"):
        evaluate_gates(["input_wait<-5%"], document)


def test_the_recompile_fix_is_worth_the_share_of_wall_time_the_recompiles_cost(runs):
    from trnprof.api import analyze

    document = analyze(runs["recompile"])
    [finding] = [f for f in document.findings if f.name == "compile.recompilation"]
    projected = finding.projected
    clean, faulty = raw(runs["clean"]), raw(runs["recompile"])
    with open_run(runs["recompile"]) as run:  # the compiles after the first step, slowest rank per step
        compile_s = run.sql(
            "SELECT SUM(s) AS s FROM (SELECT step, MAX(dur) / 1e9 AS s FROM events "
            "WHERE kind = 'compile' AND step > 0 GROUP BY step)"
        ).iloc[0, 0]
    share = compile_s / faulty["wall_s"]
    assert projected["effective_step_s"] == pytest.approx(clean["wall_s"] / clean["steps"], rel=0.10)
    assert abs(projected["gain_fraction"] - share) <= 0.10
    # and the fix outranks every other priced fix
    gains = [
        f.projected["gain_fraction"]
        for f in document.findings
        if f.projected and f.projected.get("gain_fraction") is not None
    ]
    assert projected["gain_fraction"] == max(gains)


def test_whatif_without_the_fault_predicts_the_clean_run(runs):
    from trnprof.whatif.document import whatif

    clean = raw(runs["clean"])
    with open_run(runs["clean"]) as run:
        typical = run.info()["step_time_s"]["median"]
    predicted = whatif(runs["recompile"], ["faults=[]"])["predicted"]
    assert predicted["effective_step_s"] == pytest.approx(clean["wall_s"] / clean["steps"], rel=0.03)
    assert predicted["band"]["low_s"] <= typical <= predicted["band"]["high_s"]


def test_the_report_comparison_shows_the_effective_step_and_bus_bandwidth_per_size_class(recompile_diff):
    from trnprof.diff import tables
    from trnprof.report.sections import comparison

    html = comparison.build(recompile_diff).html
    assert "Effective step (wall time per step)" in html and "significant" in html
    rows = tables.collectives(recompile_diff)
    assert rows, "the tiny job all-reduces its gradients"
    for row in rows:  # the same figures as text diff
        assert row["size class"] in html and row["new busbw"] in html


def test_diff_states_one_time_costs_in_their_own_unit(recompile_diff):
    from trnprof.diff import tables

    [first] = [r for r in tables.findings(recompile_diff) if "slow_first_step" in r["rule"]]
    [detail] = [c for c in recompile_diff["findings"]["changed"] if c["name"] == "compile.slow_first_step"]
    assert first["impact"] == (
        f"{tables.duration(detail['base_once_s'])} once -> {tables.duration(detail['new_once_s'])} once"
    )
    assert "/step" not in first["impact"] and detail["base_once_s"] > 1
