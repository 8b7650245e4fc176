"""The what-if validation on a small job (docs/whatif.md): job A simulated with every free
parameter perturbed, whatif A --set change against simulating A + change under the same
parameters; removing an injected fault against the clean run. bench/bench_whatif.py runs the
whole table."""

import pytest

from trnprof.whatif.validate import CHANGES, FAULTS, JOB_A, compare, simulate_job

TOLERANCE = 0.05  # the target: within 5 % of the simulated step


@pytest.fixture(scope="module")
def run_b(tmp_path_factory):
    return simulate_job(JOB_A, "B", tmp_path_factory.mktemp("whatif") / "b")


@pytest.mark.parametrize("kind", ["nodes", "tp", "ZeRO-1", "overlap off", "loader workers", "precision"])
def test_change_predicted_within_5_percent_under_perturbation_a(run_a, tmp_path, kind):
    row = compare(run_a, JOB_A, CHANGES[kind], "A", workdir=tmp_path)
    assert row["fits"]
    assert abs(row["error"]) <= TOLERANCE, row


@pytest.mark.parametrize("kind", ["pp", "micro-batch", "global batch", "sequence length"])
def test_change_predicted_within_5_percent_under_perturbation_b(run_b, tmp_path, kind):
    row = compare(run_b, JOB_A, CHANGES[kind], "B", workdir=tmp_path)
    assert row["fits"]
    assert abs(row["error"]) <= TOLERANCE, row


@pytest.mark.parametrize("fault", ["straggler", "slow loader"])
def test_removing_a_fault_predicts_the_clean_run(tmp_path, fault):
    run = simulate_job(JOB_A, "A", tmp_path / "faulty", faults=FAULTS[fault])
    row = compare(run, JOB_A, ["faults=[]"], "A", faults=FAULTS[fault], workdir=tmp_path)
    assert abs(row["error"]) <= TOLERANCE, row


def test_a_change_that_matters_is_not_predicted_as_no_change(run_a, tmp_path):
    """The check above cannot pass by predicting the baseline: the workers=0 change moves the
    simulated step by far more than the tolerance, and the prediction follows it."""
    row = compare(run_a, JOB_A, ["workers=0"], "A", workdir=tmp_path)
    from trnprof.whatif.document import whatif

    baseline = whatif(run_a, [])["predicted"]["step_time_s"]
    assert row["simulated_s"] > baseline * 1.2
    assert abs(row["error"]) <= TOLERANCE
