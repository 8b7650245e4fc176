"""The job a what-if question is about, as an execution-model config.

A run the Trn1 model wrote carries its whole config in the manifest; whatif takes it *without*
its `calibration:` section (the free parameters are what the fit finds from the trace) and
without `run.noise` (predictions are noise-free). An ingested run says nothing of the model,
layout or batch: the user gives them with `--config FILE` / `--set key=value`, and a missing
one is one error line naming every key still needed.

`--set` takes the simulator's dotted keys (`parallel.tp=16`) or the short names in ALIASES
(`tp=16`). Only the job's description can change: `run.*` and `calibration.*` cannot.
"""

from __future__ import annotations

import copy
import json

from trnprof.errors import TrnprofError
from trnprof.model.config import _merge, _normalise, convert, parse_override, read_config_file
from trnprof.model.hardware import INSTANCES
from trnprof.model.job import Job, resolve
from trnprof.textfmt import brief

COLLECTOR = "trnprof.trn1"
# Short names a user types for the changes asked most (`--set tp=16`).
ALIASES = {
    "nodes": "cluster.nodes",
    "instance": "cluster.instance",
    "tp": "parallel.tp",
    "pp": "parallel.pp",
    "zero1": "parallel.zero1",
    "sequence_parallel": "parallel.sequence_parallel",
    "micro": "batch.micro",
    "micro_batch": "batch.micro",
    "global": "batch.global",
    "global_batch": "batch.global",
    "overlap": "comm.overlap_dp",
    "overlap_dp": "comm.overlap_dp",
    "bucket_mb": "comm.bucket_mb",
    "workers": "input.workers",
    "loader_workers": "input.workers",
    "prefetch": "input.prefetch",
    "per_sample_ms": "input.per_sample_ms",
    "seq_len": "model.seq_len",
    "precision": "precision.compute",
    "auto_cast": "precision.auto_cast",
    "checkpointing": "memory.activation_checkpointing",
}
# Sections a what-if may change; `run` and `calibration` belong to the measurement and the fit.
CHANGEABLE = ("cluster", "model", "parallel", "batch", "precision", "memory", "input", "comm", "faults")
# What an ingested run must be told (the trace cannot say), as `--set` keys.
NEEDED = {
    "model": "model (a preset, e.g. model=llama2-7b, or model.kind with its fields)",
    "cluster.instance": "cluster.instance (trn1.2xlarge, trn1.32xlarge, trn1n.32xlarge)",
    "cluster.nodes": "cluster.nodes",
    "parallel.tp": "parallel.tp",
    "parallel.pp": "parallel.pp",
    "batch.global": "batch.global",
    "batch.micro": "batch.micro",
}


def expand(text: str) -> str:
    """`tp=16` as `parallel.tp=16`; dotted keys stay as they are."""
    key, sep, value = text.partition("=")
    return f"{ALIASES.get(key.strip(), key.strip())}{sep}{value}"


def parse_overrides(overrides) -> dict:
    """`key=value` strings (or a mapping of key -> value) as one nested config mapping."""
    if isinstance(overrides, dict):
        overrides = [f"{k}={_yaml_value(v)}" for k, v in overrides.items()]
    if isinstance(overrides, str):
        raise TrnprofError(
            f"overrides: give a list of key=value strings or a mapping, not the string {brief(overrides)}"
        )
    merged: dict = {}
    for text in overrides:
        if not isinstance(text, str):
            raise TrnprofError(f"--set {brief(text)}: expected key=value, e.g. tp=16 or parallel.tp=16")
        change = _normalise(parse_override(expand(text)), f"--set {text}")
        for section in change:
            if section not in CHANGEABLE:
                why = (
                    "the fit finds the free parameters from the trace"
                    if section == "calibration"
                    else "what-if predicts the steady step, not the run's length or noise"
                    if section == "run"
                    else f"allowed: {', '.join(CHANGEABLE)} or the short names {', '.join(sorted(ALIASES))}"
                )
                raise TrnprofError(f"--set {text}: {section!r} cannot be changed by a what-if ({why})")
        merged = _merge(merged, change)
    return merged


