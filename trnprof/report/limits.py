"""Size budgets of the report: past these, series are aggregated or sampled and the page says so.

Chosen so a 1,024-rank run stays well under the report's 10 MB page budget (docs/performance.md)
while every chart still resolves single ranks of a typical job (<= 256 ranks per heatmap row
bin of 1) and the browser draws each chart in well under a second.
"""

# step breakdown: bars per chart; more ranks are averaged in groups of consecutive ranks
MAX_RANK_BARS = 1024
# straggler heatmap: cells per axis; more ranks / steps are grouped, the worst value shown
MAX_HEATMAP_RANKS = 256
MAX_HEATMAP_STEPS = 100
# timeline: ranks drawn, events drawn in total (the longest are kept), ops listed under it
TIMELINE_RANKS = 4
MAX_TIMELINE_EVENTS = 4000
OPS_LISTED = 12
# collectives scatter: points (a deterministic uniform sample beyond)
MAX_COLLECTIVE_POINTS = 5000
# memory and queue-depth curves: time bins (one sample per bin; memory keeps each bin's peak)
MAX_TIME_POINTS = 1500
# input wait per step: points (steps grouped beyond)
MAX_STEP_POINTS = 2000
# header: findings listed with their impact
TOP_FINDINGS = 3
