"""What a run of the job measures: the stdlib's two views of the step time (views step_phases,
step_slots and step_time_views, docs/stdlib.md) read off the model's noise-free timeline of a
run as long as the measured one (`run.steps`).

The *typical* step is the median steady step, the *effective* step the wall time per steady
step. Both depend on the run's length, not only on the steady state `predict.predictions` gives:
a slow loader's prefetch queue (workers x prefetch batches, filled while the first step
compiles) hides the loader for the run's first steps, so a short run measures the device's step
for most steps and waits for the loader only once the queue has drained; a recompile every N
steps adds its seconds to one step in N. So the model runs the run the user measured, step for
step, and reads it as the stdlib does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .faults import Effects
from .plan import Plan
from .predict import noise_free_timeline

MAX_WARMUP = 2  # step_phases: at most the two leading compiling steps are warm-up
MAX_MODELLED = 256  # steps simulated at most; a longer run's later steps are extrapolated
WAIT_FLOOR_S = 1e-9  # a shorter wait is none: the simulator writes input waits from 1 ns


@dataclass(frozen=True)
class RunViews:
    typical_s: float  # median steady step, s
    effective_s: float  # wall time per steady step, s
    unwaited_s: float  # median steady step in which no rank waited for input (`unwaited`), s
    steady: int  # steady steps of the run


def warmup_steps(compiles: np.ndarray) -> int:
    """Warm-up steps as step_phases counts them: the leading steps that compile, at most two,
    never the last step."""
    n = 0
    while n < min(MAX_WARMUP, len(compiles) - 1) and compiles[n]:
        n += 1
    return n


def step_spans(tl) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per step, as step_times and step_slots read the step events: the earliest start, the step
    time (the slowest rank's end minus its own start) and the latest end."""
    starts = np.min([st.step_start.min(axis=1) for st in tl.stages], axis=0)
    durs = np.max([(st.step_end - st.step_start[:, :, None]).max(axis=(1, 2)) for st in tl.stages], axis=0)
    ends = np.max([st.step_end.max(axis=(1, 2)) for st in tl.stages], axis=0)
    return starts, durs, ends


def input_waits(tl) -> np.ndarray:
    """Per step, the longest wait of any rank for its batch (the `dataloader.next` events the
    simulator writes: a forward block's batch in hand after its device was ready), s."""
    waits = [np.clip(st.got - st.ready, 0, None).sum(axis=1).max(axis=1) for st in tl.stages]
    return np.max(waits, axis=0)


def unwaited(durs: np.ndarray, waits: np.ndarray) -> float:
    """The median of the steps in which no rank waited for its input (all of them when every
    step waited): a loader that bounds the step makes the typical step a matter of where its
    workers' rounds fall, which noise moves; these steps it leaves alone."""
    kept = durs[waits < WAIT_FLOOR_S]
    return float(np.median(kept if len(kept) else durs))


def run_views(plan: Plan, fx: Effects, steps: int) -> RunViews:
    """The typical and effective step a run of `steps` steps of the plan's job measures. Past
    MAX_MODELLED steps (the loader queue has long drained) each further step is the typical one,
    plus the compile seconds on the steps that recompile."""
    modelled = max(min(steps, MAX_MODELLED), 1)
    compiles = fx.compile_steps(modelled)
    tl = noise_free_timeline(plan, fx, compiles)
    starts, durs, ends = step_spans(tl)
    first = warmup_steps(compiles)
    typical = float(np.median(durs[first:]))
    wall = float(ends[-1] - starts[first])
    if steps > modelled:
        later = fx.compile_steps(steps)[modelled:]
        wall += len(later) * typical + float(later.sum()) * plan.compile_s
    steady = max(steps, 1) - first
    return RunViews(typical, wall / steady, unwaited(durs[first:], input_waits(tl)[first:]), steady)
