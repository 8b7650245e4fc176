"""The profiler inside the profiled process. Standard library and torch only: the training
interpreter needs none of trnprof's own dependencies (the launcher loads this file by path).

One `Session` per process counts `wait` steps with no profiler, then runs `torch.profiler.profile`
for `warmup` and `active` steps (one window: one trace per rank). Steps come from `step()` (the user's
`trnprof.step()`), or, in automatic mode, from the step hook of the first optimizer that steps
(a GAN's second optimizer does not count twice). The window's trace is written when it closes,
or when the process ends early: normal exit, an exception, Ctrl-C, SIGTERM.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

ENV = "TRNPROF_RECORD"  # JSON settings for the launcher; its presence turns automatic mode on


@dataclass
class Settings:
    capture: str                 # folder the traces go to
    wait: int = 1                # steps skipped after the first one
    warmup: int = 1              # steps recorded and thrown away (profiler start-up cost)
    active: int = 5              # steps kept
    shapes: bool = False         # record_shapes
    memory: bool = False         # profile_memory: allocator events, counters hbm.* / host.*
    stack: bool = False          # with_stack
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


def folder_bytes(folder: str | Path) -> int:
    return sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file())


class Session:
    """Steps counted from `start()`: `wait` steps with no profiler at all (the cost outside the
    window is one Python call per step), then torch.profiler for `warmup` + `active` steps."""

    def __init__(self, settings: Settings, *, manual: bool):
        self.settings = settings
        self.manual = manual
        self.profiler = None
        self.stepper = None       # id of the optimizer whose steps count (automatic mode)
        self.started = False      # counting steps
        self.to_wait = settings.wait
        self.steps = 0            # steps the profiler has seen
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
            self.profiler = profile(activities=activities, record_shapes=s.shapes, profile_memory=s.memory,
                                    with_stack=s.stack, on_trace_ready=self._write,
                                    schedule=schedule(wait=0, warmup=s.warmup, active=s.active, repeat=1))
        self.profiler.start()
        atexit.register(self.stop)
        _stop_on_sigterm(self)

    def step(self) -> None:
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
        quiet = {sig: signal.signal(sig, signal.SIG_IGN) for sig in _STOP_SIGNALS if _main_thread()}
        try:
            self.profiler.stop()
        finally:
            for sig, handler in quiet.items():
                signal.signal(sig, handler)

    def _write(self, prof) -> None:
        path = trace_path(self.settings.capture, rank_identity()["rank"])
        path.parent.mkdir(parents=True, exist_ok=True)
        prof.export_chrome_trace(str(path))
        self.written = path

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


def _stop_on_sigterm(session: Session) -> None:
    """SIGTERM (torchrun's and `trnprof record`'s stop) writes the window, then ends the process
    as SIGTERM would have. A handler the program installed itself is left alone."""
    if not _main_thread() or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return

    def handler(signum, frame):
        session.stop()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    signal.signal(signal.SIGTERM, handler)


def current() -> Session | None:
    return _current


def begin(settings: Settings, *, manual: bool) -> Session:
    """Make the process's session (one per process); manual sessions start at once."""
    global _current
    busy = _current is not None and not _current.closed and (
        _current.profiler is not None or (_current.manual and _current.started))
    if busy:
        raise RuntimeError("trnprof: a profile is already being recorded in this process")
    if _current is not None:
        _current.closed = True  # an automatic session that had not started yet stands down
    _current = Session(settings, manual=manual)
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
    register_optimizer_step_post_hook(lambda optimizer, args, kwargs: session.on_optimizer_step(optimizer))
