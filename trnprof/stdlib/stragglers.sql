-- Per rank and steady-state step (see step_phases): how far the rank's step time and compute
-- time sit from its peers', the ranks of the same pipeline stage in the same step (a stage does
-- different work from the others). The peers' median is the lower median: for a rank above it,
-- the median of the other ranks (exactly so for an even count), so a straggler among two ranks is
-- compared with its peer, not with itself. The scale.straggler rule and the report's straggler
-- heatmaps read this view.
-- @column rank            global rank
-- @column step            training step number
-- @column stage           pipeline stage of the rank (pp_rank; 0 when unknown)
-- @column peers           ranks of the stage that recorded the step, the rank included
-- @column dur             the rank's step duration, ns
-- @column compute         the rank's compute time in the step, ns
-- @column median_dur      lower median of the stage's step durations in the step, ns
-- @column median_compute  lower median of the stage's compute times in the step, ns
-- @column step_dev        (dur - median_dur) / median_dur: +0.1 is 10 % slower; null when the median is 0
-- @column compute_dev     (compute - median_compute) / median_compute; null when the median is 0
CREATE VIEW rank_deviation AS
WITH per AS (
    SELECT b.rank, b.step, b.dur, b.compute, COALESCE(r.pp_rank, 0) AS stage
    FROM steady_breakdown AS b LEFT JOIN ranks AS r ON r.rank = b.rank
),
medians AS (
    SELECT step, stage, COUNT(*) AS peers,
           PERCENTILE_DISC(0.5) WITHIN GROUP (ORDER BY dur) AS median_dur,
           PERCENTILE_DISC(0.5) WITHIN GROUP (ORDER BY compute) AS median_compute
    FROM per GROUP BY step, stage
)
SELECT p.rank, p.step, p.stage, m.peers, p.dur, p.compute, m.median_dur, m.median_compute,
       CAST(p.dur - m.median_dur AS DOUBLE) / NULLIF(m.median_dur, 0) AS step_dev,
       CAST(p.compute - m.median_compute AS DOUBLE) / NULLIF(m.median_compute, 0) AS compute_dev
FROM per AS p
JOIN medians AS m ON m.step = p.step AND m.stage = p.stage;
