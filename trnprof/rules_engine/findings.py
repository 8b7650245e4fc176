"""Turn a rule's offending rows into findings: one per rule and pattern, with the ranks and
steps affected, the time lost per step, a severity, a few evidence rows and the messages.

Columns of a rule's rows that have a meaning here (all optional):
  rank, step   where the row happened (null step: the row holds for every step)
  lost_ns      time the row costs in its step, ns (steps are synchronous: per step the worst
               row counts, as ranks wait for the slowest)
  one_time_ns  time the row costs once per job (a compile, a slow first step), ns; the largest counts
  lost_bytes   memory the row puts at stake, bytes; the largest counts
  severity     info | low | medium | high for the row; the rule's severity when absent or null
  pattern      rows with different patterns are different findings (e.g. one per straggler)
Every other column is evidence, and a field the message templates can use.

`build` returns drafts; the engine grants their time claims exclusively (`claims.py`) and
`finish` renders each draft's messages with the time it was granted.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass

import msgspec
import pandas as pd

from trnprof.errors import TrnprofError
from trnprof.jsonplain import plain
from trnprof.textfmt import compact
from trnprof.units import GIB

from . import claims
from .document import Finding, Impact
from .loader import Rule
from .spec import CATEGORIES, SEVERITIES, SeverityBands, severity_rank

ROW_COSTS = {"lost_ns": "_lost", "one_time_ns": "_once", "lost_bytes": "_bytes"}

EVIDENCE_ROWS = 5
MAX_ROWS = 1_000_000


class FindingError(Exception):
    """A rule whose rows or templates are not usable; the message says why."""


class _Formatter(string.Formatter):
    """str.format without attribute or index access; null values print as n/a."""

    def get_field(self, field_name, args, kwargs):
        if not field_name.isidentifier():
            raise FindingError(f"template field {{{field_name}}} is not a plain name")
        if field_name not in kwargs:
            raise FindingError(
                f"template field {{{field_name}}} is not a column of the query, a parameter or a finding field"
            )
        return kwargs[field_name], field_name

    def format_field(self, value, format_spec):
        if value is None:
            return "n/a"
        try:
            return _nonzero(value, format_spec, format(value, format_spec))
        except (ValueError, TypeError) as exc:
            raise FindingError(f"cannot format {value!r} with {{:{format_spec}}}: {exc}") from None


_FIXED = re.compile(r"^(.*?)\.(\d+)([f%])$")


def _nonzero(value, spec: str, text: str) -> str:
    """A positive number never prints as zero: '{:.0%}' of 0.003 is '0.3%', '{:.2f}' of 0.0004
    is '0.0004' (more decimals until a digit shows, at most 9)."""
    match = _FIXED.match(spec)
    if (
        not match
        or isinstance(value, bool)
        or not isinstance(value, (int, float))
        or value <= 0
        or any(c in "123456789" for c in text)
    ):
        return text
    head, digits, kind = match.groups()
    for more in range(int(digits) + 1, 10):
        text = format(value, f"{head}.{more}{kind}")
        if any(c in "123456789" for c in text):
            break
    return text


def render(template: str, fields: dict) -> str:
    return _Formatter().format(template, **fields)


def _int_list(series: pd.Series, column: str) -> list[int]:
    values = []
    for value in series.dropna().unique():
        try:
            values.append(int(value))
        except (TypeError, ValueError):
            raise FindingError(f"column {column} must hold integers, got {value!r}") from None
    return sorted(values)


def banded(values: pd.Series, bands: SeverityBands, params: dict) -> pd.Series:
    """Each value's severity band: the highest whose parameter it reaches, else `otherwise`
    (a missing value too)."""
    severity = pd.Series(bands.otherwise, index=values.index, dtype=object)
    for level in ("low", "medium", "high"):  # ascending: a higher band overrides a lower one
        threshold = getattr(bands, level)
        if threshold is not None:
            severity = severity.mask(values >= float(params[threshold]), level)
    return severity.astype(str)


def _checked(frame: pd.DataFrame, rule: Rule, params: dict) -> pd.DataFrame:
    if len(frame) > MAX_ROWS:
        raise FindingError(f"returned {len(frame):,} rows (more than {MAX_ROWS:,}): aggregate in SQL")
    if frame.columns.duplicated().any():
        raise FindingError("the query returns duplicate column names: give each column its own name")
    frame = frame.copy()
    for column, internal in ROW_COSTS.items():
        if column in frame:
            value = pd.to_numeric(frame[column], errors="coerce")
            if value.isna().sum() > frame[column].isna().sum():
                raise FindingError(f"column {column} must be numeric ({'bytes' if 'bytes' in column else 'ns'})")
            frame[internal] = value.fillna(0.0).clip(lower=0.0).astype(float)
        else:
            frame[internal] = 0.0
    bands = rule.spec.severity_bands
    if bands is not None:
        if "severity" in frame:
            raise FindingError("the query returns a severity column and the rule declares severity_bands: keep one")
        if bands.by not in frame:
            raise FindingError(f"severity_bands.by names column {bands.by!r}, which the query does not return")
        frame["_severity"] = banded(pd.to_numeric(frame[bands.by], errors="coerce"), bands, params)
    elif "severity" in frame:
        severity = frame["severity"].where(frame["severity"].notna(), rule.severity)
        bad = sorted(set(map(str, severity)) - set(SEVERITIES))
        if bad:
            raise FindingError(f"column severity holds {bad[0]!r}; use one of {', '.join(SEVERITIES)}")
        frame["_severity"] = severity.astype(str)
    else:
        frame["_severity"] = rule.severity
    return frame


def impact(rows: pd.DataFrame, n_steps: int, mean_step_ns: float | None) -> Impact:
    """Seconds lost per step and share of the mean step time.

    Per step, the largest loss among the step's rows counts (ranks wait for the slowest); rows
    without a step count in every step. The sum over the run's steps is divided by its steps."""
    has_step = rows["step"].notna() if "step" in rows else pd.Series(False, index=rows.index)
    everywhere = float(rows.loc[~has_step, "_lost"].max()) if (~has_step).any() else 0.0
    per_step = rows.loc[has_step].groupby("step")["_lost"].max() if has_step.any() else pd.Series(dtype=float)
    if n_steps > 0:
        covered = per_step.clip(lower=everywhere).sum()
        uncovered = max(n_steps - len(per_step), 0) * everywhere
        lost_ns = (covered + uncovered) / max(n_steps, len(per_step))
    else:
        lost_ns = max(everywhere, float(per_step.max()) if len(per_step) else 0.0)
    seconds = lost_ns / 1e9
    fraction = seconds / (mean_step_ns / 1e9) if mean_step_ns else 0.0
    return Impact(round(float(seconds), 9), round(float(fraction), 6))


