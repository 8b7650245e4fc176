"""What fixing each finding is worth: the finding's fix as a config change, priced by the
what-if model fitted to the same run.

A finding gains `projected` (the Finding field, a plain mapping):
    {"change": {...}, "step_time_s": s, "effective_step_s": s,
     "gain_fraction": 1 - predicted / measured effective step (wall time per step),
     "band": {"low_s", "high_s"}, "reason": null}
`method` names what priced it: "execution model", or "replay" when the run is no described Trn1
job and the fix is priced by replaying the run's own dependency graph (trnprof/critical_path/
whatif.py: project_by_replay). Otherwise, when the fix is no config change, neither prices it, or
the model does not fit the run, {"change": null or {...}, "step_time_s": null, "gain_fraction": null, "band": null,
"reason": "..."}. Rules without an entry in FIXES are left without `projected`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from trnprof.run import Run
from trnprof.errors import TrnprofError

from trnprof.critical_path.whatif import project_by_replay

from . import describe as D

if TYPE_CHECKING:
    from .document import Prepared


class NoFix(Exception):
    """The finding's fix is not a config change the model can price (the message says why)."""


def _faults(description: dict) -> list[dict]:
    return list(description.get("faults") or [])


def _without(kind: str, what: str) -> Callable[[dict], dict]:
    def fix(description: dict) -> dict:
        faults = _faults(description)
        kept = [f for f in faults if f.get("kind") != kind]
        if len(kept) == len(faults):
            raise NoFix(f"the job description holds no {kind} fault, so the model cannot tell what {what}")
        return {"faults": kept}
    return fix


def _loader(description: dict) -> dict:
    """More loader workers (up to the node's vCPUs per rank, less the training process), else a
    deeper prefetch."""
    from trnprof.model.hardware import INSTANCES
    cluster, inputs = description.get("cluster", {}), description.get("input", {})
    instance = INSTANCES[cluster.get("instance", "trn1.32xlarge")]
    workers, prefetch = inputs.get("workers", 4), inputs.get("prefetch", 2)
    cap = max(instance.vcpus // instance.cores - 1, 1)
    if workers < cap:
        return {"input": {"workers": min(max(2 * workers, 1), cap)}}
    return {"input": {"prefetch": 2 * prefetch}}


def _overlap(description: dict) -> dict:
    faults = _faults(description)
    kept = [f for f in faults if f.get("kind") != "no_overlap"]
    if description.get("comm", {}).get("overlap_dp", True) and len(kept) == len(faults):
        raise NoFix("gradient overlap is already on; what remains exposed is not a config change")
    return {"comm": {"overlap_dp": True}, "faults": kept}


def _zero1(description: dict) -> dict:
    if description.get("parallel", {}).get("zero1"):
        raise NoFix("ZeRO-1 is already on")
    return {"parallel": {"zero1": True}}


def _buckets(description: dict) -> dict:
    return {"comm": {"bucket_mb": 4 * float(description.get("comm", {}).get("bucket_mb", 50.0))}}


def _bf16(description: dict) -> dict:
    return {"precision": {"compute": "bf16"}}


def _more_microbatches(description: dict) -> dict:
    micro = int(description.get("batch", {}).get("micro", 1))
    if micro < 2:
        raise NoFix("the micro-batch is 1 already: more microbatches need a larger global batch")
    return {"batch": {"micro": micro // 2}}


def _one_time(description: dict) -> dict:
    raise NoFix("a one-time cost (pre-compiling removes it); the steady step does not change")


FIXES: dict[str, Callable[[dict], dict]] = {
    "input.starvation": _loader,
    "overlap.exposed_communication": _overlap,
    "overlap.low_overlap_ratio": _overlap,
    "memory.optimizer_state_unsharded": _zero1,
    "collectives.small_messages": _buckets,
    "compute.fp32_matmul": _bf16,
    "scale.pipeline_bubble": _more_microbatches,
    "scale.straggler": _without("straggler", "slows the rank"),
    "scale.slow_link": _without("slow_link", "slows the link"),
    "compile.recompilation": _without("recompile", "recompiles the graph"),
    "compile.slow_first_step": _one_time,
}


def _empty(reason: str, change: dict | None = None) -> dict:
    return {"change": change, "step_time_s": None, "gain_fraction": None, "band": None, "reason": reason}


def _price(prep: Prepared, change: dict) -> dict:
    """The fix priced on the effective step (wall time per step): a recompile every 4 steps is
    worth its share of the wall time, a faster steady step its share of the wall time too."""
    job, predicted = prep.predict(change)
    priced = prep.priced(job, predicted)
    gain = -priced["effective_change_fraction"] if priced["effective_change_fraction"] is not None \
        else -priced["change_fraction"]
    return {"change": change, "step_time_s": priced["step_time_s"], "effective_step_s": priced["effective_step_s"],
            "gain_fraction": gain, "band": priced["band"], "reason": None,
            "method": "execution model"}


def project(run: Run, findings) -> None:
    """Set `projected` on every finding whose rule has a fix in FIXES (fits the model once)."""
    wanted = [f for f in findings if f.name in FIXES]
    if not wanted:
        return
    try:
        D.job_of(D.describe(run.manifest)[0], "the run's job")  # what Prepared checks first, cheaply
        from .document import Prepared  # the model, its fit and measures load only for a job to model
        prep = Prepared(run)
    except TrnprofError as exc:  # no Trn1 job to model: price by replaying the trace instead
        project_by_replay(run, wanted, str(exc))
        return
    for finding in wanted:
        try:
            change = FIXES[finding.name](prep.description)
        except NoFix as exc:
            finding.projected = _empty(str(exc))
            continue
        if not prep.fits:
            finding.projected = _empty(f"the model does not fit this run: {prep.reason}", change)
            continue
        try:
            finding.projected = _price(prep, change)
        except TrnprofError as exc:
            finding.projected = _empty(f"the fix's job is not valid: {exc}", change)
