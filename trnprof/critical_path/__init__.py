"""Critical path and trace-driven replay (docs/critical-path.md).

A dependency graph per step is built from the run's raw events (`events`: read as Arrow with
strings dictionary-encoded; `nodes`: each lane flattened to
its top-level work; `graph`: lane order, the latest work finished before each node starts,
collectives joined across ranks, host syncs joined to the device); `replay` recomputes every
node's times along the graph with durations scaled (`scale`), and `path` walks back from the
step's end to the segments that set its length. `tables` serves the results as the session
tables `critical_path` and `critical_path_steps`. Pricing changes and findings by replay is
analysis work: `trnprof/whatif/replay.py`.

Nothing here imports the Trn1 simulator: the replay works on any run.
"""
