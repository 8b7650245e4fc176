"""The ingest format registry (collectors/ingest/formats.py): the built-in formats' sniffs in
their order, a third-party format added with register() or an entry point sniffed and read, and
one error line for whatever a third-party format gets wrong."""

import gzip
import re
from importlib.metadata import EntryPoint
from pathlib import Path

import pyarrow as pa
import pytest

from tests.conftest import REPO
from trnprof import open_run
from trnprof.collectors.common.source import Source
from trnprof.collectors.ingest import detect as detection
from trnprof.collectors.ingest import formats, ingest
from trnprof.collectors.ingest.formats import ENTRY_POINT_GROUP, Format, Probe
from trnprof.collectors.neuron.util import open_text
from trnprof.errors import TrnprofError
from trnprof.runstore import conform

MAGIC = b"#steps-csv"


def _sniff(probe: Probe) -> bool:
    return probe.head.startswith(MAGIC)


def read_steps_csv(path: Path, rank: int | None = None) -> Source:
    """A format of the tests: `#steps-csv` then `rank,step,ts,dur` lines, one step event each."""
    rows = [line.split(",") for line in open_text(path).splitlines()[1:] if line]
    columns = {
        "rank": [int(r[0]) for r in rows],
        "step": [int(r[1]) for r in rows],
        "ts": [int(r[2]) for r in rows],
        "dur": [int(r[3]) for r in rows],
        "kind": ["step"] * len(rows),
        "name": ["step"] * len(rows),
        "lane": ["host/main"] * len(rows),
    }
    events = conform(pa.table(columns), "events")
    ranks = [{"rank": r} for r in sorted(set(columns["rank"]))]
    return Source(
        path=path,
        format="steps-csv",
        events=events,
        ranks=ranks,
        counts={"source_entries": len(rows), "to": {"events": len(rows)}},
        rank_from="each row",
    )


STEPS_CSV = Format("steps-csv", _sniff, read_steps_csv, doc="steps as CSV (tests)")
NOT_A_FORMAT = object()


@pytest.fixture
def clean_registry(monkeypatch):
    """No registered or installed third-party format but those a test adds."""
    monkeypatch.setattr(formats, "_REGISTERED", {})
    monkeypatch.setattr(formats, "_entry_points", lambda: {})
    formats._load_installed.cache_clear()
    yield monkeypatch
    formats._load_installed.cache_clear()


def _install(monkeypatch, **values):
    points = {name: EntryPoint(name=name, value=value, group=ENTRY_POINT_GROUP) for name, value in values.items()}
    monkeypatch.setattr(formats, "_entry_points", lambda: points)


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    "data, expected",
    [
        (b"PAR1" + b'{"traceEvents": [], "neuron_runtime_data": 1}', "neuron-explorer"),  # Parquet magic first
        (b'{"trnprof_host_metrics": 1, "neuron_runtime_data": 1}\n', "trnprof-host-metrics"),
        (b'{"neuron_runtime_data": [], "traceEvents": []}', "neuron-monitor"),
        (b'[{"instruction": 1, "summary": 2}]', "kineto"),  # the bare array: before Explorer JSON
        (b'{"summary": [], "instruction": [], "trace_events": []}', "neuron-explorer-json"),
        (b'{"summary": [], "instruction": [], "traceEvents": []}', "kineto"),
        (b'  {"cpu_util": []}', "neuron-system-profile"),
        (b'{"something": "else"}', "kineto"),  # a JSON object none claims: Kineto's reader says what lacks
    ],
)
def test_the_built_in_sniffs_keep_their_order(tmp_path, clean_registry, data, expected):
    assert detection.detect(_write(tmp_path / "input.json", data)) == expected
    assert detection.detect(_write(tmp_path / "input.json.gz", gzip.compress(data))) == expected


def test_an_unknown_file_names_every_format_in_one_line(tmp_path, clean_registry):
    formats.register(STEPS_CSV)
    names = ", ".join([*(fmt.name for fmt in formats.builtin()), "steps-csv"])  # built-ins first, in order
    with pytest.raises(
        TrnprofError, match=re.escape(f"not a trace trnprof knows (starts with b'hello'); formats: {names}") + "$"
    ):
        detection.detect(_write(tmp_path / "x.txt", b"hello"))


def test_a_registered_format_is_sniffed_and_read(tmp_path, clean_registry):
    formats.register(STEPS_CSV)
    path = _write(tmp_path / "steps.json", MAGIC + b"\n0,0,100,50\n0,1,200,50\n1,0,100,60\n")
    assert detection.detect(path) == "steps-csv"
    summary = ingest([path], tmp_path / "run")
    assert (summary["events"], summary["ranks"]) == (3, 2)
    with open_run(tmp_path / "run") as run:
        assert run.sql("SELECT COUNT(*) AS n FROM steps")["n"][0] == 3
        assert run.manifest["ingest"]["files"][0]["format"] == "steps-csv"


