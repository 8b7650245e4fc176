"""The names of `trnprof record`'s host-metrics file, shared by its writer
(`trnprof.record.hostmetrics`), the format detection and the reader (`metrics.py`)."""

FORMAT = "trnprof-host-metrics"
HEADER_KEY = "trnprof_host_metrics"  # the first key of the file's header line
FILE_NAME = "host_metrics.jsonl"
