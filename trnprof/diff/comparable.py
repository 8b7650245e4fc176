"""Can two runs be compared? Differences that make the numbers meaningless stop a gate; others
are worth a note (the comparison is per rank and per step, so world sizes may differ)."""

from __future__ import annotations

from .load import Side

# job keys whose difference makes a comparison meaningless: another model or unit of work
BLOCKING = ("model", "seq_len", "throughput_unit")
# job keys whose difference is likely the point of the comparison, but worth saying
NOTED = (
    "instance_type",
    "nodes",
    "parallelism",
    "precision",
    "global_batch",
    "micro_batch",
    "samples_per_step",
    "activation_checkpointing",
)


def check(base: Side, new: Side) -> dict:
    """`comparable` false with `reasons` when the runs are different jobs; `notes` otherwise."""
    reasons, notes = [], []
    for key in BLOCKING:
        b, n = base.job.get(key), new.job.get(key)
        if b is not None and n is not None and b != n:
            reasons.append(f"different {key}: {b} vs {n}")
    reasons += _unknown_model(base, new)
    if not len(base.step_times) or not len(new.step_times):
        empty = [label for label, side in (("base", base), ("new", new)) if not len(side.step_times)]
        reasons.append(f"no steady-state steps in the {' and '.join(empty)} run (no step events)")
    for key in NOTED:
        b, n = base.job.get(key), new.job.get(key)
        if b is not None and n is not None and b != n:
            notes.append(f"{key} differs: {b} vs {n}")
    if base.world_size != new.world_size:
        notes.append(
            f"world size differs ({base.world_size} vs {new.world_size} ranks): "
            "breakdown and ops are compared per rank and per step"
        )
    collectors = [side.manifest.get("source", {}).get("collector") for side in (base, new)]
    if collectors[0] != collectors[1]:
        notes.append(f"different sources: {collectors[0]} vs {collectors[1]}")
    return {"comparable": not reasons, "reasons": reasons, "notes": notes}


def _unknown_model(base: Side, new: Side) -> list[str]:
    """A run that records no model (an ingested trace without a description) cannot be shown to
    be the same job as one that does: nothing says they train the same thing."""
    models = {"base": base.job.get("model"), "new": new.job.get("model")}
    unknown = [label for label, model in models.items() if model is None]
    if len(unknown) != 1:
        return []
    known = "new" if unknown == ["base"] else "base"
    side = base if unknown == ["base"] else new
    source = side.manifest.get("source", {}).get("collector") or "an unknown source"
    return [
        f"the {unknown[0]} run ({source}) records no model, the {known} run is {models[known]}: "
        "nothing shows they are the same job"
    ]
