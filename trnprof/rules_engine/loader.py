"""Find rule files, decode and validate them: a malformed rule is one error naming the file, the
field and the fix.

Rule packs are folders of YAML files, one rule per file: the built-in packs ship in
`trnprof.rules`, users add folders with `--rules DIR` (a pack folder, or a folder of packs).
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import duckdb
import msgspec

from trnprof import sqlparse, yamlio
from trnprof.critical_path import scale
from trnprof.errors import TrnprofError
from trnprof.model import config as job_config
from trnprof.schema import TABLE_COLUMNS
from trnprof.validation import dotted, explain

from . import rulecache
from .binding import bind_problem
from .catalog import readable_tables, signal_names
from .spec import JOB_LIMITS, FixSpec, Param, Probe, RuleFile

CODE = re.compile(r"^[A-Z]{2,3}[0-9]{3}$")
NAME = re.compile(r"^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$")
IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SQL_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
RULE_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class Rule:
    """A validated rule: its file's content plus what the engine derives from it."""

    spec: RuleFile
    path: Path
    tables: frozenset[str]  # names the SQL (and probes) read
    sql_params: tuple[str, ...]  # parameters the SQL uses as $name

    @property
    def code(self) -> str:
        return self.spec.code

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def pack(self) -> str:
        return self.spec.pack

    @property
    def severity(self) -> str:
        return self.spec.severity

    def defaults(self) -> dict:
        return {name: param.default for name, param in self.spec.params.items()}


class RuleError(TrnprofError):
    """A malformed rule file."""


def _fail(path: Path, field: str, problem: str, fix: str):
    raise RuleError(f"{path}: {field}: {problem} ({fix})")


def builtin_dir() -> Path:
    return Path(str(resources.files("trnprof.rules")))


def rule_files(folder: Path) -> list[Path]:
    """The rule files under `folder`: a pack folder (rule files inside) or a folder of packs."""
    if not folder.is_dir():
        raise TrnprofError(
            f"rules folder not found: {folder} (give a pack folder of rule .yaml files, or a folder of such packs)"
        )

    def files(where: Path) -> list[Path]:  # names starting with _ or . are not rules
        return sorted(
            p
            for p in where.iterdir()
            if p.suffix in RULE_SUFFIXES and p.is_file() and not p.name.startswith(("_", "."))
        )

    direct = files(folder)
    if direct:
        return direct
    return [
        p
        for pack in sorted(folder.iterdir())
        if pack.is_dir() and not pack.name.startswith(("_", "."))
        for p in files(pack)
    ]


def _check_sql(path: Path, field: str, sql: str, checks: rulecache.Checks | None = None) -> frozenset[str]:
    """One SELECT over readable tables; returns the names it reads (kept in `checks`)."""
    if checks is not None:
        return checks.tables(sql, lambda text: _check_sql(path, field, text))
    try:
        statements = sqlparse.statements(sql)
    except duckdb.Error as exc:
        _fail(path, field, f"SQL does not parse: {str(exc).splitlines()[0]}", "fix the SQL syntax")
    if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
        _fail(
            path,
            field,
            "must be exactly one SELECT statement",
            "rules only read: write one query, no ';'-separated statements, no DDL, COPY, SET or ATTACH",
        )
    try:
        # parameters stand in for values; the parser wants a value there to list the tables
        tables = frozenset(sqlparse.table_names(SQL_PARAM.sub("NULL", sql)))
    except duckdb.PermissionException:
        _fail(
            path,
            field,
            "reads a file or URL",
            "rules read only the run's tables and views: " + ", ".join(readable_tables()),
        )
    except duckdb.Error as exc:
        _fail(path, field, f"SQL does not parse: {str(exc).splitlines()[0]}", "fix the SQL syntax")
    unknown = sorted(tables - set(readable_tables()))
    if unknown:
        _fail(
            path,
            field,
            f"reads unknown table or view {', '.join(unknown)}",
            "rules read only these: " + ", ".join(readable_tables()),
        )
    return tables


