"""The what-if area's fixtures: job A of the validation set, simulated once for the session."""

from __future__ import annotations

import pytest

from trnprof.whatif.validate import JOB_A, simulate_job


@pytest.fixture(scope="session")
def run_a(tmp_path_factory):
    """Job A (trnprof.whatif.validate): the model's parameters perturbed, the what-if fits them back."""
    return simulate_job(JOB_A, "A", tmp_path_factory.mktemp("whatif") / "a")
