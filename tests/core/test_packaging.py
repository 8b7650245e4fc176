"""A non-editable install into a fresh venv works from any directory (slow: builds a wheel)."""

import subprocess
import sys
import venv

from tests.conftest import REPO


def test_wheel_installs_into_fresh_venv_and_runs_from_elsewhere(tmp_path):
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(REPO)],
        check=True,
        capture_output=True,
    )
    wheel = next(wheels.glob("trnprof-*.whl"))
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel)], check=True, capture_output=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    trnprof = env_dir / "bin" / "trnprof"
    help_out = subprocess.run([str(trnprof), "--help"], cwd=elsewhere, capture_output=True, text=True)
    assert help_out.returncode == 0 and "info" in help_out.stdout
    demo = subprocess.run([str(trnprof), "demo"], cwd=elsewhere, capture_output=True, text=True)
    assert demo.returncode == 0, demo.stderr
    site = subprocess.run(
        [
            str(python),
            "-c",
            "import trnprof, sysconfig; print(trnprof.__file__); print(sysconfig.get_paths()['purelib'])",
        ],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert site[0].startswith(str(env_dir)), "trnprof was imported from the checkout, not the install"
    purelib = __import__("pathlib").Path(site[1])
    assert not (purelib / "collectors").exists() and not (purelib / "rules").exists()
    assert (purelib / "trnprof" / "collectors").is_dir() and (purelib / "trnprof" / "rules").is_dir()
    assert (purelib / "trnprof" / "stdlib" / "step_breakdown.sql").is_file()
    assert (purelib / "trnprof" / "record" / "boot" / "sitecustomize.py").is_file()  # trnprof record's launcher
