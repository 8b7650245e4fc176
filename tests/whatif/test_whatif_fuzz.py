"""Hostile --set values: whatever the key and value, whatif answers (exit 0) or prints one
error line (exit 2), never a traceback."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trnprof.whatif.describe import ALIASES

KEYS = sorted(ALIASES) + [
    "parallel.tp",
    "cluster.nodes",
    "batch.global",
    "model.layers",
    "comm",
    "faults",
    "run.seed",
    "calibration.hbm_efficiency",
    "parallel",
    "x.y.z",
    "",
    "tp.extra",
]
VALUES = st.one_of(
    st.integers(-5, 5000).map(str),
    st.sampled_from(["true", "abc", "[]", "{}", "1e400", "-0.0", "[{kind: straggler}]", "null", "'", "0.5"]),
    st.text(max_size=8),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from(KEYS), value=VALUES)
def test_any_setting_answers_or_fails_in_one_line(cli, run_a, key, value):
    result = cli("whatif", run_a, "--set", f"{key}={value}", "--format", "json")
    assert result.exit_code in (0, 2), result.output
    if result.exit_code == 2:
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), result.output
