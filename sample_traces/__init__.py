"""Small runs and real traces shipped for the demo, docs and tests (`trnprof.sample_traces`)."""