def _other_costs(rows: pd.DataFrame, cost: Impact) -> Impact:
    """`cost` with the one-time seconds and bytes of the rows (warm-up rows included)."""
    return msgspec.structs.replace(
        cost, one_time_seconds=round(float(rows["_once"].max()) / 1e9, 9), bytes=int(rows["_bytes"].max())
    )


def _evidence(rows: pd.DataFrame) -> list[dict]:
    """The EVIDENCE_ROWS rows that lose the most, in an order no engine changes: time lost to
    the whole ns (engines sum in different orders, so the last bits differ), then rank, step and
    the other fields."""
    columns = [c for c in rows.columns if not c.startswith("_")]
    lost = rows["_lost"].astype(float).fillna(0).round()
    if len(rows) > EVIDENCE_ROWS:  # only rows tied with the last one kept can change places
        rows = rows[lost >= lost.nlargest(EVIDENCE_ROWS).iloc[-1]]
        lost = lost[rows.index]
    records = [tuple(plain(v) for v in record) for record in rows[columns].itertuples(index=False, name=None)]
    leading = [columns.index(c) for c in ("rank", "step") if c in columns]

    def key(item):
        amount, record = item
        return (-amount, *(_sortable(record[i]) for i in leading), repr(record))

    ranked = sorted(zip(lost.tolist(), records), key=key)
    return [dict(zip(columns, record)) for _, record in ranked[:EVIDENCE_ROWS]]


def _sortable(value) -> tuple:
    return (value is None, value if isinstance(value, (int, float)) else 0)


@dataclass
class Draft:
    """A finding before its time claim is granted: the rule, its template fields, the finding."""

    rule: Rule
    fields: dict
    finding: Finding

    def claim(self) -> claims.Claim:
        return claims.Claim(
            self.finding.name,
            self.finding.impact.seconds_per_step,
            self.draws_from(),
            self.rule.spec.impact.specificity,
            self.finding.severity,
        )

    def draws_from(self) -> str | None:
        """The step_breakdown category the claim draws from: the rule's (`impact.draws_from`), or
        its rows' `draws_from` column where they give one (categories joined by `+`, taken from in
        turn; null: the step itself), for time at stake that lies elsewhere on another platform."""
        if "draws_from" not in self.fields:
            return self.rule.spec.impact.draws_from
        value = self.fields["draws_from"]
        if value is not None and not (isinstance(value, str) and set(value.split("+")) <= set(CATEGORIES)):
            raise TrnprofError(
                f"rule {self.rule.name}: column draws_from is {str(value)[:40]!r}, not "
                f"step_breakdown categories ({', '.join(CATEGORIES)}) joined by '+', or null"
            )
        return value


