"""Host metrics sampled by `trnprof record` (`host_metrics.jsonl`) -> counters: the file's names
in `format`, the reader in `metrics` (imported where used, so the format detection can name the
format without importing the reader)."""
