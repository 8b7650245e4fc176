"""What-if from a measured run: fit the Trn1 execution model's free parameters to the run's
steady-state steps, then predict the step of the same job changed (docs/whatif.md).

    from trnprof.api import whatif
    document = whatif("runs/a", ["tp=16"])      # or {"parallel.tp": 16}
    document["predicted"]["step_time_s"], document["predicted"]["band"]

Layout: `describe` the job (manifest, --config, --set), `measure` the run's steady state,
`model` the execution model's side, `fit` the least squares, `document` assembles the answer,
`render` writes text, `replay` prices a change or a fix by replaying the run's dependency graph
(any run), `projections` prices the findings' fixes, `validate` the ground-truth check.

The package holds no code of its own: `trnprof.api.whatif` or `document.whatif`.
"""
