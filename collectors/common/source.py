"""What a (non-streamed) reader hands to the ingest: the tables of one input, already canonical."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa


@dataclass
class Source:
    path: Path
    format: str
    events: pa.Table | None = None  # canonical events (trnprof.schema.EVENTS)
    counters: pa.Table | None = None  # canonical counters
    extra: dict[str, pa.Table] = field(default_factory=dict)  # extra table name -> rows
    quarantine: pa.Table | None = None  # trnprof.collectors.common.tables.QUARANTINE
    ranks: list[dict] = field(default_factory=list)  # rows of the ranks table
    counts: dict = field(default_factory=dict)  # where the source entries went
    job: dict = field(default_factory=dict)
    rank_from: str = ""
