"""The `mem_usage` and `cpu_util` samples of a Profiler 2.0 system profile -> counters, typed
with msgspec: the mapped fields must have their documented types, every other field of a
sample (`duration`, `instance_id`, ...) is kept in the counter's `args`."""

from __future__ import annotations

import json
import math
from typing import Annotated, Optional, Union

import msgspec

from trnprof.collectors.common.limits import MAX_TIME_NS

Time = Annotated[int, msgspec.Meta(ge=-MAX_TIME_NS, le=MAX_TIME_NS)]


class MemSample(msgspec.Struct):
    timestamp: Time
    usage: Optional[float] = None
    percent_usage: Optional[float] = None


class CpuSample(msgspec.Struct):
    timestamp: Time
    util: float
    cpu_id: Union[int, str, None] = None


SERIES = {
    "mem_usage": (
        MemSample,
        (("usage", "host.memory.used", "bytes"), ("percent_usage", "host.memory.used_percent", "percent")),
    ),
    "cpu_util": (CpuSample, (("util", None, "percent"),)),
}


def _problem(exc: msgspec.ValidationError, section: str, index: int) -> str:
    text = str(exc)
    message, _, where = text.partition(" - at `$")
    return f"{section}[{index}]{where.rstrip('`')}: {message}" if where else f"{section}[{index}]: {text}"


def samples(document: dict, rank: int) -> tuple[list[dict], int, list[tuple]]:
    """(counter rows, samples used, quarantine rows)."""
    rows, used, problems = [], 0, []
    for section, (kind, series) in SERIES.items():
        for index, raw in enumerate(document.get(section) or []):
            try:
                sample = msgspec.convert(raw, kind, strict=False) if isinstance(raw, dict) else None
            except msgspec.ValidationError as exc:
                problems.append(
                    (index, "bad_counter_value", _problem(exc, section, index), json.dumps(raw, ensure_ascii=False))
                )
                continue
            bad = (
                "not an object"
                if sample is None
                else next(
                    (
                        f"{field}: not a finite number"
                        for field, _, _ in series
                        if getattr(sample, field) is not None and not math.isfinite(getattr(sample, field))
                    ),
                    None,
                )
            )
            if bad:
                problems.append(
                    (index, "bad_counter_value", f"{section}[{index}]: {bad}", json.dumps(raw, ensure_ascii=False))
                )
                continue
            mapped = (
                {"timestamp"} | {field for field, _, _ in series} | ({"cpu_id"} if section == "cpu_util" else set())
            )
            args = json.dumps({k: v for k, v in raw.items() if k not in mapped}, ensure_ascii=False)
            used += 1
            for field, name, unit in series:
                value = getattr(sample, field)
                if value is not None:
                    rows.append(
                        {
                            "rank": rank,
                            "ts": sample.timestamp,
                            "unit": unit,
                            "value": float(value),
                            "name": name or f"host.cpu.{sample.cpu_id}.util",
                            "args": args,
                        }
                    )
    return rows, used, problems
