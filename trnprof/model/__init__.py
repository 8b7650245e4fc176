"""The Trn1 execution model, pure: the job description (`config`, `job`), the hardware it runs on
(`hardware`), the physics of compute, memory, collectives and input (`compute`, `matmul`,
`memory`, `collectives`, `inputs`), the per-step plan and timeline (`plan`, `timeline`) and the
prediction (`predict`). No run is read or written here: the simulator collector
(`trnprof.collectors.trn1`) turns a prediction into events, and `trnprof.whatif` fits it to a
measured run. See docs/execution-model.md.
"""
