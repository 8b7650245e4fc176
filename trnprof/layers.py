"""trnprof's layers, lowest first: the one house plan, as data. `tests/core/test_layers.py` checks
every import of the source against it, and the layer sections of docs/architecture.md are
generated from it (`trnprof.docgen_layers`, `python scripts/gen_docs.py`).

A module belongs to the layer of the longest entry naming it (the module itself, or a package
holding it); a package's `__init__` that no entry names belongs with the entries under it. A
module imports modules of its own layer and of the layers below, never above.
"""

from __future__ import annotations

from typing import NamedTuple


class Layer(NamedTuple):
    name: str
    role: str  # what the layer does, in one line
    parts: tuple[tuple[str, str], ...]  # (module or package, what it holds; "" when its name says)


class Reach(NamedTuple):
    """`source` never imports `target`, directly or through other modules (both in the order:
    the layers alone would allow it)."""

    source: str
    target: str
    why: str


class LazyImport(NamedTuple):
    """An import inside a function: `importer` imports `imported` (a trnprof module, or a
    third-party one as the code names it) only when that function runs."""

    importer: str
    imported: str
    why: str


LAYERS = (
    Layer(
        "foundation",
        "facts and helpers every layer shares; pure, they import nothing above",
        (
            ("trnprof._version", ""),
            ("trnprof.errors", ""),
            ("trnprof.units", ""),
            ("trnprof.textfmt", "text formats"),
            ("trnprof.hardware", "Trainium's facts"),
            ("trnprof.breakdown", "the step's categories"),
            ("trnprof.runfiles", "the names that make a folder a run"),
            ("trnprof.schema", "run tables"),
            ("trnprof.exitcodes", ""),
            ("trnprof.jsonplain", ""),
            ("trnprof.yamlio", "the one YAML reader"),
            ("trnprof.readfile", "the one read of a user's file"),
            ("trnprof.validation", "the range of every number a user gives"),
            ("trnprof.atomic", "the one atomic write, with the user's umask"),
            ("trnprof.progress", "whether bars are drawn"),
            ("trnprof.cachedir", "the user's cache folder: compiled rule packs, runs of traces, the report's bundle"),
            ("trnprof.processes", "whether a PID runs, and since when"),
            ("trnprof.robuststats", "the noise of a sample of step times"),
            ("trnprof.heap", "free C heap pages back to the system between a command's phases"),
            ("trnprof.layers", "this map"),
        ),
    ),
    Layer("model", "the Trn1 execution model, pure: job, physics, plan, prediction", (("trnprof.model", ""),)),
    Layer(
        "storage",
        "the run on disk: written whole, checked, cached",
        (
            ("trnprof.manifest", ""),
            ("trnprof.tracecache", "where a trace's run is kept, found by its inputs' content"),
            ("trnprof.runstore", "write a run"),
            ("trnprof.integrity", ""),
            ("trnprof.derived", "caches"),
            ("trnprof.tableread", ""),
        ),
    ),
    Layer(
        "collectors",
        "everything that makes runs: traces ingested, the simulator, synthetic jobs",
        (
            ("trnprof.collectors.common", "limits, sources, ingest tables"),
            ("trnprof.collectors.kineto", ""),
            ("trnprof.collectors.neuron", ""),
            ("trnprof.collectors.host", "host metrics"),
            ("trnprof.collectors.ingest", ""),
            ("trnprof.collectors.trn1", "the simulator collector"),
            ("trnprof.collectors.synthetic", ""),
            ("trnprof.collectors.registry", ""),
            ("trnprof.record", "capture a live job under the profiler, ingest it; `trnprof.api.record` analyzes it"),
        ),
    ),
    Layer(
        "query",
        "open a run and ask it questions in SQL, with the tables computed on demand",
        (
            ("trnprof.run", "Run, RunSet"),
            ("trnprof.engines", "choose the engine, open_run"),
            ("trnprof.session", ""),
            ("trnprof.batches", ""),
            ("trnprof.parts", "large cross-rank views in parts by collective sequence number"),
            ("trnprof.session_tables", ""),
            ("trnprof.device_tables", ""),
            ("trnprof.stdlib", "SQL views"),
            ("trnprof.stdlibdeps", "the tables each view reads, parsed once per installation"),
            ("trnprof.sqlparse", "SQL read as text, on one locked parse-only connection a process"),
            ("trnprof.info", ""),
            ("trnprof.spark", "the Spark engine"),
            ("trnprof.critical_path", "dependency graph, critical path tables, replay"),
        ),
    ),
    Layer(
        "analysis",
        "turn a run into answers: findings, predictions, prices, comparisons",
        (
            ("trnprof.rules_engine", "rules, sandbox, findings documents"),
            ("trnprof.whatif", "fit, predict, price fixes by model or replay"),
            ("trnprof.diff", "two runs compared"),
            ("trnprof.export", "Chrome trace"),
            ("trnprof.rules", "the built-in packs"),
        ),
    ),
    Layer("report", "draws views and documents (findings, diff) into the HTML page", (("trnprof.report", ""),)),
    Layer("api", "composes the layers below; every command is one call here", (("trnprof.api", ""),)),
    Layer(
        "interface",
        "what a user runs: the commands and the generated docs",
        (
            ("trnprof.cli", "the commands"),
            ("trnprof.__main__", ""),
            ("trnprof.docgen", ""),
            ("trnprof.docgen_hardware", ""),
            ("trnprof.docgen_layers", ""),
        ),
    ),
)

