"""Any run -> Chrome trace JSON (the Trace Event Format Perfetto UI and chrome://tracing open).

Layout: one process per rank (`pid` = rank, `process_name` "rank N"), one thread per lane
(`thread_name` = the lane), events as complete `X` events, counters as `C` counter tracks
(series `value`; the unit travels as the counter's `cat`, its args as a `trnprof_args` string
beside `args`, since a counter's `args` are its numeric series). Times are µs written as exact
decimals with three digits (ns kept). Each event's `cat` is its kind; `args` holds the other
canonical columns (`step`, `phase`, `bytes`, `flops`, `coll_*`, and the run's own `args` as a
string). `otherData` (written before `traceEvents`) marks the file as a trnprof export and carries
the manifest's job, the world size and the ranks table, so that `trnprof ingest` maps the file
back to the same run: ingest(export(run)) keeps every event and counter.

Rows are encoded column-wise with Arrow (one batch of up to 256k rows at a time per rank), so
memory stays flat whatever the run size.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import atomic
from .._version import __version__
from ..engines import open_run
from ..errors import TrnprofError
from ..schema import SCHEMA_VERSION

PRODUCER = "trnprof"
BATCH_ROWS = 1 << 18
OPTIONAL = (
    ("step", False),
    ("phase", True),
    ("bytes", False),
    ("flops", False),
    ("coll_op", True),
    ("coll_group", True),
    ("coll_seq", False),
    ("coll_ranks", False),
    ("args", True),
)


def _json_strings(values: pa.Array) -> pa.Array:
    """Each string as a JSON string literal (null stays null)."""
    values = values.cast(pa.string())
    risky = pc.match_substring_regex(values, r"[\x00-\x1f\x7f]").fill_null(False)
    escaped = pc.replace_substring(pc.replace_substring(values, "\\", "\\\\"), '"', '\\"')
    quoted = pc.binary_join_element_wise('"', escaped, '"', "")
    if not pc.any(risky).as_py():
        return quoted
    exact = [
        json.dumps(v, ensure_ascii=False) if r else q
        for v, r, q in zip(values.to_pylist(), risky.to_pylist(), quoted.to_pylist())
    ]
    return pa.array(exact, pa.string())


def _per_distinct_json(values) -> pa.Array:
    """JSON string literals of a low-cardinality column, escaped once per distinct value."""
    encoded = pc.dictionary_encode(values.cast(pa.string()))
    texts = pa.array(
        [None if v is None else json.dumps(v, ensure_ascii=False) for v in encoded.dictionary.to_pylist()], pa.string()
    )
    return pc.take(texts, encoded.indices)


def us_texts(ns: np.ndarray) -> pa.Array:
    """int64 ns -> exact µs decimal text ("1234.567")."""
    magnitude = np.abs(ns)
    whole = pa.array(magnitude // 1000).cast(pa.string())
    frac = pc.utf8_lpad(pa.array(magnitude % 1000).cast(pa.string()), 3, "0")
    sign = pa.array(np.where(ns < 0, "-", ""))
    return pc.binary_join_element_wise(sign, whole, ".", frac, "")


def _event_lines(batch: pa.Table, tids: pa.Array) -> pa.Array:
    parts = []
    for column, is_text in OPTIONAL:
        values = batch[column].combine_chunks()
        if values.null_count == len(values):
            continue
        text = (
            (_json_strings(values) if column == "args" else _per_distinct_json(values))
            if is_text
            else values.cast(pa.string())
        )
        parts.append(pc.binary_join_element_wise(f'"{column}":', text, ",", "").fill_null(""))
    lane = _per_distinct_json(batch["lane"].combine_chunks())
    args = pc.binary_join_element_wise("{", *parts, '"lane":', lane, "}", "")
    ts = batch["ts"].to_numpy()
    return pc.binary_join_element_wise(
        '{"ph":"X","cat":',
        _per_distinct_json(batch["kind"].combine_chunks()),
        ',"name":',
        _per_distinct_json(batch["name"].combine_chunks()),
        ',"pid":',
        batch["rank"].combine_chunks().cast(pa.string()),
        ',"tid":',
        tids.cast(pa.string()),
        ',"ts":',
        us_texts(ts),
        ',"dur":',
        us_texts(batch["dur"].to_numpy()),
        ',"args":',
        args,
        "}",
        "",
    )


def _counter_lines(batch: pa.Table) -> tuple[pa.Array, int]:
    values = batch["value"].to_numpy()
    finite = np.isfinite(values)
    batch = batch.filter(pa.array(finite))
    unit = batch["unit"].combine_chunks()
    cat = pc.binary_join_element_wise('"cat":', _per_distinct_json(unit), ",", "").fill_null("")
    numbers = pa.array([repr(float(v)) for v in batch["value"].to_pylist()], pa.string())
    args = batch["args"].combine_chunks()
    own = (
        pc.binary_join_element_wise(',"trnprof_args":', _json_strings(args), "").fill_null("")
        if args.null_count < len(args)
        else ""
    )
    lines = pc.binary_join_element_wise(
        '{"ph":"C",',
        cat,
        '"name":',
        _per_distinct_json(batch["name"].combine_chunks()),
        ',"pid":',
        batch["rank"].combine_chunks().cast(pa.string()),
        ',"tid":0,"ts":',
        us_texts(batch["ts"].to_numpy()),
        ',"args":{"value":',
        numbers,
        "}",
        own,
        "}",
        "",
    )
    return lines, int((~finite).sum())


class _Writer:
    def __init__(self, handle):
        self.handle = handle
        self.first = True

    def lines(self, lines) -> None:
        for line in lines.to_pylist() if isinstance(lines, (pa.Array, pa.ChunkedArray)) else lines:
            self.handle.write(("\n" if self.first else ",\n") + line)
            self.first = False


def _other_data(run) -> dict:
    ranks = run.sql("SELECT * FROM ranks ORDER BY rank").astype(object)
    rows = [
        {
            k: (
                None
                if v is None or (isinstance(v, float) and math.isnan(v))
                else (
                    int(v)
                    if hasattr(v, "is_integer") and not isinstance(v, str) and float(v).is_integer() and k != "host"
                    else v
                )
            )
            for k, v in row.items()
        }
        for row in ranks.to_dict("records")
    ]
    manifest = run.manifest
    return {
        "producer": PRODUCER,
        "trnprof_version": __version__,
        "schema_version": SCHEMA_VERSION,
        "run": Path(run.path).name,
        "world_size": manifest.get("world_size"),
        "job": manifest.get("job", {}),
        "source": manifest.get("source", {}),
        "ranks": rows,
    }


def export_chrome(run_path, out: str | Path, *, force: bool = False, threads: int | None = None) -> dict:
    """Write RUN as Chrome trace JSON (`.json` or `.json.gz`); returns counts."""
    out = Path(out)
    atomic.check_replaceable(out, force)
    if out.suffix not in (".json", ".gz"):
        raise TrnprofError(f"output {out}: name it .json or .json.gz")
    counts = {"events": 0, "counters": 0, "skipped_counters": 0, "ranks": 0}
    with open_run(run_path, threads=threads) as run, atomic.replacing(out, overwrite=force) as tmp:
        opener = (
            gzip.open(tmp, "wt", encoding="utf-8", compresslevel=6)
            if out.suffix == ".gz"
            else tmp.open("w", encoding="utf-8")
        )
        with opener as handle:
            handle.write(
                '{"otherData":' + json.dumps(_other_data(run), default=str) + ',"displayTimeUnit":"ns","traceEvents":['
            )
            writer = _Writer(handle)
            _write_body(run, writer, counts)
            handle.write("\n]}\n")
    return counts


def _write_body(run, writer: _Writer, counts: dict) -> None:
    ranks = [
        int(r)
        for r in run.sql(
            "SELECT rank FROM ranks UNION SELECT DISTINCT rank FROM events "
            "UNION SELECT DISTINCT rank FROM counters ORDER BY rank"
        )["rank"]
    ]
    counts["ranks"] = len(ranks)
    for rank in ranks:
        lanes = [
            lane for lane in run.sql("SELECT DISTINCT lane FROM events WHERE rank = ? ORDER BY lane", [rank])["lane"]
        ]
        tid_of = {lane: i + 1 for i, lane in enumerate(lanes)}
        meta = [
            json.dumps({"ph": "M", "name": "process_name", "pid": rank, "tid": 0, "args": {"name": f"rank {rank}"}}),
            json.dumps({"ph": "M", "name": "process_sort_index", "pid": rank, "tid": 0, "args": {"sort_index": rank}}),
        ]
        for lane, tid in tid_of.items():
            meta.append(
                json.dumps(
                    {"ph": "M", "name": "thread_name", "pid": rank, "tid": tid, "args": {"name": lane}},
                    ensure_ascii=False,
                )
            )
            meta.append(
                json.dumps(
                    {"ph": "M", "name": "thread_sort_index", "pid": rank, "tid": tid, "args": {"sort_index": tid}}
                )
            )
        writer.lines(meta)
        lane_ids = pa.array(list(tid_of.values()), pa.int64())
        lane_names = pa.array(list(tid_of.keys()), pa.string())
        reader = run.con.sql(f"SELECT * FROM events WHERE rank = {rank} ORDER BY ts").to_arrow_reader(BATCH_ROWS)
        for batch in reader:
            table = pa.Table.from_batches([batch])
            tids = pc.take(lane_ids, pc.index_in(table["lane"], lane_names))
            writer.lines(_event_lines(table, tids))
            counts["events"] += table.num_rows
        reader = run.con.sql(f"SELECT * FROM counters WHERE rank = {rank} ORDER BY ts, name").to_arrow_reader(
            BATCH_ROWS
        )
        for batch in reader:
            lines, skipped = _counter_lines(pa.Table.from_batches([batch]))
            writer.lines(lines)
            counts["counters"] += len(lines)
            counts["skipped_counters"] += skipped
