"""Collectors: everything that produces runs (installed as `trnprof.collectors`)."""
