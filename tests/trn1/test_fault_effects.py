"""A fault that cannot change the job is an error that names the measured change (none), not a
silent run: the documented default slow_loader on bert-large."""

from __future__ import annotations

import pytest

from trnprof import open_run
from trnprof.collectors.trn1 import load_config, simulate, summary
from trnprof.errors import TrnprofError


def test_a_slow_loader_that_changes_nothing_is_an_error(tmp_path):
    # bert-large's 4 loader workers per rank stay ahead of the device even 8x slower
    config = load_config(preset="bert-large", faults=[{"kind": "slow_loader", "factor": 8}])
    with pytest.raises(
        TrnprofError,
        match=r"slow_loader factor 8 changes nothing in this job: .* step time "
        r"stays 4\.\d+ s; set a factor above about \d+",
    ):
        simulate(config, tmp_path / "run", steps=4)
    assert not (tmp_path / "run").exists()


def test_the_factor_the_error_names_does_change_the_step(tmp_path):
    clean = summary(load_config(preset="tiny"))["step_time_s"]
    config = load_config(preset="tiny", faults=[{"kind": "slow_loader", "factor": 1.01}])
    with pytest.raises(TrnprofError) as error:
        simulate(config, tmp_path / "noop", steps=4)
    needed = float(str(error.value).split("above about ")[1].split(" ")[0])
    # twice the factor named: the loader falls behind and the device waits for it
    run = simulate(
        load_config(preset="tiny", faults=[{"kind": "slow_loader", "factor": 2 * needed}]), tmp_path / "slow", steps=4
    )
    with open_run(run) as opened:
        step = opened.sql("SELECT MEDIAN(dur) AS d FROM steps WHERE step >= 2").iloc[0, 0] / 1e9
        waited = opened.sql("SELECT SUM(dur) AS w FROM events WHERE kind = 'input'").iloc[0, 0]
    assert waited > 0 and step > clean * 1.2
