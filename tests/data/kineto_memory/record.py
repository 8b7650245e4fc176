"""Record the PyTorch-profiler traces of tests/data/kineto_memory/ (see README.md there).

A 2-process gloo DDP job (a 3-layer MLP, CPU only) profiled with profile_memory=True and
record_shapes=True for 8 steps after 1 wait and 1 warm-up step. With --leak-mib M, every rank
keeps an M MiB tensor per step in a Python list (`leak.keep`, named by record_function), so its
host memory grows linearly; without it the job's memory is flat.

    python record.py OUT_DIR [--leak-mib 4]

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


def worker(rank: int, world: int, out: str, leak_mib: int) -> None:
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 256)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    data, target = torch.randn(64, 256), torch.randn(64, 256)
    kept = []
    path = Path(out) / f"rank{rank}.json"

    def save(prof):
        prof.export_chrome_trace(str(path))

    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE),
        on_trace_ready=save,
        profile_memory=True,
        record_shapes=True,
    ) as prof:
        for _ in range(STEPS):
            loss = ((model(data) - target) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if leak_mib:
                with record_function("leak.keep"):
                    kept.append(torch.ones(leak_mib * 262144))  # float32: 4 bytes each
            prof.step()
    dist.destroy_process_group()
    with open(path, "rb") as src, gzip.open(f"{path}.gz", "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    path.unlink()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--leak-mib", type=int, default=0)
    args = parser.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    mp.spawn(worker, args=(2, args.out, args.leak_mib), nprocs=2)


if __name__ == "__main__":
    main()
