"""What fixing each finding is worth: the fix its rule declares (`fix:` in the rule file,
trnprof/rules_engine/spec.py FixSpec), priced one way per run (docs/whatif.md):

- by the execution model, where the run describes a Trn1 job and the rule declares the fix as a
  change of the job (`fix.model`): the first edit that changes the job, priced on the effective
  step (wall time per step) by the model fitted to the same run;
- else by replaying the run's own dependency graph with the fix's scale specs (`fix.replay`,
  trnprof/whatif/replay.py), on any run with steps;
- else a bound: the time the finding measured (its exclusive claim), with what that assumes.

A finding gains `projected` (the Finding field, a plain mapping):
    {"method": "execution model" | "replay" | "bound", "change": {...} or null,
     "step_time_s": s or null, "effective_step_s": s (model only), "gain_fraction": the saving's
     share of the step (the bound's: the claimed share), "band": {"low_s", "high_s"} (model:
     step times) or null, "gain_band": {"low", "high"} shares or null (replay on CPU
     collectives: up to the measured share), "reason": why a better method did not price it, or
     null, "assumes": what the bound assumes (bound only), "note": a caveat, or null}
Findings that cost no step time (memory, one-time costs) and have no fix keep `projected` null.
The rule engine turns the price into the finding's headline (rules_engine/pricing.py).
"""

from __future__ import annotations

import math
import string
from typing import TYPE_CHECKING

from trnprof.critical_path.compute import check_within_a_minute
from trnprof.critical_path.scale import parse as parse_scale
from trnprof.errors import TrnprofError
from trnprof.rules_engine.spec import BOUND_ASSUMES, JOB_LIMITS, FixSpec, ModelEdit
from trnprof.run import Run

from . import describe
from .replay import replay_prices

if TYPE_CHECKING:
    from .document import Prepared

MODEL, REPLAY, BOUND = "execution model", "replay", "bound"
CONTENTION = (
    "on CPU the collectives' threads share the compute cores, a contention the dependency graph "
    "cannot see: the band reaches the share of the step the finding measured"
)
HIDING = (
    "on CPU the collectives' threads run on the cores compute uses: hidden under compute they still take "
    "those cores, which the trace cannot tell are free, so the band reaches down to no gain"
)

CAPPED = (
    "the replay removes all of the time; the fix hides at most what the finding measured, so the price is capped there"
)


class NoFix(Exception):
    """The finding's fix cannot be expressed for this run (the message says why)."""


# ---------------------------------------------------------------- the model's fix: a job change


