"""The Trn1/Trn2 execution model as a command (`trnprof simulate`): its presets, its predictions
for a job, and a simulated run written to a folder."""

from __future__ import annotations

import contextlib
from pathlib import Path

from ..errors import TrnprofError


def _no_bar(length: int):
    return contextlib.nullcontext()


def _layout(name: str) -> dict:
    """A preset's default layout: nodes, instance, tp, pp, dp and ranks."""
    from ..model.config import load_config
    from ..model.job import resolve

    job = resolve(load_config(preset=name))
    return {
        "nodes": job.nodes,
        "instance": job.config.cluster.instance,
        "tp": job.tp,
        "pp": job.pp,
        "dp": job.dp,
        "ranks": job.world,
    }


def presets() -> dict:
    """The presets (`simulate --list-presets`): "job" (full configs) and "model" (a model on its
    default job) names, each preset's default layout under "layouts", a job preset's calibration
    row under "calibration" and a model preset's architecture (kind, layers, hidden) under
    "architectures"."""
    from ..model.config import job_presets, list_presets, model_presets

    listed = list_presets()
    listed["layouts"] = {name: _layout(name) for name in listed["job"] + listed["model"]}
    listed["calibration"] = {name: job_presets()[name].get("calibration") for name in listed["job"]}
    listed["architectures"] = {
        name: {key: model_presets()[name]["model"][key] for key in ("kind", "layers", "hidden")}
        for name in listed["model"]
    }
    return listed


def _config(config, preset, overrides, seed=None, steps=None):
    from ..model.config import load_config

    if config is None and preset is None:
        raise TrnprofError("give a CONFIG.yaml or --preset NAME (see trnprof simulate --list-presets)")
    extra = [f"run.seed={seed}"] * (seed is not None) + [f"run.steps={steps}"] * (steps is not None)
    return load_config(preset=preset, path=config, overrides=[*overrides, *extra])


def predict(
    config: str | Path | None = None,
    *,
    preset: str | None = None,
    overrides=(),
    seed: int | None = None,
    steps: int | None = None,
) -> dict:
    """The model's predictions for a job (`simulate --summary-only`), no trace written:
    {"prediction": step time, throughput, MFU, HBM peak, ... and the throughput "band",
    "job": the job as a run's manifest describes it}."""
    from ..collectors.trn1.simulate import job_metadata, summary
    from ..collectors.trn1.uncertainty import band
    from ..model.job import resolve

    cfg = _config(config, preset, overrides, seed, steps)
    prediction = summary(cfg)
    prediction["band"] = band(cfg, prediction)
    return {"prediction": prediction, "job": job_metadata(resolve(cfg))}


def simulate_job(
    config: str | Path | None = None,
    out: str | Path | None = None,
    *,
    preset: str | None = None,
    overrides=(),
    seed: int | None = None,
    steps: int | None = None,
    force: bool = False,
    device_profile: bool = False,
    device_ranks: list[int] | None = None,
    bar=_no_bar,
) -> dict:
    """Simulate a job into the run folder `out` (`trnprof simulate -o`): {"run": its path,
    "manifest": its manifest}. bar(ranks): a context manager yielding a progress bar (its
    `update(ranks)` called as ranks are written) or None for none."""
    from ..collectors.trn1.simulate import simulate
    from ..manifest import read_manifest
    from ..model.job import resolve

    cfg = _config(config, preset, overrides, seed, steps)
    if not out:
        raise TrnprofError("give the run folder to write with -o/--output (or --summary-only for predictions)")
    device = dict(device_profile=device_profile or bool(device_ranks), device_ranks=device_ranks)
    with bar(resolve(cfg).world) as shown:
        path = simulate(cfg, out, overwrite=force, progress=shown.update if shown is not None else None, **device)
    return {"run": path, "manifest": read_manifest(path)}