FORBIDDEN = (
    Reach(
        "trnprof.rules_engine",
        "trnprof.whatif",
        "`trnprof.api.analyze` runs the rules, then prices each finding's fix with `whatif.projections`",
    ),
    Reach("trnprof.rules_engine", "trnprof.collectors.trn1", "the rules read runs; they never simulate one"),
    Reach("trnprof.report", "trnprof.collectors.trn1", "the report draws what it is handed"),
    Reach("trnprof.report", "trnprof.whatif", "prices come in the findings document"),
    Reach(
        "trnprof.report",
        "trnprof.rules_engine.engine",
        "`trnprof.api.report` gets the findings and hands the documents to `report.build.build_report`",
    ),
    Reach("trnprof.report", "trnprof.diff.document", "the comparison comes as a document, made by `trnprof.api`"),
    Reach("trnprof.collectors.neuron", "trnprof.session", "a collector writes runs; it does not open them"),
    Reach("trnprof.diff", "trnprof.whatif", "a comparison measures; statistics both need are in the foundation"),
)

# What a command (`trnprof.cli`) may import besides the foundation, the `trnprof.api` package (the
# names it exports, not its modules) and its own modules: the documents' types and renderers.
# Computations (collectors, the model, storage, sessions, rules, what-if, diff, export, the
# critical path, the report's page, record) are reached only through the API.
CLI_RENDERS = (
    ("trnprof.rules_engine.document", "the findings document and its JSON"),
    ("trnprof.rules_engine.spec", "the severities a finding has (--fail-on)"),
    ("trnprof.rules_engine.render", "findings as text and Markdown"),
    ("trnprof.rules_engine.sarif", "findings as SARIF"),
    ("trnprof.diff.render", "the diff document as text and Markdown"),
    ("trnprof.whatif.render", "the what-if document as text"),
)

# Packages whose functions import what they use by design: a command loads only what it runs.
LAZY_PACKAGES = (
    (
        "trnprof.api",
        "its functions import the layers they compose, and its re-exported names load on first use, "
        "so `trnprof analyze` loads no ingest, simulator, diff or report code",
    ),
    (
        "trnprof.cli",
        "each command loads its code when it runs, so `--help` loads neither duckdb, pandas nor "
        "pyarrow (tests/core/test_cli_startup.py)",
    ),
)

SPARK = "the Spark extra (optional): loaded only for a Spark engine"
AFTER_THE_JOB = (
    "`trnprof record` and `profile()` run beside or inside the user's training job: the ingest "
    "(pyarrow, pandas) loads only once the job is done"
)

