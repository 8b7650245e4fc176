"""One small PyTorch training job (CPU, 1 or 2 ranks over gloo) whose problems can be switched on
one at a time, so the same job runs with and without a problem under `trnprof record`
(bench/counterfactuals/capture.py). It prints its own step times (`step N MS`), measured by the
job's clock outside the profiler, which is what a fix is worth: the ground truth the findings'
prices are held to.

Problems (each off by default):
  --load-ms MS          the data loader sleeps MS per batch on the training thread (no workers)
  --straggle-rank R     rank R is late before backward by --straggle-ms, doing --straggle-kind:
                        compute (extra matmuls), python (a pure-Python loop) or sleep
  --no-overlap          gradients all-reduced one parameter at a time after backward (no DDP
                        buckets, nothing overlapped) instead of DistributedDataParallel
  --bucket-mb MB        DistributedDataParallel's bucket_cap_mb (default: DDP's 25 MB, which holds
                        all but the first MiB of this job's 14 MB of gradients: one bucket after
                        backward)
  --small-ops N         N tiny elementwise ops per step on the training thread (instead of one)
  --pipeline            two pipeline stages instead of data parallelism (2 ranks: rank 0 holds the
                        first half of the layers, rank 1 the second; --micro microbatches forward
                        then backward, activations and gradients sent with blocking send/recv);
                        a straggler then slows its stage
Run it alone for one rank, under torchrun for two.
"""

import argparse
import os
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Batches(Dataset):
    def __init__(self, n: int, batch: int, width: int, load_ms: float):
        self.n, self.batch, self.width, self.delay = n, batch, width, load_ms / 1000.0

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.delay:
            time.sleep(self.delay)
        g = torch.Generator().manual_seed(i)
        return torch.randn(self.batch, self.width, generator=g)


def busy_python(ms: float) -> None:
    end = time.perf_counter() + ms / 1000.0
    x = 0
    while time.perf_counter() < end:
        x += 1


def busy_compute(ms: float, a: torch.Tensor) -> None:
    end = time.perf_counter() + ms / 1000.0
    while time.perf_counter() < end:
        a = torch.tanh(a @ a * 1e-3)


def straggle(kind: str, ms: float, a: torch.Tensor) -> None:
    if kind == "sleep":
        time.sleep(ms / 1000.0)
    elif kind == "python":
        busy_python(ms)
    else:
        busy_compute(ms, a)


def allreduce_per_parameter(model: nn.Module, world: int) -> None:
    for p in model.parameters():
        dist.all_reduce(p.grad)
        p.grad /= world


def pipeline_step(stage: nn.Module, rank: int, x: torch.Tensor, micro: int, width: int, late) -> None:
    """One GPipe step of two stages over gloo: every microbatch forward, then every one backward."""
    chunks = x.chunk(micro)
    kept = []
    for chunk in chunks:
        if rank == 0:
            out = stage(chunk)
            dist.send(out.detach(), 1)
            kept.append(out)
        else:
            inp = torch.empty(chunk.shape[0], width)
            dist.recv(inp, 0)
            inp.requires_grad_(True)
            kept.append((inp, stage(inp).square().mean()))
    late()
    for item in reversed(kept):
        if rank == 0:
            grad = torch.empty_like(item)
            dist.recv(grad, 1)
            item.backward(grad)
        else:
            inp, loss = item
            loss.backward()
            dist.send(inp.grad, 0)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--width", type=int, default=768)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--load-ms", type=float, default=0.0)
    parser.add_argument("--straggle-rank", type=int, default=None)
    parser.add_argument("--straggle-ms", type=float, default=0.0)
    parser.add_argument("--straggle-kind", choices=("compute", "python", "sleep"), default="compute")
    parser.add_argument("--no-overlap", action="store_true")
    parser.add_argument("--bucket-mb", type=float, default=None)
    parser.add_argument("--small-ops", type=int, default=0)
    parser.add_argument("--pipeline", action="store_true")
    parser.add_argument("--micro", type=int, default=4)
    args = parser.parse_args()

    torch.set_num_threads(1)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1:
        dist.init_process_group("gloo")
    rank = dist.get_rank() if world > 1 else 0
    torch.manual_seed(0)
    layers = []
    for _ in range(args.layers):
        layers += [nn.Linear(args.width, args.width), nn.ReLU()]
    if args.pipeline:  # this rank's half of the layers
        half = len(layers) // 2
        layers = layers[:half] if rank == 0 else layers[half:]
    model = nn.Sequential(*layers)
    ddp = world > 1 and not args.no_overlap and not args.pipeline
    if ddp:
        buckets = {} if args.bucket_mb is None else {"bucket_cap_mb": args.bucket_mb}
        model = torch.nn.parallel.DistributedDataParallel(model, **buckets)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    loader = DataLoader(Batches(args.steps, args.batch, args.width, args.load_ms), batch_size=None)
    scratch = torch.randn(384, 384)
    small = torch.zeros(8)
    start = time.perf_counter()

    def late():
        if args.straggle_rank == rank and args.straggle_ms:
            return straggle(args.straggle_kind, args.straggle_ms, scratch)
        return None

    for step, x in enumerate(loader):
        if args.pipeline:
            optimizer.zero_grad()
            pipeline_step(model, rank, x, args.micro, args.width, late)
            optimizer.step()
            now = time.perf_counter()
            print(f"step-time rank={rank} step={step} ms={(now - start) * 1e3:.3f}", flush=True)
            start = now
            continue
        loss = model(x).square().mean()
        if args.small_ops:
            for _ in range(args.small_ops):
                small = small + 1e-6
            loss = loss + small.sum() * 0
        late()
        optimizer.zero_grad()
        loss.backward()
        if world > 1 and not ddp:
            allreduce_per_parameter(model, world)
        optimizer.step()
        now = time.perf_counter()
        print(f"step-time rank={rank} step={step} ms={(now - start) * 1e3:.3f}", flush=True)
        start = now
    if world > 1:
        dist.barrier()  # no rank tears gloo down while its peer still talks to it
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
