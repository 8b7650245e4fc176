"""Run the Trn1 execution model: predictions only (`summary`) or a whole canonical run."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

import msgspec
import numpy as np

from trnprof.manifest import new_manifest
from trnprof.model import architecture
from trnprof.model.config import Config, load_config, to_dict
from trnprof.model.faults import effects, loader_acts
from trnprof.model.job import Job, resolve
from trnprof.model.layout import Layout
from trnprof.model.memory import capacity, residency
from trnprof.model.noise import draw
from trnprof.model.params import Params, job_params
from trnprof.model.plan import build_plan
from trnprof.model.precision import manifest_precision
from trnprof.model.predict import peak_flops, predictions
from trnprof.model.timeline import simulate_timeline
from trnprof.runstore import write_run

from .counters import build_counters
from .device_profile import SCHEMA_VERSION, DeviceProfile, profiled_ranks, profiled_steps, rows_per_op
from .emit import Vocabulary
from .events import StageTemplate, build_events

COLLECTOR = "trnprof.trn1"
EVENTS_PER_BATCH = 2_000_000  # bounds memory: ranks are generated in batches of about this many events


def as_config(config) -> Config:
    """A Config from a Config, a mapping or a YAML path."""
    if isinstance(config, Config):
        return config
    return load_config(path=config)


def demo_config() -> Config:
    """The tiny job with a visible bottleneck (a slow data loader) that `trnprof demo` runs."""
    return load_config(preset="tiny-slow-loader")


def summary(config, *, params: Params | None = None) -> dict:
    """The model's predictions for `config` without emitting a trace: step_time_s, throughput
    {value, unit}, mfu, hbm_peak_bytes, hbm_capacity_bytes, fits, and `calibration`: the free
    parameters used (`params`, else the shipped ones, with the config's `calibration:` over them)."""
    job = resolve(as_config(config))
    params = job_params(job.config.calibration, params)
    fx = effects(job.config.faults, job.config.comm.overlap_dp)
    return predictions(job, build_plan(job, params, Layout(job), fx.slow_nodes, fx.host_factor), fx)


def job_metadata(job: Job) -> dict:
    """The manifest's `job`: what `trnprof info` and the rules read."""
    cfg = job.config
    return {
        "samples_per_step": job.global_batch,
        "throughput_unit": job.arch.unit,
        "model_flops_per_step": architecture.model_flops_per_step(job),
        "peak_flops_per_s": peak_flops(job),
        "model": job.arch.name,
        "model_kind": job.arch.kind,
        "parameters": architecture.total_params(job.arch),
        "seq_len": job.arch.seq_len,
        "instance_type": job.instance.name,
        "nodes": job.nodes,
        "parallelism": {
            "tp": job.tp,
            "pp": job.pp,
            "dp": job.dp,
            "sequence_parallel": job.sp,
            "zero1": job.zero1,
            "microbatches": job.microbatches,
        },
        "global_batch": job.global_batch,
        "micro_batch": job.micro,
        "precision": job.dtypes.matmul,  # the dtype the compiler runs matmuls in
        "precision_settings": manifest_precision(cfg.precision),
        "neuron_sdk": cfg.precision.neuron_sdk,
        "framework": cfg.precision.framework,
        "activation_checkpointing": job.checkpointing,
    }


def _batches(job: Job, events_per_rank: int):
    size = int(max(1, min(job.cores_per_node, EVENTS_PER_BATCH // max(events_per_rank, 1))))
    per_stage = job.dp * job.tp
    for stage in range(job.pp):
        first = stage * per_stage
        for lo in range(first, first + per_stage, size):
            yield np.arange(lo, min(lo + size, first + per_stage))


def _oom(job: Job, tl, fx) -> dict:
    """Per stage: (first step over capacity, peak sample times (S, dp), peak bytes) or None."""
    out = {}
    for s in range(job.pp):
        peaks = residency(job, s).peak + fx.leak_bytes_per_step * np.arange(tl.steps)
        over = np.flatnonzero(peaks > capacity(job.instance))
        if len(over):
            first_b = next(k for k, (typ, _) in enumerate(tl.seqs[s]) if typ == "B")
            out[s] = (int(over[0]), tl.stages[s].body[:, first_b, :], float(peaks[over[0]]))
    return out


def _write_batch(run, events, counts, counters) -> None:
    """One batch's events, a rank's slice per call (each lands in its own partition), and counters."""
    offset = 0
    for count in counts:
        run.write_events(events.slice(offset, int(count)))
        offset += int(count)
    run.write_counters(counters)


def _check_loader_acts(job: Job, plan, tl, f, costs: dict, fx) -> None:
    """slow_loader must change the run: the same job with the loader at its normal speed is
    simulated and the step ends compared (faults.loader_acts)."""
    if fx.loader_factor == 1.0 or not costs:
        return
    clean_costs = {s: c / fx.loader_factor for s, c in costs.items()}
    clean = simulate_timeline(plan, tl.steps, f, clean_costs, tl.compile_steps, fx.overlap_dp)
    ends = lambda timeline: np.stack([st.step_end.max(axis=(1, 2)) for st in timeline.stages], axis=1)  # noqa: E731
    loader_acts(
        ends(tl),
        ends(clean),
        fx.loader_factor,
        workers=job.config.input.workers,
        batch_s=plan.batch_cost,
        microbatches=job.microbatches,
    )


def simulate(
    config,
    out: str | Path,
    *,
    seed: int | None = None,
    steps: int | None = None,
    overwrite: bool = False,
    params: Params | None = None,
    progress: Callable[[int], None] | None = None,
    device_profile: bool = False,
    device_ranks: list[int] | None = None,
) -> Path:
    """Simulate `config` (Config, mapping or YAML path) and write the run to `out`.
    `progress(n)` is called after each batch of n ranks is written. `device_profile` adds the
    Neuron Explorer device profile of `device_ranks` (default rank 0 and the last) over the last
    steady steps (device_profile.py). Returns the run's path."""
    cfg = as_config(config)
    run_cfg = msgspec.structs.replace(cfg.run, **{k: v for k, v in (("seed", seed), ("steps", steps)) if v is not None})
    cfg = msgspec.structs.replace(cfg, run=run_cfg)
    cfg = load_config(path=to_dict(cfg))  # re-validate the replaced values
    job = resolve(cfg)
    params = job_params(cfg.calibration, params)
    fx = effects(cfg.faults, cfg.comm.overlap_dp)
    layout = Layout(job)
    plan = build_plan(job, params, layout, fx.slow_nodes, fx.host_factor)
    preds = predictions(job, plan, fx)
    S = cfg.run.steps
    data_stages = [s for s, st in enumerate(plan.stages) if st.consumes_data]
    f, costs = draw(job, S, cfg.run.seed, cfg.run.noise, fx, data_stages, plan.batch_cost)
    tl = simulate_timeline(plan, S, f, costs, fx.compile_steps(S), fx.overlap_dp)
    _check_loader_acts(job, plan, tl, f, costs, fx)
    oom = _oom(job, tl, fx)
    manifest = new_manifest(
        COLLECTOR,
        job=job_metadata(job),
        world_size=job.world,
        config=to_dict(cfg),
        predictions=preds,
        fits=preds["fits"],
        execution_model={"compile_s": plan.compile_s},
    )
    templates = {s: StageTemplate(plan, s, tl.seqs[s]) for s in range(job.pp)}
    res = {s: residency(job, s) for s in range(job.pp)}
    vocab = Vocabulary()
    per_rank = S * max(len(t.block) for t in templates.values())
    device = _device_plan(job, plan, fx, tl, device_ranks, per_rank // S) if device_profile else None
    if device is not None:
        manifest["execution_model"]["device_profile"] = device[1]
    # Writing (Parquet encoding, which releases the GIL) overlaps building the next batch.
    with write_run(out, manifest, overwrite=overwrite) as run, ThreadPoolExecutor(max_workers=1) as writer:
        pending = None
        for ranks in _batches(job, per_rank):
            stage = int(layout.pp_rank[ranks[0]])
            events, counts = build_events(tl, layout, ranks, templates[stage], vocab, oom).table()
            counters = build_counters(tl, layout, ranks, res[stage], fx.leak_bytes_per_step)
            if pending is not None:
                pending.result()
            pending = writer.submit(_write_batch, run, events, counts, counters)
            if progress:
                progress(len(ranks))
        if pending is not None:
            pending.result()
        run.write_ranks(layout.ranks_table())
        if device is not None:
            _write_device_profile(run, device, tl, layout, templates, vocab, oom)
    return Path(out)


def _device_plan(job: Job, plan, fx, tl, requested, ops_per_step: int) -> tuple:
    """(the profile builder, what the manifest states of it)."""
    ranks = profiled_ranks(job, requested)
    steps = profiled_steps(tl.compile_steps)
    builder = DeviceProfile(job, plan, fx, rows_per_op(ops_per_step))
    return builder, {
        "ranks": ranks,
        "steps": steps,
        "schema_version": SCHEMA_VERSION,
        "instructions_per_op_at_most": builder.rows_per_op,
        "note": "a bounded sample: these ranks and steps only; an instruction row is a group "
        "of consecutive matmul tiles",
    }


def _write_device_profile(run, device, tl, layout: Layout, templates, vocab, oom) -> None:
    builder, stated = device
    for rank in stated["ranks"]:
        stage = int(layout.pp_rank[rank])
        events, _ = build_events(tl, layout, np.array([rank]), templates[stage], vocab, oom).table()
        builder.add(events, stated["steps"])
    for name, table in builder.tables_out(stated["ranks"]).items():
        run.write_table(f"neuron_explorer/{name}", table)