def _yaml_value(value) -> str:
    return json.dumps(value)  # JSON is YAML: numbers, booleans, lists and mappings round-trip


def recorded_config(manifest: dict) -> dict | None:
    """The config a Trn1-model run was simulated with, minus what the fit must find, or None
    for a run the model did not write."""
    config = manifest.get("config")
    if manifest.get("source", {}).get("collector") != COLLECTOR or not isinstance(config, dict):
        return None
    config = copy.deepcopy(config)
    config.pop("calibration", None)
    config.setdefault("run", {})["noise"] = 0.0
    return config


def _missing(description: dict) -> list[str]:
    out = []
    for key in NEEDED:
        section, _, field = key.partition(".")
        value = description.get(section)
        if not value or (field and (not isinstance(value, dict) or value.get(field) is None)):
            out.append(NEEDED[key])
    return out


def _take_needed(given: dict, overrides: dict) -> tuple[dict, dict]:
    """For an ingested run: the NEEDED keys the --config lacks are taken from --set (they
    describe the job); every other --set is a change."""
    description, rest = copy.deepcopy(given), copy.deepcopy(overrides)
    for key in NEEDED:
        section, _, field = key.partition(".")
        if not field:
            if section not in description and section in rest:
                description[section] = rest.pop(section)
            continue
        have = description.get(section) or {}
        other = rest.get(section) or {}
        if have.get(field) is None and isinstance(other, dict) and field in other:
            description.setdefault(section, {})[field] = other.pop(field)
            if not other:
                rest.pop(section)
    return description, rest


def describe(manifest: dict, config_file=None, overrides: dict | None = None) -> tuple[dict, dict]:
    """(the baseline job's config mapping, the changes): the recorded config of a Trn1-model run
    with `--config` over it, or for an ingested run the user's description."""
    overrides = overrides or {}
    base = recorded_config(manifest)
    given = read_config_file(config_file) if config_file else {}
    for section in given:
        if section in ("calibration", "run"):
            raise TrnprofError(
                f"--config {config_file}: section {section!r} cannot be given "
                "(the fit finds the free parameters; the run is what was measured)"
            )
    if base is None:
        given = _merge(_recorded_cluster(manifest, given), given)
        given, overrides = _take_needed(given, overrides)
        missing = _missing(given)
        if missing:
            kind = manifest.get("source", {}).get("collector", "unknown collector")
            raise TrnprofError(
                f"run from {kind}: the trace cannot tell the job; still needed (--config FILE or "
                f"--set key=value): {'; '.join(missing)}"
            )
        base = {}
    description = _merge(base, given)
    description.setdefault("run", {})["noise"] = 0.0
    return description, overrides


def changed(description: dict, overrides: dict) -> dict:
    return _merge(description, overrides)


def job_of(description: dict, what: str) -> Job:
    """The resolved job; a config or layout problem is one error line saying which job."""
    try:
        config = convert(copy.deepcopy(description))
        return resolve(config)
    except TrnprofError as exc:
        raise TrnprofError(f"{what}: {exc}") from None


def _recorded_cluster(manifest: dict, given: dict) -> dict:
    """The instance and node count an ingested run's metadata states, when a Trn1 one; a run
    recorded on other hardware is one error unless the user describes the Trn1 job."""
    job = manifest.get("job") or {}
    instance = job.get("instance_type")
    if instance is None:
        return {}
    if instance not in INSTANCES:
        if (given.get("cluster") or {}).get("instance") is None:
            raise TrnprofError(
                f"run was recorded on {instance}, not a Trn1 instance ({', '.join(INSTANCES)}): "
                "whatif models Trn1 jobs; to ask what the job would do on Trn1, describe it "
                "with --config (cluster.instance, model, parallel, batch)"
            )
        return {}
    nodes = job.get("nodes")
    return {"cluster": {"instance": instance, **({"nodes": int(nodes)} if isinstance(nodes, int) else {})}}