def _check_template(path: Path, field: str, template: str) -> None:
    try:
        names = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
    except ValueError as exc:
        _fail(
            path,
            field,
            f"bad template: {exc}",
            "write fields as {name} or {name:.1%}; double braces for a literal brace",
        )
    for name in names:
        if not IDENT.match(name):
            _fail(
                path,
                field,
                f"template field {{{name}}} is not a plain name",
                "use a column of the query, a parameter, or a finding field like {ranks}; no attributes or indexes",
            )


def _check_tests(path: Path, spec: RuleFile) -> None:
    if not any(case.expect != "not_evaluated" and case.expect for case in spec.tests):
        _fail(
            path,
            "tests",
            "no test case expects a finding",
            "add a case whose run shows the problem and whose expect lists the finding",
        )
    for i, case in enumerate(spec.tests):
        where = f"tests[{i}] ({case.name})"
        if sum(kind is not None for kind in (case.run.inline, case.run.simulate, case.run.factory)) != 1:
            _fail(
                path,
                f"{where}.run",
                "give exactly one of inline, simulate or factory",
                "see docs/tutorial-first-rule.md",
            )
        unknown = sorted(set(case.set) - set(spec.params))
        if unknown:
            _fail(
                path,
                f"{where}.set",
                f"unknown parameter(s) {', '.join(unknown)}",
                "set only parameters the rule declares: " + (", ".join(spec.params) or "none"),
            )
        inline = case.run.inline
        if inline is None:
            continue
        for table_name in ("events", "counters"):
            table = getattr(inline, table_name)
            if table is None:
                continue
            allowed = [c for c, *_ in TABLE_COLUMNS[table_name]] + (["step"] if table_name == "counters" else [])
            bad = sorted(set(table.columns) - set(allowed))
            if bad:
                _fail(
                    path,
                    f"{where}.run.inline.{table_name}.columns",
                    f"unknown column(s) {', '.join(bad)}",
                    "allowed: " + ", ".join(allowed),
                )
            for j, row in enumerate(table.rows):
                if len(row) != len(table.columns):
                    _fail(
                        path,
                        f"{where}.run.inline.{table_name}.rows[{j}]",
                        f"{len(row)} values for {len(table.columns)} columns",
                        "give one value per column",
                    )


def _check_bands(path: Path, spec: RuleFile) -> None:
    bands = spec.severity_bands
    if bands is None:
        return
    levels = [level for level in ("low", "medium", "high") if getattr(bands, level) is not None]
    if not levels:
        _fail(path, "severity_bands", "no band", "name the parameter of at least one of high, medium, low")
    for level in levels:
        if getattr(bands, level) not in spec.params:
            _fail(
                path,
                f"severity_bands.{level}",
                f"unknown parameter {getattr(bands, level)!r}",
                "name a parameter the rule declares: " + (", ".join(spec.params) or "none"),
            )


def _fields(path: Path, field: str, template: str) -> list[str]:
    _check_template(path, field, template)
    return [name for _, name, _, _ in string.Formatter().parse(template) if name]


def _check_replay(path: Path, fix: FixSpec) -> None:
    """Each replay spec parses once its fields are filled in (`{rank}` with a rank, any other
    field with a number: a column of the finding's worst row)."""
    for i, text in enumerate(fix.replay):
        where = f"fix.replay[{i}]"
        names = _fields(path, where, text)
        try:
            scale.parse(text.format(**{name: 0 if name == "rank" else 1 for name in names}))
        except TrnprofError as exc:
            _fail(
                path,
                where,
                str(exc).removeprefix("--scale "),
                "a replay spec is SELECTOR=FACTOR as `trnprof whatif --scale` takes it (docs/critical-path.md)",
            )


def _job_keys() -> dict:
    return job_config.to_dict(job_config.Config())


def _job_value(path: Path, where: str, key: str):
    """The default of a dotted job key (`comm.bucket_mb`), or one error naming the field."""
    value = _job_keys()
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            _fail(
                path,
                where,
                f"{key!r} is not a key of the Trn1 job description",
                "name a dotted key of the job config, e.g. comm.bucket_mb (docs/execution-model.md)",
            )
        value = value[part]
    return value


