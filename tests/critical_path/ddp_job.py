"""A 2-rank DDP job on CPU (gloo over loopback) profiled for the replay tests
(tests/critical_path/test_critical_path_ddp.py). Its steps take turns in three variants: `balanced`, `slow`
(rank 1 also multiplies two 384x384 matrices 20 times) and `no_sync` (the backward pass inside
DDP's no_sync(): no gradient all-reduce). Interleaved, the variants see the same load on a shared
machine, and the job starts once.

    python -m tests.critical_path.ddp_job OUT_DIR     # OUT_DIR/rank<N>.json; step s is variant PHASES[s % 3]

Needs torch (installed in the project's test environment, not a trnprof dependency).
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
from pathlib import Path

PHASES = ("balanced", "slow", "no_sync")
SLOW_RANK, WORLD = 1, 2
WAIT, WARMUP, ACTIVE = 1, 2, 36  # 12 steps of each variant
EXTRA_MATMULS = 20


def phase_of(step: int) -> str:
    return PHASES[step % len(PHASES)]


def _profile(rank: int, out: Path, model, optimizer) -> None:
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function, schedule

    data, target = torch.randn(64, 256), torch.randn(64, 256)
    a, b = torch.randn(384, 384), torch.randn(384, 384)
    path = out / f"rank{rank}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE),
        on_trace_ready=lambda prof: prof.export_chrome_trace(str(path)),
    ) as prof:
        for step in range(WAIT + WARMUP + ACTIVE):
            phase = phase_of(step)
            if phase == "slow" and rank == SLOW_RANK:
                with record_function("slow_rank.extra_matmul"):
                    for _ in range(EXTRA_MATMULS):
                        torch.mm(a, b)
            loss = ((model(data) - target) ** 2).mean()
            optimizer.zero_grad()
            with model.no_sync() if phase == "no_sync" else contextlib.nullcontext():
                loss.backward()
            optimizer.step()
            prof.step()


def worker(rank: int, out: str, port: int) -> None:
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel

    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 256)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    _profile(rank, Path(out), model, optimizer)
    dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    import torch.multiprocessing as mp

    mp.spawn(worker, args=(sys.argv[1], _free_port()), nprocs=WORLD)


if __name__ == "__main__":
    main()
