"""The input pipeline as producer / consumer: PyTorch DataLoader semantics.

`workers` processes each build whole microbatches (micro x per-sample host time each, slowed
when the workers of all ranks on a node outnumber its free vCPUs); at most
workers x prefetch batches are requested ahead, a new request going out each time the training
loop takes a batch; batches are delivered in order. The device asks for batch c when it is
ready for the next microbatch and waits if the batch is not there. With workers = 0 the main
process loads each batch when asked.
"""

from __future__ import annotations

import numpy as np

# Host CPU time per sample on one vCPU. Text: reading pre-tokenised ids, collating (assumption,
# 1 ms). Images: JPEG decode + random-resized crop + flip + normalise of an ImageNet-size photo
# (~500 x 375 px, ~110 KB) with PIL / libjpeg-turbo (assumption, 5 ms: the order of public
# single-core decode + augment figures; set input.per_sample_ms for a measured pipeline).
TEXT_SAMPLE_MS = 1.0
IMAGE_SAMPLE_MS = 5.0


def sample_ms(job) -> float:
    """Host milliseconds per sample: the configured value, else the default for the data."""
    configured = job.config.input.per_sample_ms
    if configured is not None:
        return configured
    return IMAGE_SAMPLE_MS if job.arch.kind == "vit" else TEXT_SAMPLE_MS


def cpu_contention(job) -> float:
    """How much slower each loader worker runs because the loader workers of every rank on a
    node share its vCPUs, less one per rank for its training process (>= 1)."""
    workers = job.config.input.workers
    if workers == 0:
        return 1.0  # the training process loads on its own vCPU
    cpn = job.cores_per_node
    free_vcpus = max(job.instance.vcpus - cpn, 1)
    return max(1.0, workers * cpn / free_vcpus)


def batch_seconds(job) -> float:
    """Host seconds one loader worker needs for one microbatch."""
    return job.micro * sample_ms(job) / 1e3 * cpu_contention(job)


class Loader:
    """The loaders of one pipeline stage's tensor-parallel groups (all members read the same
    samples, so one loader timeline per group), vectorised over groups."""

    def __init__(self, costs: np.ndarray, workers: int, prefetch: int):
        self.cost = costs  # (batches, groups) seconds per batch
        self.workers, self.capacity = workers, workers * prefetch
        n, g = costs.shape
        self.ready = np.zeros((n, g))
        self.got = np.zeros((n, g))
        self._finish = np.zeros((n, g))

    def consume(self, c: int, request: np.ndarray) -> np.ndarray:
        """Time batch c is in the training loop's hands when it asks at `request`."""
        if self.workers == 0:
            got = request + self.cost[c]
            self.ready[c] = got
        else:
            issue = self.got[c - self.capacity] if c >= self.capacity else 0.0
            free = self._finish[c - self.workers] if c >= self.workers else 0.0
            self._finish[c] = np.maximum(issue, free) + self.cost[c]
            self.ready[c] = np.maximum(self._finish[c], self.ready[c - 1]) if c else self._finish[c]
            got = np.maximum(request, self.ready[c])
        self.got[c] = got
        return got

    def queue_depth(self, consumed: int) -> np.ndarray:
        """Batches waiting in the queue right after each take, shape (consumed, groups)."""
        depth = np.zeros((consumed, self.cost.shape[1]))
        if self.workers == 0:
            return depth
        for ahead in range(1, min(self.capacity, consumed)):
            later = self.ready[ahead:consumed]
            depth[: consumed - ahead] += later <= self.got[: consumed - ahead]
        return depth
