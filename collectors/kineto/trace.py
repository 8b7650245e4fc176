"""Read one Kineto / Chrome trace file into canonical tables, streamed chunk by chunk.

Each decoded chunk is staged and mapped at once; its event rows are spilled to an uncompressed
Arrow stream in a temporary file, so memory holds one chunk whatever the trace size. At the end
of the file (header known: rank, time base) the spill is read back batch by batch and finished
(`finish.py`). Use as a context manager; consume `event_batches()` before reading `quarantine`
and `counts`, which it completes.
"""

from __future__ import annotations

import gc
import os
import tempfile
import weakref
from collections import Counter
from pathlib import Path
from typing import Callable, Iterator

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from trnprof.collectors.common.tables import FLOWS as FLOWS_SCHEMA
from trnprof.collectors.common.tables import meta_rows, quarantine_table
from trnprof.errors import TrnprofError

from . import classify
from .columns import Staged
from .counters import counters_table
from .finish import FileFacts, finalize, settle_held
from .header import TraceInfo, detect_rank, device_memory, export_marker, parse_header
from .mapping import Mapped, map_chunk
from .partial import PARTIAL, launches_of
from .platform import platform_facts
from .route import DESTINATIONS
from .workers import staged_chunks

BATCH_ROWS = 1 << 17  # rows per Parquet write when the spill is read back (bounds memory)


