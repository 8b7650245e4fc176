"""Gathering the inputs of one ingest into the run being written: events and counters go to the
run store as they come; ranks, job facts, extra tables and per-input counts are merged and
written at the end. Two Kineto traces claiming one rank, or declaring different world sizes,
stop the ingest with one clear error."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa

from trnprof.collectors.common.limits import check_rank
from trnprof.collectors.common.source import Source
from trnprof.collectors.common.tables import FLOWS, META, QUARANTINE
from trnprof.errors import TrnprofError

from . import formats

EXTRA_SCHEMAS = {"ingest/flows": FLOWS, "ingest/meta": META, "ingest/quarantine": QUARANTINE}


class Collected:
    def __init__(self, run, *, rank_option, default_rank, progress, spill_dir):
        self.run = run
        self.rank_option = rank_option
        self.default_rank = default_rank
        self.progress = progress
        self.spill_dir = spill_dir
        self.owner: dict[int, Path] = {}
        self.world_sizes: dict[int, Path] = {}
        self.ranks: dict[int, dict] = {}
        self.job: dict = {}
        self.extra: dict[str, list[pa.Table]] = {name: [] for name in EXTRA_SCHEMAS}
        self.files: list[dict] = []
        self.events = self.counters = 0

    def add(self, path: Path, fmt: str) -> None:
        """Read one input with its format's reader (loaded now: ingesting Kineto traces imports no
        Neuron reader, nor their duckdb)."""
        declared = formats.lookup(fmt)
        if declared.streamed:
            self._kineto(path, declared.load_reader())
        else:
            source = formats.read(declared, path, self.rank_option)
            if self.progress:
                self.progress(path.stat().st_size if path.is_file() else 0)
            self._source(source)

    def _claim(self, rank: int, path: Path) -> None:
        if rank in self.owner:
            raise TrnprofError(
                f"two traces for rank {rank}: {self.owner[rank]} and {path} "
                "(a folder should hold one trace per rank; pass them separately or fix the names)"
            )
        self.owner[rank] = path

    def _world(self, size: int | None, path: Path) -> None:
        if size is None:
            return
        if self.world_sizes and size not in self.world_sizes:
            other, first = next(iter(self.world_sizes.items()))
            raise TrnprofError(
                f"mismatched world sizes: {path} says {size}, {first} says {other} (traces of different jobs?)"
            )
        self.world_sizes.setdefault(size, path)

    def _kineto(self, path: Path, read_trace) -> None:
        with read_trace(path, rank=self.default_rank, progress=self.progress, spill_dir=self.spill_dir) as trace:
            export = trace.info.export
            if export is not None:
                ranks = [row for row in export.get("ranks", []) if isinstance(row, dict) and "rank" in row]
                for row in ranks:
                    self._claim(check_rank(row["rank"], f"{path}: otherData.ranks"), path)
                    self._merge_rank(row)
                job = export.get("job") if isinstance(export.get("job"), dict) else {}
                self.job.update(job)
                self._world(export.get("world_size"), path)
            else:
                self._claim(trace.rank, path)
                self._world(trace.info.world_size, path)
                self._merge_rank(trace.rank_row)
                self._job_from(trace.info)
                for key, value in trace.platform.items():
                    self.job.setdefault(key, value)
            with ThreadPoolExecutor(max_workers=1) as writer:  # encode Parquet while the next batch is made
                pending = None
                for batch in trace.event_batches():
                    if pending is not None:
                        pending.result()
                    pending = writer.submit(self.run.write_events, batch)
                    self.events += batch.num_rows
                if pending is not None:
                    pending.result()
            self.run.write_counters(trace.counters)
            self.counters += trace.counters.num_rows
            self.extra["ingest/flows"].append(trace.flows)
            self.extra["ingest/meta"].append(trace.meta)
            self.extra["ingest/quarantine"].append(trace.quarantine)
            origin = trace.rank_from
            if origin == "--rank" and self.rank_option is None:
                origin = "default (a single input without rank)"
            self.files.append(
                {
                    "path": str(path),
                    "format": "kineto" if export is None else "trnprof-export",
                    "rank": trace.rank,
                    "rank_from": origin,
                    **trace.counts,
                }
            )

    def _job_from(self, info) -> None:
        if info.backend:
            self.job.setdefault("backend", info.backend)
        if info.world_size:
            self.job.setdefault("world_size_declared", info.world_size)
        names = sorted({d.get("name") for d in info.devices if isinstance(d, dict) and d.get("name")})
        if names:
            self.job.setdefault("devices", names)

    def _merge_rank(self, row: dict) -> None:
        rank = int(row["rank"])
        merged = self.ranks.setdefault(rank, {"rank": rank})
        for key, value in row.items():
            if value is not None and merged.get(key) is None:
                merged[key] = value

    def _source(self, source: Source) -> None:
        if source.events is not None and source.events.num_rows:
            self.run.write_events(source.events)
            self.events += source.events.num_rows
        if source.counters is not None and source.counters.num_rows:
            self.run.write_counters(source.counters)
            self.counters += source.counters.num_rows
        for row in source.ranks:
            self._merge_rank(row)
        for key, value in source.job.items():
            if key == "device_kind" and self.job.get(key) == "cpu":
                self.job[key] = value  # a trace without device work says cpu; the process knew its device
            else:
                self.job.setdefault(key, value)
        if source.quarantine is not None:
            self.extra["ingest/quarantine"].append(source.quarantine)
        for name, table in source.extra.items():
            self.extra.setdefault(name, []).append(table)
        self.files.append(
            {"path": str(source.path), "format": source.format, "rank_from": source.rank_from, **source.counts}
        )

    def finish(self, manifest: dict) -> None:
        if self.events == 0 and self.counters == 0:
            reasons = {}
            for f in self.files:
                for reason, n in f.get("quarantine_reasons", {}).items():
                    reasons[reason] = reasons.get(reason, 0) + n
            detail = ", ".join(f"{n} {r}" for r, n in sorted(reasons.items())) or "no events"
            raise TrnprofError(f"nothing to ingest: no usable event or counter in the input(s) ({detail})")
        self.run.write_ranks(pa.Table.from_pylist(sorted(self.ranks.values(), key=lambda r: r["rank"])))
        for name, tables in self.extra.items():
            schema = EXTRA_SCHEMAS.get(name)
            if tables:
                self.run.write_table(name, pa.concat_tables(tables, promote_options="permissive"))
            elif schema is not None:
                self.run.write_table(name, schema.empty_table())
        manifest["world_size"] = len(self.ranks)
        manifest["job"] = self.job
        manifest["ingest"] = {"files": self.files, "totals": self.totals()}
        truncated = sum(f.get("truncated_args", 0) for f in self.files)
        if truncated:  # events kept, their args over limits.MAX_ARGS_BYTES replaced by their size
            manifest["ingest"]["truncated_args"] = truncated

    def totals(self) -> dict:
        totals = {"source_entries": 0, "events": 0, "counters": 0, "flows": 0, "meta": 0, "quarantine": 0}
        for f in self.files:
            totals["source_entries"] += f.get("source_entries", 0)
            for key, n in f.get("to", {}).items():
                totals[key] = totals.get(key, 0) + n
        return totals

    def summary(self, out: Path) -> dict:
        reasons = {}
        for f in self.files:
            for reason, n in f.get("quarantine_reasons", {}).items():
                reasons[reason] = reasons.get(reason, 0) + n
        return {
            "run": str(out),
            "files": len(self.files),
            "events": self.events,
            "counters": self.counters,
            "quarantined": sum(reasons.values()),
            "quarantine_reasons": reasons,
            "ranks": len(self.ranks),
            "truncated_args": sum(f.get("truncated_args", 0) for f in self.files),
            "warnings": [w for f in self.files for w in f.get("warnings", [])],
        }
