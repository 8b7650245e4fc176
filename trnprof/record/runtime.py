"""The profiler inside the profiled process. Standard library and torch only: the training
interpreter needs none of trnprof's own dependencies (the launcher loads this file by path).

One `Session` per process counts `wait` steps with no profiler, then runs `torch.profiler.profile`
for `warmup` and `active` steps (one window: one trace per rank). Steps come from `step()` (the user's
`trnprof.step()`), or, in automatic mode, from the step hook of the first optimizer that steps
(a GAN's second optimizer does not count twice). The window's trace is written when it closes,
or when the process ends early: normal exit, an exception, Ctrl-C, SIGTERM.

Under `trnprof record` the session also keeps the job's own memory over the whole job (`JobLog`):
the process's resident memory at step ends, every step before, during and after the window, and
the profiler's window itself, written as `job_rank<RANK>.jsonl` (the host-metrics format) when
the process ends. The memory rule judges growth outside the window from it.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ENV = "TRNPROF_RECORD"  # JSON settings for the launcher; its presence turns automatic mode on


@dataclass
class Settings:
    capture: str  # folder the traces go to
    wait: int = 1  # steps skipped after the first one
    warmup: int = 1  # steps recorded and thrown away (profiler start-up cost)
    active: int = 5  # steps kept
    shapes: bool = False  # record_shapes
    memory: bool = False  # profile_memory: allocator events, counters hbm.* / host.*
    stack: bool = False  # with_stack
    max_bytes: int | None = None  # no trace is started once the capture folder holds this much

    def to_env(self) -> str:
        import json

        return json.dumps(asdict(self))

    @classmethod
    def from_env(cls, environ=os.environ) -> "Settings | None":
        import json

        text = environ.get(ENV)
        return cls(**json.loads(text)) if text else None


def rank_identity(environ=os.environ) -> dict:
    """torchrun's RANK, LOCAL_RANK and WORLD_SIZE (0, 0, 1 for a single process)."""

    def number(name, default):
        value = environ.get(name, "")
        return int(value) if value.isdigit() else default

    return {"rank": number("RANK", 0), "local_rank": number("LOCAL_RANK", 0), "world_size": number("WORLD_SIZE", 1)}


def trace_path(capture: str | Path, rank: int) -> Path:
    """`trace_rank<R>.json.gz`: the ingest reads the rank from the name when the trace has no
    distributedInfo (a job without torch.distributed)."""
    return Path(capture) / f"trace_rank{rank}.json.gz"


def claim(path: Path) -> Path:
    """`path`, created empty for this process; when another process of the same rank has it
    already (two processes with one RANK), `<name>.pid<PID><suffixes>` beside it: never overwritten."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tag = f".pid{os.getpid()}."
    mine = path if tag in path.name else path.with_name(path.name.replace(".", tag, 1))
    for candidate in (path, mine):
        try:
            os.close(os.open(candidate, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            return candidate
        except FileExistsError:
            continue
    return candidate  # this process's own pid-named file: its own to replace


def job_log_path(capture: str | Path, rank: int) -> Path:
    return Path(capture) / f"job_rank{rank}.jsonl"


def _rss_reader():
    """A function returning this process's resident memory in bytes (Linux /proc), or None."""
    try:
        page = os.sysconf("SC_PAGE_SIZE")
        handle = open("/proc/self/statm", "rb", buffering=0)
    except (OSError, ValueError, AttributeError):
        return None

    def read() -> int:
        handle.seek(0)
        return int(handle.read(64).split()[1]) * page

    try:
        read()
    except (OSError, ValueError, IndexError):
        return None
    return read


