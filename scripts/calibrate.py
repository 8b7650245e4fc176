"""Fit the Trn1 execution model on its calibration rows and show how well it does.

The rows are the in-repository copy collectors/trn1/data/calibration.csv (sources and licence in
data/README.md).

    python scripts/calibrate.py            # fit, each row's error, leave-one-out, other presets
    python scripts/calibrate.py --write    # also store the fitted values in params.yaml
"""

from __future__ import annotations

import argparse
import re
from importlib import resources
from pathlib import Path

from trnprof.collectors.trn1 import load_config, summary
from trnprof.collectors.trn1.calibration import (calibration_csv, calibration_rows, fit, leave_one_out,
                                                 predicted_throughput)
from trnprof.model.config import list_presets
from trnprof.model.job import resolve
from trnprof.model.params import BOUNDS, FITTED, NAMES, default_params

GIB = 1 << 30


def write_params(values: dict) -> Path:
    path = Path(str(resources.files("trnprof.model") / "params.yaml"))
    text = path.read_text(encoding="utf-8")
    for name, value in values.items():
        text = re.sub(rf"^{name}: *[0-9.eE+-]+", f"{name}: {value:.4g}", text, flags=re.M)
    path.write_text(text, encoding="utf-8")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--csv", type=Path, default=calibration_csv())
    parser.add_argument("--write", action="store_true", help="store the fitted values in params.yaml")
    args = parser.parse_args()

    rows = calibration_rows(args.csv)
    shipped = default_params()
    fitted, errors = fit(rows)
    print("free parameters (fitted ones start from the shipped params.yaml)")
    for name in NAMES:
        lo, hi = BOUNDS[name]
        how = "fitted" if name in FITTED else "fixed "
        print(f"  {name:<22} {getattr(fitted, name):10.4f}   {how} range [{lo:g}, {hi:g}]"
              f"   (shipped {getattr(shipped, name):.4f})")
    print("\ncalibration rows: published vs predicted throughput")
    print(f"  {'row':<22} {'published':>10} {'predicted':>10} {'error':>8}")
    for (preset, published, row), err in zip(rows, errors):
        predicted = predicted_throughput(resolve(load_config(preset=preset)), fitted)
        print(f"  {row['model']:<22} {published:10.2f} {predicted:10.2f} {100 * (predicted / published - 1):+7.2f}%"
              f"   {row['unit']}, {row['nodes']} x {row['instance']}, tp {row['tp']} pp {row['pp']} ({preset})")
    worst = max(abs(e) for e in errors)
    print(f"  worst error {100 * worst:.2f}% (target: every row within 10%)")
    print("\nleave-one-out: fit on the other rows, predict the held-out one")
    for preset, params, error in leave_one_out(rows):
        values = ", ".join(f"{n} {getattr(params, n):.4g}" for n in FITTED)
        print(f"  {preset:<22} {100 * error:+7.2f}%   ({values})")

    print("\npredictions for the other presets (model presets on their default jobs; not fitted)")
    print(f"  {'preset':<14} {'nodes':>5} {'tp':>3} {'pp':>3} {'step':>9} {'throughput':>16} {'MFU':>6} "
          f"{'idle':>6} {'HBM peak':>9}")
    for name in list_presets()["model"]:
        cfg = load_config(preset=name)
        job = resolve(cfg)
        pred = summary(cfg, params=fitted)
        print(f"  {name:<14} {job.nodes:5d} {job.tp:3d} {job.pp:3d} {pred['step_time_s']:8.3f}s "
              f"{pred['throughput']['value']:10.1f} {pred['throughput']['unit']:<5} {pred['mfu']:6.1%} "
              f"{pred['device_idle_share']:6.1%} "
              f"{pred['hbm_peak_bytes'] / GIB:7.2f}Gi{'' if pred['fits'] else ' (does not fit)'}")
    if args.write:
        print(f"\nwrote {write_params({n: getattr(fitted, n) for n in FITTED})}")


if __name__ == "__main__":
    main()
