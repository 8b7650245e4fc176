"""Record the PyTorch-profiler traces of tests/data/kineto_ddp/ (see README.md there).

A 2-process gloo DDP job (a 3-layer MLP, CPU only) profiled for 8 steps after 1 wait and 1
warm-up step. With --slow-rank R, rank R also multiplies two 384x384 matrices 40 times per step
before its forward pass (named `slow_rank.extra_matmul` by record_function), so the other rank
waits for it in the gradient all-reduce.

    python record.py OUT_DIR [--slow-rank 1]

Needs torch (not a trnprof dependency): run it in a throwaway venv.
"""

import argparse
import gzip
import os
import shutil
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.profiler import ProfilerActivity, profile, record_function, schedule

STEPS, WAIT, WARMUP, ACTIVE = 10, 1, 1, 8


def worker(rank: int, world: int, out: str, slow_rank: int | None) -> None:
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29531")
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 256)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    data, target = torch.randn(64, 256), torch.randn(64, 256)
    a, b = torch.randn(384, 384), torch.randn(384, 384)
    path = Path(out) / f"rank{rank}.json"

    def save(prof):
        prof.export_chrome_trace(str(path))

    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE),
        on_trace_ready=save,
    ) as prof:
        for _ in range(STEPS):
            if rank == slow_rank:
                with record_function("slow_rank.extra_matmul"):
                    for _ in range(40):
                        torch.mm(a, b)
            loss = ((model(data) - target) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            prof.step()
    dist.destroy_process_group()
    with open(path, "rb") as src, gzip.open(f"{path}.gz", "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    path.unlink()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--slow-rank", type=int)
    args = parser.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    mp.spawn(worker, args=(2, args.out, args.slow_rank), nprocs=2)


if __name__ == "__main__":
    main()
