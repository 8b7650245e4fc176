"""A tiny training job whose data loader is slower than its model: the device (here the CPU)
waits for every batch. `trnprof record --analyze -- python examples/train_slow_loader.py`
reports it as input.starvation.

Options: --steps N (default 12), --load-ms MS per batch (default 20), --workers N (default 0),
--crash-at STEP (raise at that step, to try a crash), --hidden N (model width), --log-steps
(print `step N` after each step).
"""

import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class SlowDataset(Dataset):
    """Each sample takes `load_ms` / batch of wall time to 'read and decode'."""

    def __init__(self, n: int, width: int, batch: int, load_ms: float):
        self.n, self.width, self.delay = n, width, load_ms / 1000.0 / batch

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.delay)
        g = torch.Generator().manual_seed(i)
        return torch.randn(self.width, generator=g), torch.randint(0, 10, (), generator=g)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--load-ms", type=float, default=20.0)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--crash-at", type=int, default=None)
    parser.add_argument("--log-steps", action="store_true")
    args = parser.parse_args()

    torch.manual_seed(0)
    data = SlowDataset(args.steps * args.batch, 32, args.batch, args.load_ms)
    loader = DataLoader(data, batch_size=args.batch, num_workers=args.workers)
    model = nn.Sequential(nn.Linear(32, args.hidden), nn.ReLU(), nn.Linear(args.hidden, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step, (x, y) in enumerate(loader):
        if step == args.crash_at:
            raise RuntimeError(f"crash requested at step {step}")
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if args.log_steps:
            print(f"step {step}", flush=True)
    print(f"trained {args.steps} steps, last loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