def test_an_installed_format_is_loaded_from_its_entry_point(tmp_path, clean_registry):
    _install(clean_registry, **{"steps-csv": f"{__name__}:STEPS_CSV"})
    assert formats.names()[-1] == "steps-csv"
    path = _write(tmp_path / "steps.json.gz", gzip.compress(MAGIC + b"\n2,0,10,5\n"))
    assert detection.expand([tmp_path]) == [(path, "steps-csv")]
    assert ingest([path], tmp_path / "run", fmt="steps-csv")["events"] == 1


def test_installed_formats_are_not_loaded_while_a_built_in_claims_the_input(tmp_path, clean_registry):
    def refuse():
        raise AssertionError("entry points scanned")

    clean_registry.setattr(formats, "_entry_points", refuse)
    trace = REPO / "tests" / "data" / "kineto"
    first = sorted(trace.rglob("*.json*"))[0]
    assert detection.detect(first) == "kineto"
    assert detection.detect(_write(tmp_path / "m.json", b'{"neuron_runtime_data": []}')) == "neuron-monitor"


def test_a_built_in_name_is_never_taken(clean_registry):
    with pytest.raises(TrnprofError, match="ingest format kineto is built in"):
        formats.register(Format("kineto", _sniff, read_steps_csv))
    _install(clean_registry, kineto=f"{__name__}:STEPS_CSV")
    assert formats.lookup("kineto") is formats.builtin()[3]
    assert formats.names().count("kineto") == 1


@pytest.mark.parametrize(
    "value, message",
    [
        (
            "no_such_package.module:FORMAT",
            r"installed ingest format steps-csv \(no_such_package.module:FORMAT\) "
            r"cannot be loaded \(ModuleNotFoundError: .*\)$",
        ),
        (f"{__name__}:NOT_A_FORMAT", r"is not a trnprof ingest Format called steps-csv$"),
        (f"{__name__}:STEPS_CSV", None),
    ],
)
def test_a_broken_installed_format_is_one_line(clean_registry, value, message):
    _install(clean_registry, **{"steps-csv": value})
    if message is None:
        assert formats.lookup("steps-csv") is STEPS_CSV
        return
    with pytest.raises(TrnprofError, match=message):
        formats.lookup("steps-csv")


def _failing_sniff(probe: Probe) -> bool:
    return probe.head.decode("ascii") == ""  # UnicodeDecodeError on a binary file


def _failing_reader(path, rank=None):
    raise KeyError("rows")


@pytest.mark.parametrize(
    "fmt, message",
    [
        (Format("odd", _failing_sniff, read_steps_csv), r": the odd format's sniff failed \(UnicodeDecodeError: "),
        (Format("odd", _sniff, _failing_reader), r": the odd reader failed \(KeyError: 'rows'\)$"),
        (Format("odd", _sniff, lambda path, rank=None: [1, 2]), r": the odd reader returned list, not a Source$"),
        (Format("odd", _sniff, "no_such_package.module:read"), r"ingest format odd: cannot load its reader "),
    ],
)
def test_a_third_party_format_that_fails_is_one_line(tmp_path, clean_registry, fmt, message):
    formats.register(fmt)
    path = _write(tmp_path / "x.json", MAGIC + b"\xff\n0,0,1,1\n")
    with pytest.raises(TrnprofError, match=message):
        ingest([path], tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_an_unknown_format_name_is_one_line(tmp_path, clean_registry):
    with pytest.raises(TrnprofError, match=r"^unknown format 'csv'; choose auto or one of neuron-explorer, "):
        ingest([_write(tmp_path / "x.json", b"{}")], tmp_path / "run", fmt="csv")


def test_the_docs_list_every_built_in_format():
    text = (REPO / "docs" / "ingest.md").read_text(encoding="utf-8")
    synopsis = re.search(r"--input-format ([a-z|-]+)\]", text).group(1)
    assert synopsis.split("|") == ["auto", *[fmt.name for fmt in formats.builtin()]]
    section = text[text.index("\n## Formats\n") : text.index("\n### Adding a format\n")]
    listed = re.findall(r"^\| `([a-z-]+)` \| (.*) \|$", section, re.MULTILINE)
    assert listed == [(fmt.name, fmt.doc) for fmt in formats.builtin()]


def test_a_folder_format_takes_the_whole_folder(tmp_path, clean_registry):
    from trnprof.collectors.ingest.traces import is_trace_input

    folder = tmp_path / "capture"
    folder.mkdir()
    (folder / "steps.csv").write_bytes(MAGIC + b"\n0,0,1,1\n")
    assert not is_trace_input(folder)
    formats.register(
        Format(
            "steps-folder",
            lambda probe: (probe.path / "steps.csv").is_file(),
            lambda path, rank=None: read_steps_csv(path / "steps.csv"),
            folder=True,
        )
    )
    assert is_trace_input(folder)
    assert detection.expand([folder]) == [(folder, "steps-folder")]
    assert detection.detect(folder) == "steps-folder"
    assert detection.folder_format(folder, "kineto") is None  # a file format never takes a folder
