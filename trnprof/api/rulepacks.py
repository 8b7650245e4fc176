"""The rules themselves (`trnprof rules list | show | test | new | docs`): list them, show one's
reference, run their test cases with each finding priced as `analyze` prices it, scaffold a new
rule file, and write the rule reference pages."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import TrnprofError

if TYPE_CHECKING:
    from ..rules_engine.loader import Rule
    from ..rules_engine.spec import Case, Factory
    from ..rules_engine.testing import CaseResult


def list_rules(rule_dirs=()) -> list[Rule]:
    """The built-in rules and those of the pack folders `rule_dirs` (`trnprof rules list`)."""
    from ..rules_engine.loader import load_rules

    return load_rules(rule_dirs)


def rule_reference(name: str, rule_dirs=()) -> tuple[str, Path]:
    """One rule, by code or name (`trnprof rules show`): its reference section (Markdown, as
    `rules docs` writes it) and its file."""
    from ..rules_engine import docs

    match = [rule for rule in list_rules(rule_dirs) if name in (rule.code, rule.name)]
    if not match:
        raise TrnprofError(f"no rule {name!r} (see `trnprof rules list`)")
    return "\n".join(docs.rule_section(match[0])).rstrip(), match[0].path


def write_from_factory(made: Factory, path: Path) -> Path:
    """A case's run made by a collector's run factory (`simulate`: the Trn1 execution model)."""
    from ..collectors.registry import run_factory

    factory = run_factory(made.name)
    if factory is None:
        raise TrnprofError(
            f"this case needs the run factory {made.name!r}, which no installed collector "
            f"provides (entry-point group trnprof.run_factories)"
        )
    return factory(dict(made.args), path)


class _CaseRuns:
    """Case runs written under one folder; a factory's runs reused across rules."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.made: dict[str, Path] = {}
        self.count = 0

    def path_for(self, case: Case) -> Path:
        import json

        import msgspec

        from ..rules_engine.spec import Factory
        from ..rules_engine.testing import write_inline

        if case.run.inline is not None:
            self.count += 1
            return write_inline(case.run.inline, self.folder / f"inline-{self.count}")
        made = case.run.factory or Factory("simulate", msgspec.to_builtins(case.run.simulate))
        key = json.dumps([made.name, made.args], sort_keys=True)
        if key not in self.made:
            self.made[key] = write_from_factory(made, self.folder / f"sim-{len(self.made)}")
        return self.made[key]


def _run_case(rule: Rule, case: Case, runs: _CaseRuns, timeout: float) -> CaseResult:
    from ..engines import open_run
    from ..rules_engine.engine import Plan, evaluate
    from ..rules_engine.params import cast
    from ..rules_engine.testing import CaseResult, compare
    from .findings import priced

    result = CaseResult(rule, case)
    try:
        path = runs.path_for(case)
        params = rule.defaults()
        params.update({k: cast(v, rule.spec.params[k].default, f"{case.name}: set {k}") for k, v in case.set.items()})
        with open_run(path) as run:
            document = evaluate(run, [rule], {rule.name: params}, timeout=timeout)
            document = priced(run, document, Plan([rule], {rule.name: params}, timeout))
        result.problems = compare(case, rule, document)
    except TrnprofError as exc:
        result.problems = [f"could not run the case: {exc}"]
    return result


def run_rule_cases(rules: list[Rule], *, timeout: float = 60.0, workdir: Path | None = None) -> list[CaseResult]:
    """Run every test case of every rule, each finding priced as `analyze` prices it: one result
    per case (`rules_engine.testing.CaseResult`: its problems, none when it passed)."""
    with tempfile.TemporaryDirectory(prefix="trnprof-rules-test-", dir=workdir) as tmp:
        runs = _CaseRuns(Path(tmp))
        return [_run_case(rule, case, runs, timeout) for rule in rules for case in rule.spec.tests]


def rule_tests(path: str | Path | None = None, *, timeout: float = 60.0) -> list[CaseResult]:
    """`trnprof rules test`: the cases of the rules in `path` (a rule file, a pack folder or a
    folder of packs; default the built-in packs), once their SQL binds against the stdlib's
    columns and their codes and names clash neither with each other nor the built-in rules."""
    from ..rules_engine.loader import builtin_dir, check_binding, check_unique, load_folder, load_rule_file

    if path is None:
        rules = list_rules()
    elif Path(path).is_file():
        rules = [load_rule_file(Path(path), Path(path).parent.name)]
    else:
        rules = load_folder(Path(path))
    if not rules:
        raise TrnprofError(f"no rule files under {path}")
    rules = [check_binding(rule) for rule in rules]
    tested = {rule.path.resolve() for rule in rules}
    check_unique([r for r in load_folder(builtin_dir()) if r.path.resolve() not in tested] + rules)
    return run_rule_cases(rules, timeout=timeout)


def new_rule(name: str, folder: str | Path = "rules", code: str | None = None) -> Path:
    """Write a rule file `name` (pack.rule_name) to fill in under `folder` (`trnprof rules new`),
    its code the pack's next one unless `code`; it passes `rules test` as written."""
    from ..rules_engine.scaffold import new_rule as scaffold

    folder = Path(folder)
    existing = list_rules([folder]) if folder.is_dir() and any(folder.rglob("*.yaml")) else list_rules()
    return scaffold(name, folder, existing, code)


def rule_docs(out: str | Path, *, check: bool = False, force: bool = False) -> dict:
    """The rule reference (`trnprof rules docs`), from the built-in rules: {"written": the pages
    written to `out`} or, with `check`, {"drifted": the pages of `out` that differ from the rules}.
    force: replace pages of the same names that `rules docs` did not write."""
    from ..rules_engine import docs

    rules = list_rules()
    if check:
        return {"drifted": docs.drifted(Path(out), rules)}
    return {"written": docs.write(Path(out), rules, force=force)}
