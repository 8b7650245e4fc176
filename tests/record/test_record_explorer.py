"""`trnprof record` driving Neuron Explorer (issue 36, item 5) with a fake `neuron-explorer` on
PATH: the job runs with the runtime's device-profile environment, Explorer's Parquet output is
ingested into the same run; Explorer missing, failing or writing garbage is one line, the job's
exit code is kept, and a broken install stops `record` before the job starts."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from trnprof import open_run

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "tests" / "data" / "neuron" / "explorer"
TIMEOUT = 120

FAKE_EXPLORER = """#!{python}
import json, os, shutil, sys
mode = os.environ.get("FAKE_EXPLORER", "ok")
args = sys.argv[1:]
if args == ["--version"]:
    if mode == "broken":
        sys.exit("neuron-explorer: error while loading shared libraries")
    print("neuron-explorer 2.33.38.0")
    sys.exit(0)
with open(os.environ["FAKE_EXPLORER_ARGS"], "w") as handle:
    json.dump(args, handle)
if mode == "fail":
    print("ERROR_PROCESS_INCOMPLETE: NEFF/NTFF UUID mismatch", file=sys.stderr)
    sys.exit(3)
out = args[args.index("--output-file") + 1]
os.makedirs(out)
if mode == "garbage":
    with open(os.path.join(out, "Instruction.parquet"), "wb") as handle:
        handle.write(b"PAR1 this is not a parquet file")
    sys.exit(0)
if mode == "nothing":
    sys.exit(0)
for name in os.listdir({sample!r}):
    shutil.copy(os.path.join({sample!r}, name), out)
"""

# the job: what the Neuron runtime would do under NEURON_RT_INSPECT_* (write its raw profile), then exit
JOB = """import json, os, sys, time
folder = os.environ["NEURON_RT_INSPECT_OUTPUT_DIR"]
os.makedirs(folder, exist_ok=True)
with open(os.path.join(folder, "1_instid_0_vnc_0.ntff"), "wb") as handle:
    handle.write(b"raw device profile")
json.dump(dict(os.environ), open(sys.argv[1], "w"))
time.sleep(0.4)
sys.exit(int(sys.argv[2]))
"""


def _path_with(tmp_path, explorer: bool) -> dict:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if explorer:
        fake = bin_dir / "neuron-explorer"
        fake.write_text(FAKE_EXPLORER.format(python=sys.executable, sample=str(SAMPLE)))
        fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    # PATH without any real neuron tools: the fake's folder and the interpreter's
    path = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), "/usr/bin", "/bin"])
    return {**os.environ, "PATH": path, "FAKE_EXPLORER_ARGS": str(tmp_path / "args.json")}


def _record(tmp_path, env, code=0, mode="ok"):
    job = tmp_path / "job.py"
    job.write_text(JOB)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "trnprof",
            "record",
            "--neuron",
            "on",
            "-o",
            "run",
            "--interval",
            "0.05",
            "--",
            sys.executable,
            str(job),
            str(tmp_path / "env.json"),
            str(code),
        ],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=tmp_path,
        env={**env, "FAKE_EXPLORER": mode},
    )


def test_the_device_profile_explorer_writes_is_ingested_into_the_run(tmp_path):
    result = _record(tmp_path, _path_with(tmp_path, explorer=True))
    assert result.returncode == 0, result.stderr
    assert "Neuron Explorer (neuron-explorer 2.33.38.0): device profile on" in result.stderr
    assert "neuron-monitor report(s), 1 device profile(s): " in result.stdout
    seen = json.loads((tmp_path / "env.json").read_text())
    assert seen["NEURON_RT_INSPECT_DEVICE_PROFILE"] == "1"
    inspect = seen["NEURON_RT_INSPECT_OUTPUT_DIR"]
    args = json.loads((tmp_path / "args.json").read_text())
    assert args[:4] == ["view", "-d", inspect, "--ingest-only"]
    assert args[4:6] == ["--output-format", "parquet"] and args[6] == "--output-file"
    instructions = pq.read_metadata(SAMPLE / "Instruction.parquet").num_rows
    with open_run(tmp_path / "run") as run:
        assert int(run.sql("SELECT count(*) AS n FROM device_instructions")["n"][0]) == instructions
        assert int(run.sql("SELECT count(*) AS n FROM counters WHERE name = 'host.memory.used'")["n"][0]) > 0
        formats = {f["format"] for f in run.manifest["ingest"]["files"]}
    assert {"neuron-explorer", "trnprof-host-metrics"} <= formats


def test_explorer_not_installed_is_one_line_and_the_rest_is_recorded(tmp_path):
    result = _record(tmp_path, _path_with(tmp_path, explorer=False))
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if "neuron-explorer" in line]
    assert lines == [
        "note: neuron-explorer is not on PATH: no device profile (it comes with aws-neuronx-tools); "
        "the runtime's system profile is still captured"
    ]
    assert "NEURON_RT_INSPECT_DEVICE_PROFILE" not in json.loads((tmp_path / "env.json").read_text())
    assert "Traceback" not in result.stderr
    with open_run(tmp_path / "run") as run:
        assert int(run.sql("SELECT count(*) AS n FROM device_instructions")["n"][0]) == 0


@pytest.mark.parametrize(
    "mode, said",
    [
        ("fail", "neuron-explorer failed (exit 3: ERROR_PROCESS_INCOMPLETE: NEFF/NTFF UUID mismatch)"),
        ("nothing", "neuron-explorer wrote no Parquet profile in"),
    ],
)
def test_a_failing_explorer_is_one_line_and_the_job_code_is_kept(tmp_path, mode, said):
    result = _record(tmp_path, _path_with(tmp_path, explorer=True), code=7, mode=mode)
    assert result.returncode == 7, result.stderr
    assert "Traceback" not in result.stderr
    line = next(line for line in result.stderr.splitlines() if said in line)
    assert "no device profile in the run; the raw profile is kept in" in line
    with open_run(tmp_path / "run") as run:  # the host metrics still make the run
        assert int(run.sql("SELECT count(*) AS n FROM device_instructions")["n"][0]) == 0


def test_garbage_from_explorer_is_left_out_with_its_reason(tmp_path):
    result = _record(tmp_path, _path_with(tmp_path, explorer=True), code=0, mode="garbage")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    line = next(line for line in result.stderr.splitlines() if "could not be ingested" in line)
    assert line.startswith("note: Neuron Explorer's profile ") and "left out of the run, kept in" in line
    with open_run(tmp_path / "run") as run:
        assert int(run.sql("SELECT count(*) AS n FROM device_instructions")["n"][0]) == 0


def test_a_broken_explorer_stops_record_before_the_job(tmp_path):
    result = _record(tmp_path, _path_with(tmp_path, explorer=True), mode="broken")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith("error: neuron-explorer --version failed (exit 1)")
    assert "--neuron off" in result.stderr
    assert "recording:" not in result.stderr  # refused before a word about the job (the preflight)
    assert not (tmp_path / "env.json").exists()  # the job never ran
    assert not (tmp_path / "run").exists()
