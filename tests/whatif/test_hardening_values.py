"""Hostile values (issue 28): every whatif/config number has a finite range, config files are
UTF-8 with bounded alias expansion, and no error message quotes an unbounded value."""

import json
import math
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trnprof import yamlio
from trnprof.errors import TrnprofError
from trnprof.model.config import load_config
from trnprof.textfmt import BRIEF, brief
from trnprof.whatif.validate import JOB_A, simulate_job


@pytest.fixture(scope="module")
def run_a(tmp_path_factory):
    return simulate_job(JOB_A, "A", tmp_path_factory.mktemp("values") / "a")


HOSTILE = [
    ("per_sample_ms=.inf", "input.per_sample_ms"),
    ("per_sample_ms=1e300", "input.per_sample_ms"),
    ("per_sample_ms=.nan", "input.per_sample_ms"),
    ("bucket_mb=1e-300", "comm.bucket_mb"),
    ("bucket_mb=1e300", "comm.bucket_mb"),
    ("model.layers=100000", "model.layers"),
    ("workers=100000000", "input.workers"),
    ("nodes=.inf", "cluster.nodes"),
    ("tp=1e300", "parallel.tp"),
    ("global=100000000", "batch.global"),
    ("model.hidden=1e300", "model.hidden"),
    ("faults=[{kind: slow_loader, factor: .inf}]", "faults[0].factor"),
    ("faults=[{kind: memory_leak, bytes_per_step: 1e300}]", "faults[0].bytes_per_step"),
]


@pytest.mark.parametrize("setting, key", HOSTILE)
def test_a_hostile_whatif_value_is_one_line_naming_the_key(run_a, cli, setting, key):
    result = cli("whatif", run_a, "--set", setting, "--format", "json")
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and f"config {key}: invalid value" in result.stderr
    assert "allowed:" in result.stderr and "Traceback" not in result.stderr


@settings(max_examples=40, deadline=None)
@given(
    value=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-(1 << 80), 1 << 80)),
    key=st.sampled_from(
        [
            "input.per_sample_ms",
            "comm.bucket_mb",
            "input.workers",
            "model.layers",
            "batch.global",
            "cluster.nodes",
            "run.seed",
            "calibration.op_overhead_us",
        ]
    ),
)
def test_any_number_is_accepted_within_its_range_or_refused_in_one_line(value, key):
    try:
        config = load_config(overrides=[f"{key}={value!r}" if isinstance(value, float) else f"{key}={value}"])
    except TrnprofError as exc:
        assert "\n" not in str(exc) and key in str(exc)
        return
    section, field = key.split(".")
    got = getattr(getattr(config, section), "global_" if field == "global" else field)
    assert math.isfinite(got) and 0 <= got <= 1 << 32  # every accepted number is finite and bounded


def _numbers(value):
    if isinstance(value, dict):
        for item in value.values():
            yield from _numbers(item)
    elif isinstance(value, list):
        for item in value:
            yield from _numbers(item)
    elif isinstance(value, float):
        yield value


@pytest.mark.parametrize("setting", ["per_sample_ms=1000000", "bucket_mb=0.001", "bucket_mb=65536", "workers=0"])
def test_a_prediction_at_the_edge_of_the_ranges_is_finite(run_a, cli, setting):
    result = cli("whatif", run_a, "--set", setting, "--format", "json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["predicted"]["step_time_s"] > 0
    assert all(math.isfinite(x) for x in _numbers(document))


def _laughs(levels: int = 9) -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        prev, name = chr(ord("a") + i - 1), chr(ord("a") + i)
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    "command", [["whatif", "RUN", "--config"], ["analyze", "RUN", "--config"], ["simulate", "--summary-only"]]
)
def test_a_billion_laughs_config_is_one_error_without_expanding(tmp_path, run_a, command):
    config = tmp_path / "laughs.yaml"
    config.write_text(_laughs(), encoding="utf-8")
    script = (
        f"import resource, sys\nresource.setrlimit(resource.RLIMIT_AS, ({3 << 30}, {3 << 30}))\n"
        "from trnprof.cli import main\nsys.argv = ['trnprof', *sys.argv[1:]]\nmain()\n"
    )
    args = [str(run_a) if a == "RUN" else a for a in command] + [str(config)]
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr[-500:]
    assert done.stderr.count("\n") == 1 and "aliases" in done.stderr and "lol" not in done.stderr


def test_yaml_alias_expansion_is_bounded_but_ordinary_aliases_load():
    with pytest.raises(yamlio.ExpansionError):
        yamlio.load(_laughs())
    assert yamlio.load("base: &b {tp: 2}\nother: *b\n") == {"base": {"tp": 2}, "other": {"tp": 2}}
    assert yamlio.load("a: &a [1, 2]\nb: [*a, *a, *a]\n")["b"] == [[1, 2]] * 3


@pytest.mark.parametrize(
    "command", [["whatif", "RUN", "--config"], ["analyze", "RUN", "--config"], ["simulate", "--summary-only"]]
)
def test_a_config_that_is_not_utf8_is_one_line(tmp_path, cli, run_a, command):
    config = tmp_path / "latin1.yaml"
    config.write_bytes("cluster:\n  nodes: 2 # größe\n".encode("latin-1"))
    result = cli(*[run_a if a == "RUN" else a for a in command], config)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert "not UTF-8" in result.stderr and "byte 24" in result.stderr


@settings(max_examples=60, deadline=None)
@given(
    st.recursive(
        st.one_of(
            st.text(max_size=5000),
            st.integers(min_value=-(10**5000), max_value=10**5000),
            st.floats(),
            st.none(),
            st.booleans(),
        ),
        lambda inner: st.lists(inner, max_size=50) | st.dictionaries(st.text(max_size=3), inner, max_size=50),
        max_leaves=200,
    )
)
def test_brief_is_bounded_for_any_value(value):
    assert len(brief(value)) <= BRIEF + 40


def test_whatif_into_an_existing_folder_is_one_line_and_leaves_nothing(run_a, cli, tmp_path):
    target = tmp_path / "out"
    target.mkdir()
    result = cli("whatif", run_a, "--set", "tp=2", "-o", target)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert "it is a folder" in result.stderr and ".tmp" not in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"] and not any(target.iterdir())


@pytest.mark.parametrize("kind", ["unknown key", "unknown preset", "huge number"])
def test_an_error_never_quotes_a_huge_value_whole(tmp_path, kind):
    big = 100_000
    config = tmp_path / "big.yaml"
    config.write_text(
        {
            "unknown key": "cluster:\n  " + "k" * big + ": 1\n",
            "huge number": "cluster:\n  nodes: " + "9" * big + "\n",
        }.get(kind, ""),
        encoding="utf-8",
    )
    with pytest.raises(TrnprofError) as caught:
        load_config(preset="m" * big) if kind == "unknown preset" else load_config(path=config)
    assert len(str(caught.value)) < 1000 and "\n" not in str(caught.value)