class TraceFile:
    """One trace file, read. Tables: `counters`, `flows`, `meta`, then (after the event batches
    were consumed) `quarantine`; `counts` records where every source entry went."""

    def __init__(self, path: Path, rank_option: int | None, progress, spill_dir):
        self.path = path
        self.source = path.name
        handle, name = tempfile.mkstemp(dir=spill_dir, prefix=".trnprof-spill-", suffix=".arrows")
        os.close(handle)
        self._spill = Path(name)  # native Arrow file I/O: no Python file object in the loop
        self._cleanup = weakref.finalize(self, self._spill.unlink, missing_ok=True)  # even if never closed
        self._sink = None
        self._writer = None
        self._held, self._records, self._steps, self._margs = [], [], [], []
        self._samples, self._flows, self._meta, self._quarantine = [], [], [], []
        self._by_source = Counter()
        self._devices: set = set()
        self._device_work = False
        self.platforms: set = set()
        self.unknown_device_events = 0
        self._lanes: dict = {}
        self._export = None
        self._entries = 0
        self._truncated_args = 0  # events whose args were over limits.MAX_ARGS_BYTES
        try:
            self._settle(self._read(progress), rank_option)
        except BaseException:
            self.close()
            raise

    def _settle(self, header: dict, rank_option: int | None) -> None:
        """What the whole file tells: rank, time base, metadata and counters on the run clock."""
        path = self.path
        self.info: TraceInfo = parse_header(header, path)
        if self._export is None and self.info.export is not None:
            raise TrnprofError(
                f"{path}: a trnprof export whose otherData does not precede traceEvents; "
                "re-export it with trnprof export"
            )
        if self._export is not None:
            self.rank, self.rank_from = None, "pid (trnprof export)"
        else:
            self.rank, self.rank_from = detect_rank(self.info, path, rank_option)
        self.device = classify.device_index(self._devices)
        meta_header = meta_rows(
            list(header),
            [None] * len(header),
            [None] * len(header),
            [v.decode("utf-8", "replace") for v in header.values()],
            "header",
            self.rank,
            self.source,
        )
        self.meta = pa.concat_tables([meta_header] + [self._with_rank(t) for t in self._meta])
        self.flows = pa.concat_tables(self._flows).cast(FLOWS_SCHEMA) if self._flows else FLOWS_SCHEMA.empty_table()
        self.flows = self._with_rank(self.flows).set_column(6, "ts", pc.add(self.flows["ts"], self.info.base_ns))
        self.counters = counters_table(self._samples, self.rank, self.info.base_ns)
        no_steps = pa.table(
            {"ts": pa.array([], pa.int64()), "dur": pa.array([], pa.int64()), "step": pa.array([], pa.int64())}
        )
        self.facts = FileFacts(
            rank=self.rank,
            base_ns=self.info.base_ns,
            cpu_only=self._export is None and not self._device_work,
            single_device=self._export is None and len(self._devices) <= 1,
            process_group=self.info.process_group,
            steps=None if self._export is not None else (pa.concat_tables(self._steps) if self._steps else no_steps),
        )
        self.quarantine = None
        self.counts = None

    def _with_rank(self, table: pa.Table) -> pa.Table:
        if self.rank is None or not table.num_rows:
            return table
        return table.set_column(0, "rank", pa.array([self.rank] * table.num_rows, pa.int32()))

    # -- reading -------------------------------------------------------------------------
    def _read(self, progress) -> dict:
        header = {}
        enabled = gc.isenabled()
        gc.disable()  # millions of short-lived acyclic objects: collections would only cost time
        try:
            for chunk, result in staged_chunks(self.path, progress, {"exact": False}):
                if chunk.early_header is not None:
                    self._start(chunk.early_header)
                self._chunk(result)
                if chunk.header is not None:
                    header = chunk.header
        except TrnprofError as exc:
            if str(self.path) in str(exc):
                raise
            raise TrnprofError(f"{self.path}: {exc}") from None
        finally:
            if enabled:
                gc.enable()
        if self._writer is not None:
            self._writer.close()
            self._sink.close()
        if self._entries == 0:
            raise TrnprofError(f"{self.path}: the trace has no events (traceEvents is empty)")
        return header

    def _start(self, early: dict) -> None:
        self._export = export_marker(early)

    def _chunk(self, result: Staged | Mapped) -> None:
        mapped = result
        if isinstance(result, Staged):  # mapped here: one process, or a trnprof export
            mapped = map_chunk(result, self.source, None if self._export is None else self._lanes)
        self._entries += mapped.entries
        self._truncated_args += mapped.truncated_args
        self._lanes.update(mapped.lanes)
        if mapped.meta is not None:
            self._meta.append(mapped.meta)
        self._samples += mapped.samples
        if mapped.flows is not None:
            self._flows.append(mapped.flows)
        if mapped.side is not None:
            self._side(mapped.side)
        if mapped.partial is not None:
            if self._writer is None:
                self._sink = pa.OSFile(str(self._spill), "wb")
                self._writer = pa.ipc.new_stream(self._sink, PARTIAL)
            self._writer.write_table(mapped.partial)
        self._quarantine += mapped.quarantine
        self._by_source.update(mapped.by_source)

    def _side(self, side: dict) -> None:
        self._held.append(side["held"])
        self._records.append(side["records"])
        self._steps.append(side["steps"])
        self._margs.append(side["margs"])
        self._devices |= side["devices"]
        self._device_work |= side["device_work"]
        self.platforms |= side["platforms"]
        self.unknown_device_events += side["unknown_device_events"]

    # -- the end of the file -------------------------------------------------------------
    def event_batches(self) -> Iterator[pa.Table]:
        """Canonical event rows, in batches of up to BATCH_ROWS."""
        pending, size = [], 0
        for batch in self._partial_batches():
            pending.append(batch)
            size += batch.num_rows
            if size >= BATCH_ROWS:
                yield finalize(pa.concat_tables(pending), self.facts)
                pending, size = [], 0
        if pending:
            yield finalize(pa.concat_tables(pending), self.facts)
        self._finish_counts()

    def _spilled(self) -> Iterator[pa.Table]:
        if self._writer is not None:
            with pa.OSFile(str(self._spill), "rb") as source, pa.ipc.open_stream(source) as reader:
                for batch in reader:
                    yield pa.Table.from_batches([batch])

    def _partial_batches(self) -> Iterator[pa.Table]:
        """The spilled rows, then the settled collectives (whose launch calls, when a kernel
        lacks its own collective args, are collected from the spilled rows on the way)."""
        margs = pd.concat(self._margs, ignore_index=True) if self._margs else pd.DataFrame()
        held = pa.concat_tables(self._held) if self._held else None
        labelled = margs["idx"][margs["collective_name"].notna()] if "collective_name" in margs else []
        needs_launches = (
            held is not None
            and pc.any(
                pc.and_(
                    pc.equal(held["cat"], "kernel"), pc.invert(pc.is_in(held["idx"], pa.array(labelled, pa.int64())))
                )
            ).as_py()
        )
        launches = []
        for batch in self._spilled():
            if needs_launches:
                launches.append(launches_of(batch))
            yield batch
        if held is not None:
            found = pa.concat_tables(launches) if launches else pa.table({"correlation": pa.array([], pa.int64())})
            yield settle_held(held, margs, found, pa.concat_tables(self._records), self.facts)

    def _finish_counts(self) -> None:
        by_source = Counter(self._by_source)
        for idx, reason, detail, event, src in self.facts.moved_to_quarantine:
            self._quarantine.append((idx, reason, detail, event))
            by_source[(src, "events")] -= 1
            by_source[(src, "quarantine")] += 1
        self.quarantine = quarantine_table(sorted(self._quarantine), self.rank, self.source)
        nested = {}
        for (src, dest), n in sorted(by_source.items()):
            if n:
                nested.setdefault(src, {})[dest] = n
        totals = {d: sum(n for (_, dd), n in by_source.items() if dd == d) for d in DESTINATIONS}
        reasons = Counter(r[1] for r in self._quarantine)
        self.counts = {
            "source_entries": self._entries,
            "to": totals,
            "counter_rows": self.counters.num_rows,
            "by_source": nested,
            "quarantine_reasons": dict(sorted(reasons.items())),
        }
        if self._truncated_args:
            self.counts["truncated_args"] = self._truncated_args
        if self.unknown_device_events:  # device work of a kind the ingester does not know
            self.counts["unknown_device_events"] = self.unknown_device_events
        if self.facts.refused_payloads:  # kept as events, without bytes: see collectives.py
            self.counts["ignored_args"] = {"collective_payload": self.facts.refused_payloads}

    @property
    def platform(self) -> dict:
        """device_kind and device_model of the file (collectors/kineto/platform.py)."""
        return platform_facts(self.platforms, self._device_work, self.info.devices)

    @property
    def rank_row(self) -> dict:
        return {
            "rank": self.rank,
            "host": self.info.host,
            "chip": self.device,
            "hbm_capacity_bytes": device_memory(self.info, self.device),
        }

    def close(self) -> None:
        if self._sink is not None and not self._sink.closed:
            self._sink.close()
        self._spill.unlink(missing_ok=True)

    def __enter__(self) -> "TraceFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_trace(
    path: str | Path,
    *,
    rank: int | None = None,
    progress: Callable[[int], None] | None = None,
    spill_dir: str | Path | None = None,
) -> TraceFile:
    """Decode, stage and map one trace file; TrnprofError on unusable input."""
    return TraceFile(Path(path), rank, progress, spill_dir)
