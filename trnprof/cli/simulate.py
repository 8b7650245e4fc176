"""`trnprof simulate`: run the Trn1 execution model into a run, or print its predictions."""

from __future__ import annotations

import math

import click

from ..errors import TrnprofError
from ..jsonplain import to_json
from ..textfmt import duration
from ..units import GIB
from . import _options as options
from ._output import progress_bar

PROGRESS_MIN_RANKS = 64  # show a progress bar from this many ranks on


def _count(n: float) -> str:
    return f"{n / 1e9:.2f} B" if n >= 1e9 else f"{n / 1e6:.1f} M"


def _summary_text(pred: dict, job: dict) -> str:
    par = job["parallelism"]
    fits = "fits" if pred["fits"] else "DOES NOT FIT"
    return "\n".join(
        [
            f"model        {job['model']} ({_count(job['parameters'])} parameters)",
            f"cluster      {job['nodes']} x {job['instance_type']}, tp {par['tp']} pp {par['pp']} dp {par['dp']}, "
            f"{par['microbatches']} microbatch(es) per step",
            f"step time    {duration(pred['step_time_s'])}",
            f"throughput   {pred['throughput']['value']:,.1f} {pred['throughput']['unit']}",
            f"MFU          {pred['mfu']:.1%}",
            f"device idle  {pred['device_idle_share']:.1%} of the step (waiting for the host, input or its copy)",
            f"HBM peak     {pred['hbm_peak_bytes'] / GIB:.2f} GiB of {pred['hbm_capacity_bytes'] / GIB:.0f} GiB "
            f"per NeuronCore ({fits})",
        ]
    )


def _band_text(band: dict) -> str:
    lines = [
        f"band         {band['low']:,.1f} to {band['high']:,.1f} {band['unit']} "
        f"(a factor {math.exp(band['log_half_width']):.2f} either way: leave-one-out residuals and the "
        f"spread of the free parameters)"
    ]
    if band["outside_evidence"]:
        lines.append("evidence     OUTSIDE the calibration evidence: " + "; ".join(band["outside_evidence"]))
    else:
        lines.append("evidence     inside the calibration evidence (model size, layout, precision, kind)")
    return "\n".join(lines)


def _layout_text(layout: dict) -> str:
    return (
        f"{layout['nodes']} x {layout['instance']}, tp {layout['tp']}, pp {layout['pp']}, "
        f"dp {layout['dp']}: {layout['ranks']} ranks"
    )


def _presets_text(presets: dict) -> str:
    layouts = presets["layouts"]
    lines = ["job presets (full configs):"]
    for name in presets["job"]:
        cal = presets["calibration"][name]
        note = f"; calibration row: {cal['throughput']} {cal['unit']}" if cal else ""
        lines.append(f"  {name:<24} {_layout_text(layouts[name])}{note}")
    lines.append("model presets (the model on its default job):")
    for name in presets["model"]:
        arch = presets["architectures"][name]
        lines.append(
            f"  {name:<14} {arch['kind']}, {arch['layers']} layers, hidden {arch['hidden']}; "
            f"{_layout_text(layouts[name])}"
        )
    return "\n".join(lines)


def _ranks(text: str | None) -> list[int] | None:
    """--device-ranks 0,5 -> [0, 5]."""
    if not text:
        return None
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise TrnprofError(f"--device-ranks {text!r}: give rank numbers separated by commas, e.g. 0,5") from None


class _SimulateCommand(click.Command):
    """`simulate` with the fault kinds listed at the end of its help (read when help is shown)."""

    def format_epilog(self, ctx, formatter):
        from ..api import CALIBRATION_PARAMS, FAULT_KINDS

        with formatter.section(
            "Faults (inject with --set 'faults=[...]'; a fault that cannot act in the job is an error)"
        ):
            formatter.write_dl(
                [
                    (kind, f"keys: {keys}. {what}. Example: --set '{example}'")
                    for kind, (keys, what, example) in FAULT_KINDS.items()
                ]
            )
        with formatter.section("Calibration (free parameters of the model; --set calibration.NAME=VALUE)"):
            formatter.write_dl(list(CALIBRATION_PARAMS.items()))


