"""A 2-rank DistributedDataParallel job on gloo (CPU, loopback) with one late rank, for the
straggler tests under `trnprof record` (tests/critical_path/test_straggler_recorded.py):

    torchrun --nproc-per-node 2 straggler_gloo.py --steps N --late-rank 1 --python-ms 100 [--report F]

Each step the late rank first spends `--python-ms` in pure Python (a loop no profiler op
records) or `--sleep-ms` asleep, then runs the same forward, backward and optimizer step as
its peer; the gradient all-reduce makes the peer wait for it.
"""

import argparse
import json
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel


def python_work(ms: float) -> int:
    """Busy pure-Python work for `ms` milliseconds (no torch op, nothing the profiler records)."""
    until, spins = time.perf_counter() + ms / 1e3, 0
    while time.perf_counter() < until:
        spins += sum(range(50))
    return spins


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--late-rank", type=int, default=1)
    parser.add_argument("--python-ms", type=float, default=0.0)
    parser.add_argument("--sleep-ms", type=float, default=0.0)
    parser.add_argument("--report", help="JSON file the late rank writes its delay per step to (ms)")
    args = parser.parse_args()
    dist.init_process_group("gloo")
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 8)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    late = dist.get_rank() == args.late_rank
    delays = []
    for _ in range(args.steps):
        began = time.perf_counter()
        if late and args.python_ms:
            python_work(args.python_ms)
        if late and args.sleep_ms:
            time.sleep(args.sleep_ms / 1e3)
        delays.append((time.perf_counter() - began) * 1e3)
        x = torch.randn(32, 64)
        loss = model(x).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    if late and args.report:
        with open(args.report, "w") as handle:
            json.dump(delays, handle)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
