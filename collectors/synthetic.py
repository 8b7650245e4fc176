"""A synthetic, vectorised run generator for tests, the sample run and benchmarks.

Not a performance model (that is the Trn1 execution model): each step is an input wait, a
host-to-device copy, forward and backward compute ops on the tensor engine, and data-parallel
all-reduces launched during backward, some of which outlast it. Sizes scale to 10M+ events;
every column of the canonical schema is filled so the stdlib sees realistic shapes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from trnprof import hardware
from trnprof.manifest import new_manifest
from trnprof.runstore import write_run
from trnprof.units import GIB

HBM_PER_CORE = hardware.lookup("trn1.32xlarge")["hbm_bytes_per_core"]


def _rank_events(
    ranks: np.ndarray,
    steps: int,
    ops: int,
    colls: int,
    rng: np.random.Generator,
    input_wait_ns: int,
    slow_rank: int | None,
) -> pd.DataFrame:
    """Events of `ranks` for all steps, built as arrays (no Python loop over events)."""
    n_r = len(ranks)
    op_dur = rng.integers(40_000, 160_000, size=(n_r, steps, ops))
    if slow_rank is not None:
        op_dur[ranks == slow_rank] = (op_dur[ranks == slow_rank] * 1.5).astype(np.int64)
    wait = rng.integers(input_wait_ns // 2 + 1, input_wait_ns + 2, size=(n_r, steps))
    h2d = np.full((n_r, steps), 30_000)
    compute_total = op_dur.sum(axis=2)
    coll_dur = rng.integers(200_000, 400_000, size=(n_r, steps, colls))
    tail = coll_dur[:, :, -1]
    step_dur = wait + h2d + compute_total + tail // 2 + 20_000
    step_start = np.zeros((n_r, steps), dtype=np.int64)
    step_start[:, 1:] = np.cumsum(step_dur, axis=1)[:, :-1] + 10_000 * np.arange(1, steps)
    compute_start = step_start + wait + h2d
    op_start = compute_start[:, :, None] + np.concatenate(
        [np.zeros((n_r, steps, 1), dtype=np.int64), np.cumsum(op_dur, axis=2)[:, :, :-1]], axis=2
    )
    # all-reduces spread over the backward half, the last one ending past the compute
    bwd_start = compute_start + compute_total // 2
    frac = (np.arange(colls) + 1) / colls
    coll_start = (
        bwd_start[:, :, None]
        + (frac[None, None, :] * (compute_total // 2)[:, :, None]).astype(np.int64)
        - coll_dur // 2
    )
    rank_grid = np.broadcast_to(ranks[:, None], (n_r, steps))
    step_grid = np.broadcast_to(np.arange(steps)[None, :], (n_r, steps))

    def block(kind, name, lane, ts, dur, step, rank, phase=None, bytes_=None, flops=None, coll_op=None, coll_seq=None):
        return pd.DataFrame(
            {
                "rank": rank.ravel().astype(np.int32),
                "ts": ts.ravel(),
                "dur": dur.ravel(),
                "kind": kind,
                "name": name if isinstance(name, str) else name.ravel(),
                "lane": lane,
                "step": step.ravel().astype(np.int32),
                "phase": phase if phase is None or isinstance(phase, str) else phase.ravel(),
                "bytes": None if bytes_ is None else bytes_.ravel(),
                "flops": None if flops is None else flops.ravel(),
                "coll_op": coll_op,
                "coll_group": None if coll_op is None else "dp",
                "coll_seq": None if coll_seq is None else coll_seq.ravel(),
            }
        )

    op_rank = np.broadcast_to(ranks[:, None, None], op_dur.shape)
    op_step = np.broadcast_to(np.arange(steps)[None, :, None], op_dur.shape)
    op_phase = np.where(np.arange(ops)[None, None, :] < ops // 2, "fwd", "bwd")
    op_phase = np.broadcast_to(op_phase, op_dur.shape)
    op_names = np.array([f"matmul_{i % 8}" for i in range(ops)])
    c_rank = np.broadcast_to(ranks[:, None, None], coll_dur.shape)
    c_step = np.broadcast_to(np.arange(steps)[None, :, None], coll_dur.shape)
    c_seq = c_step * colls + np.arange(colls)[None, None, :]
    frames = [
        block("step", "ProfilerStep", "host/main", step_start, step_dur, step_grid, rank_grid),
        block("input", "dataloader_next", "host/loader", step_start, wait, step_grid, rank_grid),
        block(
            "transfer",
            "h2d_batch",
            "dma/h2d",
            step_start + wait,
            h2d,
            step_grid,
            rank_grid,
            bytes_=np.full(h2d.shape, 8 << 20),
        ),
        block(
            "compute",
            np.broadcast_to(op_names, op_dur.shape),
            "nc/tensor",
            op_start,
            op_dur,
            op_step,
            op_rank,
            phase=op_phase,
            flops=op_dur * 90_000,
        ),
        block(
            "collective",
            "all_reduce_grads",
            "nc/cc",
            coll_start,
            coll_dur,
            c_step,
            c_rank,
            phase="bwd",
            bytes_=np.full(coll_dur.shape, 50 << 20),
            coll_op="all_reduce",
            coll_seq=c_seq,
        ),
    ]
    return pd.concat(frames, ignore_index=True)


def synthetic_run(
    path: str | Path,
    *,
    ranks: int = 8,
    steps: int = 5,
    ops_per_step: int = 40,
    collectives_per_step: int = 4,
    input_wait_ns: int = 400_000,
    slow_rank: int | None = None,
    seed: int = 0,
    ranks_per_batch: int = 64,
    overwrite: bool = False,
) -> Path:
    """Write a synthetic run of `ranks` x `steps`; events per rank and step =
    ops_per_step + collectives_per_step + 3. Returns the run's path."""
    rng = np.random.default_rng(seed)
    job = {
        "model": "synthetic",
        "instance_type": "trn1.32xlarge",
        "nodes": max(1, ranks // 32),
        "samples_per_step": ranks * 4,
        "throughput_unit": "seq/s",
    }
    manifest = new_manifest(
        "trnprof.synthetic",
        job=job,
        world_size=ranks,
        synthetic={
            "steps": steps,
            "ops_per_step": ops_per_step,
            "collectives_per_step": collectives_per_step,
            "seed": seed,
            "slow_rank": slow_rank,
        },
    )
    with write_run(path, manifest, overwrite=overwrite) as run:
        for first in range(0, ranks, ranks_per_batch):
            batch = np.arange(first, min(ranks, first + ranks_per_batch))
            events = _rank_events(batch, steps, ops_per_step, collectives_per_step, rng, input_wait_ns, slow_rank)
            events["coll_ranks"] = np.where(events["kind"] == "collective", ranks, None)
            run.write_events(events)
            run.write_counters(_memory_counters(batch, events))
        run.write_ranks(
            pd.DataFrame(
                {
                    "rank": np.arange(ranks),
                    "node": np.arange(ranks) // 32,
                    "host": [f"node-{r // 32}" for r in range(ranks)],
                    "chip": (np.arange(ranks) % 32) // 2,
                    "core": np.arange(ranks) % 2,
                    "dp_rank": np.arange(ranks),
                    "tp_rank": 0,
                    "pp_rank": 0,
                    "instance_type": "trn1.32xlarge",
                    "hbm_capacity_bytes": HBM_PER_CORE,
                }
            )
        )
    return Path(path)


def _memory_counters(ranks: np.ndarray, events: pd.DataFrame) -> pd.DataFrame:
    """HBM residency per category at each step start and middle."""
    steps = events[events["kind"] == "step"]
    ts = np.concatenate([steps["ts"].to_numpy(), (steps["ts"] + steps["dur"] // 2).to_numpy()])
    rank = np.concatenate([steps["rank"].to_numpy()] * 2)
    activations = np.concatenate([np.zeros(len(steps)), np.full(len(steps), 3.0 * GIB)])
    frames = [
        pd.DataFrame({"rank": rank, "ts": ts, "name": f"hbm.{cat}", "value": value, "unit": "bytes"})
        for cat, value in (
            ("params", np.full(len(ts), 1.5 * GIB)),
            ("grads", np.full(len(ts), 1.5 * GIB)),
            ("optimizer_state", np.full(len(ts), 6.0 * GIB)),
            ("activations", activations),
        )
    ]
    return pd.concat(frames, ignore_index=True)