@click.command("simulate", cls=_SimulateCommand)
@click.argument("config", required=False, type=click.Path(dir_okay=False, path_type=str))
@click.option("--preset", help="Job preset (a full config) or model preset (that model on its default job).")
@options.output("Run folder to write.")
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override any config key, e.g. --set cluster.nodes=32 --set model.seq_len=2048.",
)
@click.option("--seed", type=int, help="Noise seed (run.seed).")
@click.option("--steps", type=int, help="Training steps to simulate (run.steps).")
@click.option("--summary-only", is_flag=True, help="Print the model's predictions; emit no trace.")
@options.output_format("text", "json")
@click.option("--list-presets", is_flag=True, help="List the job and model presets.")
@options.force("an existing run at --output")
@click.option(
    "--device-profile",
    is_flag=True,
    help="Also write the Neuron Explorer device profile (engines, DMA, collectives) of a few ranks "
    'over the last steady steps (docs/execution-model.md, "Device profile").',
)
@click.option(
    "--device-ranks", metavar="LIST", help="Ranks the device profile covers, e.g. 0,5 (default: 0 and the last)."
)
def command(
    config, preset, out, overrides, seed, steps, summary_only, fmt, list_presets, force, device_profile, device_ranks
):
    """Simulate a training job on Trn1/Trn1n or Trn2 with the built-in execution model.

    CONFIG is a YAML file (optional with --preset). Examples:

      trnprof simulate --preset llama2-7b --set cluster.nodes=32 -o runs/llama

      trnprof simulate --preset gpt3-23b-32node --summary-only --format json

      trnprof simulate --preset llama2-7b --set cluster.instance=trn2.48xlarge --summary-only

      trnprof simulate --preset tiny --set 'faults=[{kind: straggler, rank: 1}]' -o runs/straggler

    --summary-only prints the predictions (step time, throughput, MFU, HBM peak, the share of
    the step the device idles), the throughput band (from the leave-one-out residuals and the
    spread of the free parameters; wider for a job outside the calibration evidence, which it
    names: every Trn2 job, as no Trn2 training throughput is published) and, in JSON, the free
    parameters used under "calibration" and the band under "band".
    """
    from ..api import predict, presets, simulate_job

    if list_presets:
        listed = presets()
        click.echo(
            to_json({key: listed[key] for key in ("job", "model", "layouts")})
            if fmt == "json"
            else _presets_text(listed)
        )
        return
    if summary_only:
        predicted = predict(config, preset=preset, overrides=overrides, seed=seed, steps=steps)
        pred = predicted["prediction"]
        text = _summary_text(pred, predicted["job"]) + "\n" + _band_text(pred["band"])
        click.echo(to_json(pred) if fmt == "json" else text)
        return
    made = simulate_job(
        config,
        out,
        preset=preset,
        overrides=overrides,
        seed=seed,
        steps=steps,
        force=force,
        device_profile=device_profile,
        device_ranks=_ranks(device_ranks),
        bar=progress_bar("simulating ranks", PROGRESS_MIN_RANKS),
    )
    path, manifest = made["run"], made["manifest"]
    pred = manifest["predictions"]
    if fmt == "json":
        click.echo(to_json({"run": str(path), "counts": manifest["counts"], "predictions": pred}))
    else:
        click.echo(
            f"wrote {path}: {manifest['counts']['events']:,} events, "
            f"{manifest['counts']['counters']:,} counter samples, {manifest['world_size']} ranks"
        )
        click.echo(_summary_text(pred, manifest["job"]))
    if not pred["fits"]:
        click.echo(
            f"warning: the job does not fit in HBM (peak {pred['hbm_peak_bytes'] / GIB:.2f} GiB > "
            f"{pred['hbm_capacity_bytes'] / GIB:.0f} GiB per NeuronCore); the run holds oom_risk events",
            err=True,
        )
