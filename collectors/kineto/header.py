"""The trace's top-level keys: rank and world size (`distributedInfo`), the time base
(`baseTimeNanoseconds`), devices (`deviceProperties`), host name, and the marker of a trace
written by `trnprof export`. Rank: `distributedInfo.rank`, else the file name (`rank-3`,
`rank3`, `rank_3`), else the `--rank` option."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from trnprof.collectors.common.limits import MAX_RANK, MAX_TIME_NS, check_rank
from trnprof.errors import TrnprofError

FILE_RANK = re.compile(r"(?i)(?:^|[^a-z])rank[-_]?(\d+)")
EXPORT_PRODUCER = "trnprof"


@dataclass
class TraceInfo:
    rank: int | None = None
    world_size: int | None = None
    backend: str | None = None
    base_ns: int = 0
    devices: list = field(default_factory=list)
    host: str | None = None
    export: dict | None = None
    process_group: tuple[str, int] | None = None  # (name, size) when distributedInfo lists exactly one


def _int(value, what: str, path: Path) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TrnprofError(f"{path}: {what} must be an integer, got {value!r}")
    return value


def _only_group(config) -> tuple[str, int] | None:
    """The job's one process group from `distributedInfo.pg_config` (`pg_name`, `pg_size`); None
    when there are several (which one a collective used is then unknown) or the entry is malformed."""
    if not isinstance(config, list) or len(config) != 1 or not isinstance(config[0], dict):
        return None
    name, size = config[0].get("pg_name"), config[0].get("pg_size")
    if not isinstance(name, (str, int)) or isinstance(name, bool) or not 0 < len(str(name)) <= 64:
        return None
    if not isinstance(size, int) or isinstance(size, bool) or not 0 < size <= MAX_RANK + 1:
        return None
    return str(name), size


def parse_header(header: dict[str, bytes], path: Path) -> TraceInfo:
    def value(key):
        raw = header.get(key)
        return msgspec.json.decode(raw) if raw is not None else None

    info = TraceInfo()
    dist = value("distributedInfo")
    if isinstance(dist, dict):
        info.rank = _int(dist.get("rank"), "distributedInfo.rank", path)
        info.world_size = _int(dist.get("world_size"), "distributedInfo.world_size", path)
        info.backend = dist.get("backend") if isinstance(dist.get("backend"), str) else None
        info.process_group = _only_group(dist.get("pg_config"))
        if info.rank is not None:
            check_rank(info.rank, f"{path}: distributedInfo.rank")
        if info.world_size is not None and not 0 < info.world_size <= MAX_RANK + 1:
            raise TrnprofError(
                f"{path}: distributedInfo.world_size {info.world_size} is out of range (1 .. {MAX_RANK + 1})"
            )
    base = value("baseTimeNanoseconds")
    if base is not None:
        if isinstance(base, float) and base.is_integer():
            base = int(base)
        info.base_ns = _int(base, "baseTimeNanoseconds", path)
        if abs(info.base_ns) > MAX_TIME_NS:
            raise TrnprofError(f"{path}: baseTimeNanoseconds {info.base_ns} is beyond +-{MAX_TIME_NS} ns")
    devices = value("deviceProperties")
    info.devices = devices if isinstance(devices, list) else []
    host = value("host_name")
    info.host = host if isinstance(host, str) else None
    other = value("otherData")
    if isinstance(other, dict) and other.get("producer") == EXPORT_PRODUCER:
        info.export = other
    return info


def export_marker(early: dict[str, bytes]) -> dict | None:
    """The otherData of a trace written by `trnprof export`, from the keys before traceEvents;
    None for any other trace."""
    raw = early.get("otherData")
    if raw is None:
        return None
    try:
        other = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return None
    return other if isinstance(other, dict) and other.get("producer") == EXPORT_PRODUCER else None


def detect_rank(info: TraceInfo, path: Path, option: int | None) -> tuple[int, str]:
    """The file's rank and where it came from."""
    if info.rank is not None:
        return info.rank, "distributedInfo"
    match = FILE_RANK.search(path.name)
    if match:
        return check_rank(int(match.group(1)), f"{path}: file name"), "file name"
    if option is not None:
        return check_rank(option, "--rank"), "--rank"
    raise TrnprofError(
        f"{path}: cannot tell its rank (no distributedInfo.rank, no rank-N in the file name); pass --rank N"
    )


def device_memory(info: TraceInfo, device: int | None) -> int | None:
    """totalGlobalMem of the rank's GPU, when the trace lists it."""
    for props in info.devices:
        if isinstance(props, dict) and props.get("id") == device and isinstance(props.get("totalGlobalMem"), int):
            return props["totalGlobalMem"]
    return None
