"""The step breakdown's exclusive categories: the columns of the stdlib view `step_breakdown`
(trnprof/stdlib/step_breakdown.sql), in its order, which partition every rank's step, and the label
each one has in text, Markdown and the report. Rules draw their time at stake from one of them
(`impact.draws_from`), diff compares them, the report stacks them bottom first.
"""

CATEGORIES = ("compute", "exposed_comm", "input_wait", "host_sync", "host", "transfer_exposed", "compile", "idle")

LABELS = {
    "compute": "compute",
    "exposed_comm": "exposed communication",
    "input_wait": "input wait",
    "host_sync": "host waits for device",
    "host": "host (device idle)",
    "transfer_exposed": "exposed transfer",
    "compile": "compile",
    "idle": "idle",
}
