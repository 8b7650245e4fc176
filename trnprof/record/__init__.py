"""Live capture: `trnprof record -- CMD` and `trnprof.profile()` / `trnprof.step()` (docs/record.md).

- `runtime`: the profiler inside the training process (stdlib and torch only), and the job's own
  memory over the whole job (`job_rank<R>.jsonl`);
- `boot/sitecustomize.py`: puts the runtime into every Python process of a recorded command;
- `hostmetrics`: psutil samples of CPU, memory, disk and network while the command runs;
- `neuron`: the Neuron runtime's system-profile environment and the neuron-monitor sidecar;
- `preflight`: what is checked before the job starts (paths, ranks);
- `capture`: running the command with all of the above, signals forwarded;
- `recorder`: capture, then ingest into one run;
- `api`: the Python API.
"""