def _check_model(path: Path, fix: FixSpec) -> None:
    faults = sorted(f.__struct_config__.tag for f in job_config.Fault.__args__)
    for i, edit in enumerate(fix.model.edits if fix.model else []):
        where = f"fix.model.edits[{i}]"
        if not (edit.set or edit.multiply or edit.remove_faults):
            _fail(path, where, "changes nothing", "give set, multiply or remove_faults")
        for key, value in edit.set.items():
            _job_value(path, f"{where}.set.{key}", key)
            nested: dict = {}
            *head, last = key.split(".")
            node = nested
            for part in head:
                node = node.setdefault(part, {})
            node[last] = value
            try:
                job_config.convert(nested)
            except TrnprofError as exc:
                _fail(path, f"{where}.set.{key}", str(exc), "give a value the job description accepts")
        for key in list(edit.multiply) + list(edit.at_most):
            default = _job_value(path, f"{where}.{key}", key)
            if isinstance(default, bool) or not isinstance(default, (int, float)):
                _fail(path, f"{where}.{key}", f"{key!r} is not a number", "multiply and cap numeric keys only")
        for key, cap in edit.at_most.items():
            if isinstance(cap, str) and cap not in JOB_LIMITS:
                _fail(
                    path,
                    f"{where}.at_most.{key}",
                    f"unknown job limit {cap!r}",
                    "give a number or one of " + ", ".join(JOB_LIMITS),
                )
        for kind in edit.remove_faults:
            if kind not in faults:
                _fail(path, f"{where}.remove_faults", f"unknown fault kind {kind!r}", "one of " + ", ".join(faults))


def _check_fix(path: Path, spec: RuleFile) -> None:
    fix = spec.fix
    if fix is None:
        return
    if not (fix.replay or fix.model or fix.bound):
        _fail(path, "fix", "declares nothing", "give replay, model or bound (docs/whatif.md)")
    _check_replay(path, fix)
    _check_model(path, fix)
    for level in ("medium", "high"):
        name = getattr(fix, level)
        if name is not None and name not in spec.params:
            _fail(
                path,
                f"fix.{level}",
                f"unknown parameter {name!r}",
                "name a parameter the rule declares: " + (", ".join(spec.params) or "none"),
            )


def validate(path: Path, spec: RuleFile, pack: str | None, checks: rulecache.Checks | None = None) -> Rule:
    """Cross-field checks msgspec cannot do; returns the engine's view of the rule. `checks`:
    the SQL checks of earlier loads (`rulecache`)."""
    if not CODE.match(spec.code):
        _fail(path, "code", f"{spec.code!r} is not a rule code", "two or three capitals and three digits, e.g. IN001")
    if not NAME.match(spec.name):
        _fail(
            path,
            "name",
            f"{spec.name!r} is not a dotted rule name",
            "pack.rule_name in lower case, e.g. input.starvation",
        )
    if spec.name.split(".")[0] != spec.pack:
        _fail(
            path,
            "pack",
            f"{spec.pack!r} differs from the name's prefix {spec.name.split('.')[0]!r}",
            "the name starts with the pack: pack.rule_name",
        )
    if pack is not None and spec.pack != pack:
        _fail(path, "pack", f"{spec.pack!r} but the file is in folder {pack!r}", "keep each rule in its pack's folder")
    if path.stem != spec.name.split(".")[1]:
        _fail(
            path,
            "name",
            f"{spec.name!r} but the file is named {path.name}",
            f"name the file {spec.name.split('.')[1]}{path.suffix}",
        )
    if not spec.title.strip() or "\n" in spec.title.strip():
        _fail(path, "title", "must be one non-empty line", "a short headline of the problem")
    for name in spec.params:
        if not IDENT.match(name):
            _fail(path, f"params.{name}", "not a valid parameter name", "letters, digits and _")
    tables = set(_check_sql(path, "sql", spec.sql, checks))
    used = tuple(sorted(set(SQL_PARAM.findall(spec.sql))))
    undeclared = sorted(set(used) - set(spec.params))
    if undeclared:
        _fail(
            path,
            "sql",
            f"uses undeclared parameter(s) {', '.join('$' + p for p in undeclared)}",
            "declare each under params with default, doc and source",
        )
    for field in ("message", "recommendation"):
        _check_template(path, field, getattr(spec, field))
    _check_bands(path, spec)
    _check_fix(path, spec)
    signals = signal_names()
    for i, need in enumerate(spec.requires):
        if isinstance(need, Probe):
            tables |= _check_sql(path, f"requires[{i}].sql", need.sql, checks)
            if SQL_PARAM.search(need.sql):
                _fail(path, f"requires[{i}].sql", "probes take no parameters", "write the probe without $names")
        elif need not in signals:
            _fail(
                path,
                f"requires[{i}]",
                f"unknown signal {need!r}",
                "use a column of the signals view: " + ", ".join(signals) + ", or a {sql, reason} probe",
            )
    _check_tests(path, spec)
    return Rule(spec, path, frozenset(tables), used)


