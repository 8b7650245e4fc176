"""Neuron tool outputs -> canonical tables: neuron-monitor reports (`monitor`), the Profiler 2.0
`system_profile.json` (`system_profile`) Neuron Explorer Parquet profiles (`explorer`) and their
deprecated JSON output (`explorer_json`). Each reader is an ingest format of
`trnprof.collectors.ingest.builtin`, imported when an input needs it (the readers load duckdb)."""