# Every other function-level import, exactly (the layer test fails on one not listed here).
LAZY_IMPORTS = (
    LazyImport("trnprof.engines", "trnprof.spark.run", SPARK),
    LazyImport(
        "trnprof.engines",
        "trnprof.run",
        "`--engine` is read before the run's libraries load: `analyze TRACE` starts its ingest first",
    ),
    LazyImport("trnprof.rules_engine.engine", "trnprof.rules_engine.spark_sandbox", SPARK),
    LazyImport("trnprof.spark.connect", "pyspark", SPARK),
    LazyImport("trnprof.spark.connect", "pyspark.sql", SPARK),
    LazyImport("trnprof.spark.connect", "pyspark.logger", SPARK),
    LazyImport("trnprof.spark.run", "pyspark.sql", SPARK),
    LazyImport("trnprof.diff.stats", "scipy.special", "scipy loads only when two runs' means are tested"),
    LazyImport("trnprof.collectors.trn1.calibration", "scipy.optimize", "scipy loads only for a calibration fit"),
    LazyImport("trnprof.processes", "psutil", "loads only when a folder's owner is recorded or judged"),
    LazyImport(
        "trnprof.session",
        "trnprof.critical_path.tables",
        "the critical path tables load only for a query that names them",
    ),
    LazyImport(
        "trnprof.critical_path.tables",
        "trnprof.critical_path.compute",
        "the graph and replay code loads only when the tables are computed",
    ),
    LazyImport(
        "trnprof.rules_engine.sandbox",
        "trnprof.session",
        "only `trnprof query` opens a DuckDB session here; rule checks and the Spark sandbox need none",
    ),
    LazyImport(
        "trnprof.whatif.projections",
        "trnprof.whatif.document",
        "the model, its fit and measures load only for a job to model",
    ),
    LazyImport("trnprof.whatif.projections", "trnprof.model.hardware", "the model loads only for a job to model"),
    LazyImport("trnprof.whatif.projections", "trnprof.model.config", "the model loads only for a job to model"),
    LazyImport(
        "trnprof.collectors.ingest.builtin",
        "trnprof.collectors.neuron.explorer_tables",
        "the folder sniff names Explorer's tables only for a folder",
    ),
    LazyImport(
        "trnprof.collectors.ingest.formats",
        "trnprof.collectors.common.source",
        "a third-party reader's result is checked only when one runs: built-in reads load no more",
    ),
    LazyImport(
        "trnprof.collectors.registry",
        "trnprof.collectors.trn1",
        "the registry names the collectors without importing any",
    ),
    LazyImport(
        "trnprof.collectors.registry",
        "trnprof.collectors.ingest",
        "the registry names the collectors without importing any",
    ),
    LazyImport("trnprof.collectors.registry", "pyarrow", "only a rule test's inline Explorer tables need it"),
    LazyImport("trnprof.collectors.registry", "pyarrow.parquet", "only a rule test's inline Explorer tables need it"),
    LazyImport("trnprof.docgen", "trnprof.cli", "the CLI reference is read from the commands, loaded only for it"),
    LazyImport(
        "trnprof.record.api",
        "trnprof.record.runtime",
        "under `trnprof record` the launcher's runtime is used, not a second copy",
    ),
    LazyImport(
        "trnprof.record.api",
        "trnprof.record.recorder",
        "`profile()` runs inside the user's training process: the recorder loads only when it writes a run",
    ),
    LazyImport("trnprof.record.api", "trnprof.collectors.ingest", AFTER_THE_JOB),
    LazyImport("trnprof.record.recorder", "trnprof.collectors.ingest", AFTER_THE_JOB),
    LazyImport("trnprof.record.recorder", "trnprof.collectors.ingest.detect", AFTER_THE_JOB),
    LazyImport("trnprof.record.neuron", "trnprof.collectors.ingest.detect", AFTER_THE_JOB),
    LazyImport("trnprof.record.runtime", "torch", "the user's framework, imported inside their process"),
    LazyImport("trnprof.record.runtime", "torch.profiler", "the user's framework, imported inside their process"),
    LazyImport(
        "trnprof.record.runtime", "torch.optim.optimizer", "the user's framework, imported inside their process"
    ),
    # moves to the api layer (other helper)
)