def check_binding(rule: Rule) -> Rule:
    """The rule's SQL and probes bind against the columns of the tables and stdlib views (see
    `binding.py`): a misspelt column is one error naming the file, the field and the column."""
    queries = [("sql", rule.spec.sql, {name: rule.defaults()[name] for name in rule.sql_params})]
    queries += [
        (f"requires[{i}].sql", need.sql, {}) for i, need in enumerate(rule.spec.requires) if isinstance(need, Probe)
    ]
    for field, sql, params in queries:
        problem = bind_problem(sql, params)
        if problem:
            _fail(
                rule.path,
                field,
                problem.removeprefix("Binder Error: "),
                "name only columns of the tables and views it reads: see docs/stdlib.md",
            )
    return rule


def _param_problem(path: Path, raw: dict) -> None:
    """msgspec names no key inside `params` (`$.params[...]`): find the parameter and its field."""
    params = raw.get("params")
    for name, value in params.items() if isinstance(params, dict) else ():
        try:
            msgspec.convert(value, Param)
        except msgspec.ValidationError as exc:
            where, problem = explain(exc)
            _fail(
                path,
                dotted(["params", str(name)] + where),
                problem,
                f"a parameter has exactly {', '.join(Param.__struct_fields__)}",
            )


def load_rule_file(path: Path, pack: str | None = None, checks: rulecache.Checks | None = None) -> Rule:
    try:
        raw = yamlio.load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise RuleError(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise RuleError(f"{path}: byte {exc.start}: not UTF-8 text (save the rule file as UTF-8)") from None
    except yamlio.YAMLError as exc:
        raise RuleError(f"{path}: {yamlio.describe_error(exc)}") from None
    if not isinstance(raw, dict):
        raise RuleError(f"{path}: file: a rule file is a YAML mapping (code: ..., name: ..., ...)")
    try:
        spec = msgspec.convert(raw, RuleFile)
    except msgspec.ValidationError as exc:
        where, problem = explain(exc)
        if where == ["params"]:
            _param_problem(path, raw)
        raise RuleError(
            f"{path}: {dotted(where) or 'file'}: {problem} (see the rule format in docs/rules/index.md)"
        ) from None
    return validate(path, spec, pack, checks)


def load_folder(folder: Path) -> list[Rule]:
    """The rules of a pack folder or of a folder of packs, decoded from their files; their SQL
    checks are done once (`rulecache`)."""
    files = rule_files(folder)
    readable = readable_tables()
    checks = rulecache.Checks(folder, "\0".join(readable + list(signal_names())), set(readable))
    rules = [load_rule_file(path, path.parent.name, checks) for path in files]
    checks.save()
    return rules


def load_rules(folders=(), *, builtin: bool = True) -> list[Rule]:
    """Built-in rules plus the rules of `folders`; codes and names must be unique. The rules of
    `folders` are bound against the stdlib's columns (the built-in ones are, by their tests)."""
    rules = load_folder(builtin_dir()) if builtin else []
    for folder in folders:
        rules += [check_binding(rule) for rule in load_folder(Path(folder))]
    return check_unique(rules)


def check_unique(rules: list[Rule]) -> list[Rule]:
    """`rules` sorted by pack and code, once every code and name is used by one rule only."""
    seen: dict[str, Rule] = {}
    for rule in rules:
        for key in (rule.code, rule.name):
            if key in seen:
                raise RuleError(
                    f"{rule.path}: {'code' if key == rule.code else 'name'}: {key} is already "
                    f"used by {seen[key].path} (give every rule its own code and name)"
                )
            seen[key] = rule
    return sorted(rules, key=lambda r: (r.pack, r.code))