def _spare_vcpus_per_rank(config: dict) -> int:
    """Loader workers a rank can have: the node's vCPUs per NeuronCore less the training process."""
    from trnprof.model.hardware import INSTANCES

    instance = INSTANCES[config["cluster"]["instance"]]
    return max(instance.vcpus // instance.cores - 1, 1)


LIMITS = {"spare_vcpus_per_rank": _spare_vcpus_per_rank}
assert set(LIMITS) == set(JOB_LIMITS)


def _get(config: dict, key: str):
    value = config
    for part in key.split("."):
        value = value[part]
    return value


def _put(change: dict, key: str, value) -> None:
    *head, last = key.split(".")
    for part in head:
        change = change.setdefault(part, {})
    change[last] = value


def _edited(edit: ModelEdit, config: dict) -> dict:
    """The change `edit` makes to the job `config` (its full config, defaults filled): only the
    keys whose value differs; {} when it changes nothing."""
    change: dict = {}
    for key, value in edit.set.items():
        if _get(config, key) != value:
            _put(change, key, value)
    for key, factor in edit.multiply.items():
        now = _get(config, key)
        value = now * factor
        cap = edit.at_most.get(key)
        if cap is not None:
            value = min(value, LIMITS[cap](config) if isinstance(cap, str) else cap)
        if isinstance(now, int):
            value = max(math.floor(value), 1)
        if value != now:
            _put(change, key, value)
    if edit.remove_faults:
        faults = list(config.get("faults") or [])
        kept = [f for f in faults if f.get("kind") not in edit.remove_faults]
        if len(kept) != len(faults):
            change["faults"] = kept
    return change


def model_change(fix: FixSpec, config: dict) -> dict:
    """The first of the fix's edits that changes the job; NoFix (its `unchanged` line) when none does."""
    for edit in fix.model.edits:
        change = _edited(edit, config)
        if change:
            return change
    raise NoFix(fix.model.unchanged)


def _by_model(prep: Prepared, fix: FixSpec) -> dict:
    from trnprof.model.config import to_dict

    change = model_change(fix, to_dict(prep.job.config))
    if not prep.fits:
        raise NoFix(f"the model does not fit this run: {prep.reason}")
    try:
        job, predicted = prep.predict(change)
        priced = prep.priced(job, predicted)
    except TrnprofError as exc:
        raise NoFix(f"the fix's job is not valid: {exc}") from None
    effective = priced["effective_change_fraction"]
    gain = -(effective if effective is not None else priced["change_fraction"])
    return {
        "method": MODEL,
        "change": change,
        "step_time_s": priced["step_time_s"],
        "effective_step_s": priced["effective_step_s"],
        "gain_fraction": gain,
        "band": priced["band"],
        "gain_band": None,
        "reason": None,
        "note": None,
    }


# ---------------------------------------------------------------- the replay's fix: scale specs


def replay_specs(fix: FixSpec, finding) -> list[str]:
    """The fix's scale specs for `finding`: `{rank}` once per rank of the finding, other fields
    from its worst row (evidence); NoFix when a field has no value."""
    row = finding.evidence[0] if finding.evidence else {}
    specs = []
    for text in fix.replay:
        names = {name for _, name, _, _ in string.Formatter().parse(text) if name}
        missing = sorted(n for n in names - {"rank"} if row.get(n) is None)
        if missing:
            raise NoFix(f"the finding has no {missing[0]} to scale by")
        ranks = finding.ranks if "rank" in names else [None]
        if not ranks:
            raise NoFix("the finding names no rank to bring to its peers' pace")
        specs += [text.format(**{**row, "rank": rank}) for rank in ranks]
    return specs


def _touches_communication(specs: list[str]) -> bool:
    return any(value in ("communication", "collective") for spec in specs for _, value in parse_scale(spec).terms)


def _device_kind(run: Run) -> str | None:
    try:
        frame = run.sql("SELECT device_kind FROM run_platform")
    except Exception:  # noqa: BLE001 -- a run without the view prices without the caveat
        return None
    return str(frame.iloc[0, 0]) if len(frame) and frame.iloc[0, 0] is not None else None


def _contention(projected: dict, finding, specs: list[str], device_kind: str | None, fix: FixSpec) -> dict:
    """On a CPU run whose fix touches communication, the graph cannot see the collectives'
    threads competing with compute for the cores: a fix that removes communication frees them
    (the band reaches up to the measured share), one that hides it under compute
    (`at_most_measured`) keeps them busy (the band reaches down to no gain)."""
    gain, share = projected["gain_fraction"], finding.impact.fraction_of_step
    if device_kind != "cpu" or not _touches_communication(specs) or gain is None:
        return projected
    if fix.at_most_measured:
        note = "; ".join(filter(None, (projected["note"], HIDING)))
        return {**projected, "gain_band": {"low": 0.0, "high": gain}, "note": note} if gain > 0 else projected
    if share <= gain:
        return projected
    return {**projected, "gain_band": {"low": gain, "high": share}, "note": CONTENTION}


# ---------------------------------------------------------------- the bound


def _bound(finding, fix: FixSpec | None, reason: str | None) -> dict | None:
    if not finding.impact.seconds_per_step:
        return (
            None
            if fix is None
            else {
                "method": BOUND,
                "change": None,
                "step_time_s": None,
                "gain_fraction": None,
                "band": None,
                "gain_band": None,
                "reason": reason,
                "assumes": fix.bound or BOUND_ASSUMES,
                "note": None,
            }
        )
    return {
        "method": BOUND,
        "change": None,
        "step_time_s": None,
        "gain_fraction": finding.impact.fraction_of_step,
        "band": None,
        "gain_band": None,
        "reason": reason,
        "assumes": (fix.bound if fix and fix.bound else BOUND_ASSUMES),
        "note": None,
    }


# ---------------------------------------------------------------- all findings of a run


def _prepared(run: Run, wanted: bool):
    """The model fitted to `run` when it describes a Trn1 job and some fix needs it, else
    (None, why not)."""
    if not wanted:
        return None, None
    try:
        describe.job_of(describe.describe(run.manifest)[0], "the run's job")  # what Prepared checks first, cheaply
        from .document import Prepared  # the model, its fit and measures load only for a job to model

        return Prepared(run), None
    except TrnprofError as exc:
        return None, str(exc)


def project(run: Run, findings, fixes: dict[str, FixSpec | None]) -> None:
    """Set `projected` on every finding: its rule's fix (`fixes`: rule name -> FixSpec or None)
    priced by the model, else by replay, else the bound (docs/whatif.md)."""
    prep, _ = _prepared(run, any(fixes.get(f.name) and fixes[f.name].model for f in findings))
    reasons: dict[int, str] = {}
    replays: list[tuple[object, list[str]]] = []
    for finding in findings:
        fix = fixes.get(finding.name)
        if fix is not None and fix.model is not None and prep is not None:
            try:
                finding.projected = _by_model(prep, fix)
                continue
            except NoFix as exc:
                reasons[id(finding)] = f"the execution model: {exc}"
        if fix is not None and fix.replay:
            try:
                replays.append((finding, replay_specs(fix, finding)))
                continue
            except NoFix as exc:
                reasons[id(finding)] = f"no replay: {exc}"
        finding.projected = _bound(finding, fix, reasons.get(id(finding)))
    if replays:
        _price_replays(run, replays, fixes, reasons)
    _shared(findings)


def _shared(findings) -> None:
    """Findings whose fixes are the same change (exposed communication and low overlap both
    price overlap) are worth it once: the one that claimed most of the measured time carries the
    price; each other one is worth 0 and says whose price it shares."""
    groups: dict[str, list] = {}
    for finding in findings:
        projected = finding.projected
        if projected and projected.get("change") and projected.get("gain_fraction") is not None:
            key = f"{projected['method']}:{sorted(projected['change'].items())!r}"
            groups.setdefault(key, []).append(finding)
    for group in groups.values():
        keeper = max(group, key=lambda f: (f.impact.fraction_of_step, f.code))
        for finding in group:
            if finding is not keeper:
                finding.projected = {
                    **finding.projected,
                    "gain_fraction": 0.0,
                    "gain_band": None,
                    "note": f"the same fix as {keeper.code} {keeper.name}, which carries its price",
                }


def _price_replays(run: Run, replays, fixes, reasons: dict[int, str]) -> None:
    try:
        check_within_a_minute(run)  # analyze walks no path past a command's minute
        prices = replay_prices(run, [specs for _, specs in replays])
    except TrnprofError as exc:
        for finding, _ in replays:
            finding.projected = _bound(finding, fixes[finding.name], f"no replay: {exc}")
        return
    kind = _device_kind(run)
    for (finding, specs), price in zip(replays, prices):
        projected = {
            "method": REPLAY,
            "change": price["change"],
            "step_time_s": price["step_time_s"],
            "gain_fraction": price["gain_fraction"],
            "band": None,
            "gain_band": None,
            "reason": reasons.get(id(finding)),
            "note": None,
            "steps": price["steps"],
        }
        fix = fixes[finding.name]
        finding.projected = _contention(_capped(projected, finding, fix), finding, specs, kind, fix)


def _capped(projected: dict, finding, fix: FixSpec) -> dict:
    """A replay that does more than the fix can (`at_most_measured`) is worth at most the measured claim."""
    share = finding.impact.fraction_of_step
    if not fix.at_most_measured or projected["gain_fraction"] is None or projected["gain_fraction"] <= share:
        return projected
    return {**projected, "gain_fraction": share, "note": CAPPED}
