"""Which reader an input needs, from its content (not its name), and the inputs a folder holds.

- `kineto`: Chrome trace JSON (`traceEvents`, or the bare array form), plain or gzip — PyTorch
  profiler traces, torch-neuronx / XLA traces, and traces written by `trnprof export`;
- `neuron-monitor`: neuron-monitor's JSON reports (`neuron_runtime_data`), one per line;
- `neuron-system-profile`: `system_profile.json` of `neuron-profile view --output-format json`
  (`trace_events`, `mem_usage`, `cpu_util`);
- `neuron-explorer`: a folder of Neuron Explorer Parquet tables (`CcOp.parquet`, ...);
- `neuron-explorer-json`: Explorer's deprecated JSON output (`"summary"` and `"instruction"`);
- `trnprof-host-metrics`: the host metrics `trnprof record` samples (`host_metrics.jsonl`).
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

from trnprof.collectors.host.format import FORMAT as HOST_FORMAT, HEADER_KEY as HOST_HEADER
from trnprof.errors import TrnprofError

FORMATS = ("kineto", "neuron-monitor", "neuron-system-profile", "neuron-explorer", "neuron-explorer-json",
           HOST_FORMAT)
TRACE_SUFFIXES = (".json", ".json.gz", ".jsonl", ".jsonl.gz", ".gz")
_SNIFF = 1 << 16


def _head(path: Path) -> bytes:
    try:
        with path.open("rb") as handle:
            head = handle.read(_SNIFF)
    except OSError as exc:
        raise TrnprofError(f"{path}: cannot read it ({exc})") from None
    if head[:2] == b"\x1f\x8b":
        try:
            with gzip.open(path, "rb") as handle:
                head = handle.read(_SNIFF)
        except (OSError, EOFError, zlib.error) as exc:
            raise TrnprofError(f"{path}: truncated or corrupt gzip data ({exc})") from None
    return head


def is_explorer_folder(path: Path) -> bool:
    if not path.is_dir():
        return False
    from trnprof.collectors.neuron.explorer import table_files  # loads duckdb: only for a folder
    return bool(table_files(path))


def detect(path: Path) -> str:
    """The format of one input file or Neuron Explorer folder."""
    if path.is_dir():
        if is_explorer_folder(path):
            return "neuron-explorer"
        raise TrnprofError(f"{path}: a folder without traces")
    head = _head(path)
    if head[:4] == b"PAR1":
        return "neuron-explorer"
    text = head.lstrip()
    if not text:
        raise TrnprofError(f"{path}: empty file")
    if text.startswith(b'{"' + HOST_HEADER.encode()):
        return HOST_FORMAT
    if b'"neuron_runtime_data"' in head:
        return "neuron-monitor"
    if b'"traceEvents"' in head or text[:1] == b"[":
        return "kineto"
    if b'"instruction"' in head and b'"summary"' in head and b'"traceEvents"' not in head:
        return "neuron-explorer-json"
    if b'"trace_events"' in head or b'"mem_usage"' in head or b'"cpu_util"' in head:
        return "neuron-system-profile"
    if text[:1] == b"{":
        return "kineto"  # its reader says precisely what is missing
    raise TrnprofError(f"{path}: not a trace trnprof knows (starts with {text[:16]!r}); "
                       f"formats: {', '.join(FORMATS)}")


def expand(paths: list[str | Path], fmt: str = "auto") -> list[tuple[Path, str]]:
    """(input, format) pairs: files as given, folders expanded to the traces they hold."""
    inputs = []
    for given in paths:
        path = Path(given)
        if not path.exists():
            raise TrnprofError(f"input not found: {path}")
        if path.is_dir() and not (fmt in ("auto", "neuron-explorer") and is_explorer_folder(path)):
            found = sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(TRACE_SUFFIXES))
            if not found:
                raise TrnprofError(f"{path}: no trace files in this folder (looked for {', '.join(TRACE_SUFFIXES)})")
            inputs += [(p, fmt if fmt != "auto" else detect(p)) for p in found]
        else:
            inputs.append((path, fmt if fmt != "auto" else detect(path)))
    seen = set()
    for path, _ in inputs:
        key = path.resolve()
        if key in seen:
            raise TrnprofError(f"input given twice: {path}")
        seen.add(key)
    return inputs