def build(
    rule: Rule, params: dict, frame: pd.DataFrame, n_steps: int, mean_step_ns: float | None, warmup=frozenset()
) -> list[Draft]:
    """The drafts of one rule's findings from its rows; rows of warm-up steps count as evidence,
    not in the per-step impact (which is measured over the `n_steps` steady steps)."""
    if frame.empty:
        return []
    frame = _checked(frame, rule, params)
    groups = frame.groupby(frame["pattern"].fillna("").astype(str), sort=True) if "pattern" in frame else [("", frame)]
    drafts = []
    for pattern, rows in groups:
        ranks = _int_list(rows["rank"], "rank") if "rank" in rows else []
        steps = _int_list(rows["step"], "step") if "step" in rows else []
        severity = max(rows["_severity"], key=severity_rank)
        steady = rows[~rows["step"].isin(warmup)] if "step" in rows and warmup else rows
        cost = _other_costs(rows, impact(steady, n_steps, mean_step_ns) if len(steady) else Impact(0.0, 0.0))
        evidence = _evidence(rows)
        fields = {
            **params,
            **(evidence[0] if evidence else {}),
            "pattern": pattern,
            "ranks": compact(ranks),
            "n_ranks": len(ranks),
            "steps": compact(steps),
            "n_steps": len(steps),
        }
        drafts.append(
            Draft(
                rule,
                fields,
                Finding(
                    code=rule.code,
                    name=rule.name,
                    pack=rule.pack,
                    severity=severity,
                    title=rule.spec.title,
                    message="",
                    recommendation="",
                    ranks=ranks,
                    steps=steps,
                    impact=cost,
                    evidence=evidence,
                    pattern=pattern or None,
                ),
            )
        )
    return drafts


def finish(draft: Draft, granted: claims.Claim, mean_step_ns: float | None) -> Finding:
    """The finding with the time it was granted, its severity graded on it, its messages. The
    message states what the rows measured (`seconds_per_step`, `ms_per_step`,
    `fraction_of_step` are the measurement); when more specific findings claimed part of it
    first, a sentence says how much of it is left to this finding (`claimed_*` fields)."""
    found = draft.finding
    measured = found.impact.seconds_per_step
    seconds = round(granted.granted, 9)
    fraction = round(seconds / (mean_step_ns / 1e9), 6) if mean_step_ns else 0.0
    cost = msgspec.structs.replace(
        found.impact,
        seconds_per_step=seconds,
        fraction_of_step=fraction,
        measured_seconds_per_step=measured,
        draws_from=draft.draws_from(),
    )
    cut_short = seconds < measured - 1e-9
    severity = claims.graded(found.severity, cut_short, fraction, cost.costless())
    fields = {
        **draft.fields,
        "severity": severity,
        "seconds_per_step": measured,
        "ms_per_step": measured * 1e3,
        "fraction_of_step": found.impact.fraction_of_step,
        "claimed_seconds_per_step": seconds,
        "claimed_ms_per_step": seconds * 1e3,
        "claimed_fraction_of_step": fraction,
        "one_time_s": cost.one_time_seconds,
        "lost_gib": cost.bytes / GIB,
        "related": ", ".join(granted.related) or "none",
    }
    message = render(draft.rule.spec.message, fields)
    if cut_short:
        message += " " + claims.claim_sentence(seconds, measured, granted.related)
    return msgspec.structs.replace(
        found,
        severity=severity,
        impact=cost,
        related=granted.related,
        message=message,
        recommendation=render(draft.rule.spec.recommendation, fields),
    )


def sort_key(finding: Finding):
    """Most severe first, then by time per step (the price of the fix once `analyze` priced it,
    rules_engine/pricing.py; the claim before), one-time time and memory (severity grades a
    finding's cost over the run, and some findings, e.g. memory, cost no step time)."""
    cost = finding.impact
    return (
        -severity_rank(finding.severity),
        -cost.seconds_per_step,
        -cost.one_time_seconds,
        -cost.bytes,
        finding.code,
        finding.pattern or "",
    )