class JobLog:
    """The job's own memory at step ends over the whole job (not only in the profiler window):
    (time, steps done, RSS) at every step for the first `DENSE_MARKS` steps (a short job still
    gets a trend), then at most every `MARK_GAP_NS` (one /proc read each), thinned to every other
    mark past `MAX_MARKS`; and the profiler's window (start; end once its trace is written)."""

    DENSE_MARKS = 256
    MARK_GAP_NS = 20_000_000
    MAX_MARKS = 20_000

    def __init__(self, capture: str):
        self.capture = capture
        self.read_rss = _rss_reader()
        self.steps = 0
        self.gap = self.MARK_GAP_NS
        self.last = 0
        self.marks: list[tuple[int, int, int]] = []
        self.window: list[tuple[int, int]] = []  # (time, 1 profiling / 0 done)
        self.written = False

    def step(self) -> None:
        self.steps += 1
        now = time.time_ns()
        if self.read_rss is None or (now - self.last < self.gap and self.steps > self.DENSE_MARKS):
            return
        self.last = now
        self.marks.append((now, self.steps, self.read_rss()))
        if len(self.marks) > self.MAX_MARKS:
            del self.marks[1::2]
            self.gap *= 2

    def profiling(self, on: bool) -> None:
        self.window.append((time.time_ns(), int(on)))

    def write(self, trace: Path | None = None) -> Path | None:
        """`job_rank<R>.jsonl` in the host-metrics format, named like this process's `trace`
        (`job_rank0.pid<PID>.jsonl` beside `trace_rank0.pid<PID>.json.gz`); once, at the end."""
        if self.written or not (self.marks or self.window):
            return None
        self.written = True
        import json
        import socket

        rank = rank_identity()["rank"]
        lines = [
            {
                "trnprof_host_metrics": 1,
                "source": "trnprof record runtime",
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "job": stack_facts(),
            }
        ]
        rows = [
            (ts, [[rank, "job.step", float(n), "count"], [rank, "job.rss", float(rss), "bytes"]])
            for ts, n, rss in self.marks
        ]
        rows += [(ts, [[rank, "job.profiler", float(on), "state"]]) for ts, on in self.window]
        lines += [{"ts": ts, "samples": samples} for ts, samples in sorted(rows, key=lambda r: r[0])]
        path = claim(
            trace.with_name(trace.name.replace("trace_rank", "job_rank", 1).replace(".json.gz", ".jsonl"))
            if trace is not None
            else job_log_path(self.capture, rank)
        )
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
        return path


