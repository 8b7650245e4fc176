"""A tiny training job that keeps something of every step: `--leak-mib` MiB of float32 per step
appended to a list that is never cleared (as a job that keeps each step's outputs for logging
would). `trnprof record --analyze -- python examples/train_leak.py` reports it as memory.growth
(ME002), sized from the job's own memory; `--leak-mib 0` is the same job, healthy.

Options: --steps N (default 40), --leak-mib MIB (default 4), --hidden N (model width),
--log-steps (print `step N` after each step).
"""

import argparse

import torch
from torch import nn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--leak-mib", type=float, default=4.0)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--log-steps", action="store_true")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, args.hidden), nn.ReLU(), nn.Linear(args.hidden, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    kept = []  # the leak: one tensor per step, never released
    floats = int(args.leak_mib * 2**20 / 4)
    for step in range(args.steps):
        x, y = torch.randn(64, 64), torch.randint(0, 10, (64,))
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if floats:
            kept.append(torch.full((floats,), float(step)))  # filled: its pages are resident
        if args.log_steps:
            print(f"step {step}", flush=True)
    print(f"trained {args.steps} steps, kept {len(kept)} tensors")


if __name__ == "__main__":
    main()
