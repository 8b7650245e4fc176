"""The rules area's fixtures: `busy_run`, a small inline run several rule tests analyze."""

from __future__ import annotations

import msgspec
import pytest

from trnprof.rules_engine.spec import Inline
from trnprof.rules_engine.testing import write_inline
from trnprof.units import GIB


def inline_run(path, **spec):
    return write_inline(msgspec.convert(spec, Inline), path)


@pytest.fixture(scope="module")
def busy_run(tmp_path_factory):
    """4 ranks x 4 steps of 10 ms: 2 ms input wait, 5 ms compute, then a 3 ms all-reduce;
    rank 3's memory is 95 % full; step 0 compiles (warm-up)."""
    rows = [
        ["step", "train_step", None, 0, 10_000_000, None, None, None, None],
        ["input", "next_batch", None, 0, 2_000_000, None, None, None, None],
        ["compute", "matmul", None, 2_000_000, 5_000_000, None, None, None, None],
        ["collective", "all_reduce", None, 7_000_000, 3_000_000, "all_reduce", "dp", 0, 64 << 20],
        ["compile", "neuronx-cc", 0, 0, 1_000_000, None, None, None, None],
    ]
    return inline_run(
        tmp_path_factory.mktemp("engine") / "busy",
        tile={"ranks": 4, "steps": 4, "period_ns": 10_000_000},
        events={
            "columns": ["kind", "name", "step", "ts", "dur", "coll_op", "coll_group", "coll_seq", "bytes"],
            "rows": rows,
        },
        counters={
            "columns": ["rank", "ts", "name", "value"],
            "rows": [[None, 100, "hbm.params", 2 * GIB], [3, 100, "hbm.activations", 13.2 * GIB]],
        },
    )
