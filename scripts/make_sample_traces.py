"""Regenerate the runs in sample_traces/ (deterministic: same code, same rows)."""

from pathlib import Path

from trnprof.collectors.synthetic import synthetic_run
from trnprof.collectors.trn1 import demo_config, simulate

HERE = Path(__file__).resolve().parent.parent / "sample_traces"


def main() -> None:
    path = synthetic_run(
        HERE / "synthetic-8rank",
        ranks=8,
        steps=5,
        ops_per_step=40,
        slow_rank=5,
        input_wait_ns=600_000,
        seed=7,
        overwrite=True,
    )
    print(f"wrote {path}")
    # the Trn1 execution model's demo job: the tiny model starved by a slow data loader
    path = simulate(demo_config(), HERE / "tiny-slow-loader", overwrite=True)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
