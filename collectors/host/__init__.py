"""Host metrics sampled by `trnprof record` (`host_metrics.jsonl`) -> counters."""

from .metrics import FORMAT, read_host_metrics

__all__ = ["FORMAT", "read_host_metrics"]