def stack_facts() -> dict:
    """This process's framework and Neuron SDK release (`stack.py`, loaded by path as this file
    is); {} when it cannot tell. Read once, when the job log is written at the process's end,
    so the modules the job imported are known."""
    try:
        import importlib.util

        spec = importlib.util.spec_from_file_location("_trnprof_record_stack", Path(__file__).with_name("stack.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.detect()
    except Exception:  # never break the training job over its description
        return {}


def folder_bytes(folder: str | Path) -> int:
    return sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file())


class Session:
    """Steps counted from `start()`: `wait` steps with no profiler at all (the cost outside the
    window is one Python call per step), then torch.profiler for `warmup` + `active` steps."""

    def __init__(self, settings: Settings, *, manual: bool, log: JobLog | None = None):
        self.settings = settings
        self.manual = manual
        self.log = log  # the job's memory over the whole job (under `trnprof record`)
        self.pid = os.getpid()
        self.profiler = None
        self.stepper = None  # id of the optimizer whose steps count (automatic mode)
        self.started = False  # counting steps
        self.to_wait = settings.wait
        self.steps = 0  # steps the profiler has seen
        self.closed = False
        self.written: Path | None = None

    def start(self) -> None:
        if self.started or self.closed:
            return
        self.started = True
        if self.to_wait <= 0:
            self._start_profiler()

    def _start_profiler(self) -> None:
        s = self.settings
        if s.max_bytes is not None and folder_bytes(s.capture) >= s.max_bytes:
            self.closed = True  # the capture is full: this rank records nothing
            return
        import torch
        from torch.profiler import ProfilerActivity, profile, schedule

        if _profiler_running(torch):
            self.closed = True  # the program runs its own torch.profiler: one profiler at a time
            print("trnprof: this process runs its own torch.profiler; trnprof records nothing here", file=sys.stderr)
            return
        activities = [ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(ProfilerActivity.CUDA)
        import warnings

        with warnings.catch_warnings():  # warmup=0 is the user's choice, not a mistake
            warnings.simplefilter("ignore", UserWarning)
            self.profiler = profile(
                activities=activities,
                record_shapes=s.shapes,
                profile_memory=s.memory,
                with_stack=s.stack,
                on_trace_ready=self._write,
                schedule=schedule(wait=0, warmup=s.warmup, active=s.active, repeat=1),
            )
        self.profiler.start()
        if self.log is not None:
            self.log.profiling(True)
        atexit.register(self.finish)
        _stop_on_sigterm(self)

    def step(self) -> None:
        if self.log is not None and self.started and _current is self:  # a replaced session's steps
            self.log.step()  # are not counted twice
        if self.closed:
            return
        if not self.started:
            self.start()
        elif self.profiler is None:
            self.to_wait -= 1
            if self.to_wait <= 0:
                self._start_profiler()
        else:
            self.profiler.step()
            self.steps += 1
            if self.steps >= self.settings.warmup + self.settings.active:
                self.stop()  # the window is written: no profiler cost for the rest of the job

    def stop(self) -> None:
        """Close the profiler; a window in progress is written with the steps it holds."""
        if self.profiler is None or self.closed:
            self.closed = True
            return
        self.closed = True
        with _signals_deferred():
            try:
                self.profiler.stop()
            finally:
                if self.log is not None:
                    self.log.profiling(False)  # the window ends once its trace is written

    def _write(self, prof) -> None:
        """The window's trace, whole or not at all: a signal that arrives while it is written
        waits until it is (then acts as it would have), and the file appears complete (rename)."""
        with _signals_deferred():
            path = claim(trace_path(self.settings.capture, rank_identity()["rank"]))
            partial = path.with_name("." + path.name.replace(".json.gz", ".partial.json.gz"))
            prof.export_chrome_trace(str(partial))
            os.replace(partial, path)
            self.written = path

    def finish(self) -> None:
        """At the process's end: the window is written, then the job's memory log (only in the
        process that made the session, not in a forked child that inherited it)."""
        if os.getpid() != self.pid:
            return
        try:
            self.stop()
        finally:
            if self.log is not None:
                self.log.write(self.written)

    def on_optimizer_step(self, optimizer) -> None:
        if self.manual:
            return
        if self.stepper is None:
            self.stepper = id(optimizer)
            self.start()  # after the first step: its one-off costs are not in the window
        elif id(optimizer) == self.stepper:
            self.step()


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _profiler_running(torch) -> bool:
    enabled = getattr(getattr(getattr(torch, "_C", None), "_autograd", None), "_profiler_enabled", None)
    return bool(enabled and enabled())


_current: Session | None = None


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


class _signals_deferred:
    """SIGINT and SIGTERM held while a trace is written (main thread only), then delivered
    again to this process: a Ctrl-C that lands in the write stops the job after the write."""

    def __enter__(self):
        self.held: list[int] = []
        self.previous = {}
        if _main_thread():
            for sig in _STOP_SIGNALS:
                self.previous[sig] = signal.signal(sig, lambda signum, frame: self.held.append(signum))
        return self

    def __exit__(self, *exc):
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)
        for sig in dict.fromkeys(self.held):
            os.kill(os.getpid(), sig)


def _stop_on_sigterm(session: Session) -> None:
    """SIGTERM (torchrun's and `trnprof record`'s stop) writes the window and the job's memory
    log, then ends the process as SIGTERM would have. A handler the program installed itself is
    left alone."""
    if not _main_thread() or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return

    def handler(signum, frame):
        (_current or session).finish()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    signal.signal(signal.SIGTERM, handler)


def current() -> Session | None:
    return _current


def begin(settings: Settings, *, manual: bool) -> Session:
    """Make the process's session (one per process); manual sessions start at once."""
    global _current
    busy = (
        _current is not None
        and not _current.closed
        and (_current.profiler is not None or (_current.manual and _current.started))
    )
    if busy:
        raise RuntimeError("trnprof: a profile is already being recorded in this process")
    log = None
    if _current is not None:
        _current.closed = True  # an automatic session that had not started yet stands down
        log = _current.log  # the job's memory log goes on
    _current = Session(settings, manual=manual, log=log)
    if manual:
        _current.start()
    return _current


def step() -> None:
    """Mark the end of a training step. Under `trnprof record` the first call switches step
    detection from the optimizer hook to these calls."""
    session = _current
    if session is None:
        return
    if not session.manual:
        session.manual = True
    session.step()


def install_auto(settings: Settings) -> None:
    """Automatic mode: count the steps of the first optimizer that steps."""
    from torch.optim.optimizer import register_optimizer_step_post_hook

    session = begin(settings, manual=False)
    session.log = JobLog(settings.capture)
    atexit.register(lambda: _current is not None and _current.finish())
    _stop_on_sigterm(session)
    register_optimizer_step_post_hook(lambda optimizer, args, kwargs: session.on_optimizer_step(optimizer))
