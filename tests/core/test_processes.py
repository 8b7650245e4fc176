"""The one PID probe: a running process, a process that ended, a recycled PID told apart."""

import os
import subprocess
import sys

import psutil

from trnprof.processes import alive, start_time


def test_this_process_runs_since_it_started():
    assert alive(os.getpid())
    assert start_time(os.getpid()) == psutil.Process().create_time()


def test_an_ended_process_is_not_alive():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    pid = child.pid
    child.wait()  # reaped: no process has this PID until the system hands it out again
    assert not alive(pid) and start_time(pid) is None


def test_a_recorded_start_tells_a_recycled_pid():
    """A process that runs under a recorded PID but started at another time is not the recorder."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        started = start_time(child.pid)
        assert started is not None and started != start_time(os.getpid())
    finally:
        child.kill()
        child.wait()
