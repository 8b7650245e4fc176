"""The tables of the Neuron Explorer profile schema v7.4.0 and how their Parquet files are named:
read by the format sniff (a folder is a profile when it holds one of them) without loading the
reader's duckdb and pyarrow."""

from __future__ import annotations

import re
from pathlib import Path

TABLES = (
    "ActiveTime AssemblyInstruction BirInstruction CcInstruction CcOp CcStream CoreBarriers CpuUsage "
    "DeviceProfileList DmaPacket DmaPacketAggregated DmaQueuesInfo DmaUsage DmaUsageSummary Error "
    "ExecutionInfo Flow FrameworkInstruction FrameworkNode HbmUsage HbmUsageSummaryByType HloInstruction "
    "HostMemUsage Instruction KernelInstructions KernelIterationVariables KernelStackFrames "
    "MemoryBandwidthPoint MemoryBandwidthResponse MemoryBandwidthSeries Metadata NeffHeader OpcodeSummary "
    "PendingDma PenguinInstruction PsumUsage SbufAllocation SbufUsage SchemaFields SemaphoreUpdate StackFrame "
    "StackFrameFileLocation StackFrameFileName StackFrameFunctionName Summary SystemProfileEvents "
    "SystemProfileHbmUsage SystemProfileMetadata TensorInfo Throttle ThrottleSummary Warning"
).split()
TABLE_KEYS = {re.sub(r"[^a-z]", "", t.lower()): t for t in TABLES}  # file stem, letters only -> table


def table_files(folder: Path) -> dict[str, Path]:
    """Schema table name -> its Parquet file in `folder`."""
    found = {}
    if not folder.is_dir():
        return found
    for path in folder.glob("*.parquet"):
        table = TABLE_KEYS.get(re.sub(r"[^a-z]", "", path.stem.lower()))
        if table:
            found[table] = path
    return found
