"""SC001's noise criterion (issue 35: "on a balanced job, CPU contention from other processes
produced a MEDIUM straggler in 1 of 5 runs"): a straggler is late in a significant majority of
the steady steps (sign test) and by more than the run's own step-to-step noise, or at most info.

Synthetic 2-rank data-parallel runs, 8 steps: each rank computes 10 ms, then the ranks
all-reduce (1 ms once both arrived). Contention is drawn per rank and step, as other processes
take a core for a while: with probability 0.4 a rank's compute is slowed by 10-60 %. Derivation:
whichever rank is slowed arrives late in that step, so lateness takes turns between the ranks;
the rank late in the most steps is late in 7 or 8 of 8 (the sign test's bar) with probability
about 7 %, and even then its mean lateness (at most ~2.6 ms) is compared with the step times'
spread, which the same contention sets (1-6 ms slower steps): no seed may give a finding above
info. The control adds a real straggler to the same noise (rank 1 computes 5 ms more in every
step): late in 8 of 8 by ~5 ms against a step of ~16 ms, beyond the noise, and its fix is worth
~30 %: high.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import write_inline_run
from trnprof.api import analyze

MS = 1_000_000
STEPS, COMPUTE_MS, TRANSFER_MS = 8, 10.0, 1.0


def _run(path, seed: int, extra_ms: float = 0.0):
    rng = np.random.default_rng(seed)
    events, t = [], 0.0
    for step in range(STEPS):
        slow = np.where(rng.random(2) < 0.4, rng.uniform(0.1, 0.6, 2), 0.0)
        compute = COMPUTE_MS * (1 + slow) + np.array([0.0, extra_ms])
        end = t + compute.max() + TRANSFER_MS
        for rank in (0, 1):
            base = {"rank": rank, "step": step}
            events += [
                {
                    **base,
                    "kind": "step",
                    "name": "train_step",
                    "lane": "host/main",
                    "ts": int(t * MS),
                    "dur": int((end - t) * MS),
                },
                {
                    **base,
                    "kind": "compute",
                    "name": "matmul",
                    "lane": "nc/tensor",
                    "ts": int(t * MS),
                    "dur": int(compute[rank] * MS),
                },
                {
                    **base,
                    "kind": "collective",
                    "name": "all_reduce",
                    "lane": "nc/cc",
                    "ts": int((t + compute[rank]) * MS),
                    "dur": int((end - t - compute[rank]) * MS),
                    "coll_op": "all_reduce",
                    "coll_group": "dp",
                    "coll_seq": step,
                },
            ]
        t = end + 0.2
    return write_inline_run(path, events, ranks=2)


def _straggler(run_dir):
    return [f for f in analyze(run_dir).findings if f.name == "scale.straggler"]


@pytest.mark.parametrize("seed", range(10))
def test_contention_taking_turns_is_at_most_info(tmp_path, seed):
    found = _straggler(_run(tmp_path / "run", seed))
    assert all(f.severity in ("info", "low") for f in found), [(f.severity, f.message) for f in found]


def test_a_real_straggler_stands_out_of_the_same_noise(tmp_path):
    found = _straggler(_run(tmp_path / "run", seed=0, extra_ms=5.0))
    assert [f.ranks for f in found] == [[1]] and found[0].severity == "high", [f.message for f in found]
