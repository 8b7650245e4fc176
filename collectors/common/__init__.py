"""What every reader of real traces shares, below the readers and the ingest that drives them:
the value limits (`limits`), the input being read (`source`) and the ingest tables beside
events and counters (`tables`)."""
