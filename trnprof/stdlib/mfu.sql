-- @requires ops, steady_state

-- Model FLOPs utilisation of each steady-state step (warm-up steps: see step_phases): the FLOPs
-- the step needs over what the devices could do in the step time at peak. FLOPs are the job
-- metadata's model_flops_per_step, else the sum of the step's compute events' FLOPs. The peak is
-- the job metadata's peak_flops_per_s, else the dense BF16 tensor-engine peak (`hardware`) of
-- every rank's instance type (unknown when some rank's instance type is not a Trainium type).
-- @column step          training step number
-- @column dur           step time (slowest rank), ns
-- @column flops         FLOPs of the step; null when unknown
-- @column flops_source  `job` or `events`: where the FLOPs come from
-- @column peak_flops    peak FLOP/s of all the job's devices; null when unknown
-- @column mfu           flops / (dur x peak_flops); null when either is unknown
CREATE VIEW step_mfu AS
WITH rank_peaks AS (
    SELECT CASE WHEN COUNT(*) > 0 AND COUNT(h.instance_type) = COUNT(*)
                THEN SUM(h.tensor_bf16_flops) END AS flops_per_s
    FROM ranks AS r
    LEFT JOIN hardware AS h ON h.instance_type = r.instance_type
),
peak AS (
    SELECT COALESCE(MAX(j.peak_flops_per_s), MAX(p.flops_per_s)) AS flops_per_s,
           MAX(j.model_flops_per_step) AS model_flops
    FROM rank_peaks AS p LEFT JOIN run_job AS j ON TRUE
),
event_flops AS (
    SELECT step, SUM(flops) AS flops FROM event_stats
    WHERE kind = 'compute' AND step IS NOT NULL
    GROUP BY step
)
SELECT s.step, s.dur, COALESCE(p.model_flops, f.flops) AS flops,
       CASE WHEN p.model_flops IS NOT NULL THEN 'job' WHEN f.flops IS NOT NULL THEN 'events' END AS flops_source,
       p.flops_per_s AS peak_flops,
       COALESCE(p.model_flops, f.flops) / (s.dur / 1e9 * p.flops_per_s) AS mfu
FROM step_phases AS s
CROSS JOIN peak AS p
LEFT JOIN event_flops AS f ON f.step = s.step
WHERE NOT s.warmup;

-- The run's model FLOPs utilisation over its steady-state steps, one row: all their FLOPs over
-- what the devices could do in all their time at peak (steps with unknown FLOPs left out). The
-- MFU the compute.low_mfu rule states. `typical_mfu` and `effective_mfu` put the mean FLOPs per
-- step over the two views of the step time (step_time_views): the typical (median) step and the
-- effective step (wall time per step, recurring outliers included); `trnprof info` shows both.
-- @column steps          steady steps with known FLOPs and peak
-- @column flops          FLOPs of those steps
-- @column seconds        time of those steps, s
-- @column peak_flops     peak FLOP/s of all the job's devices; null when unknown
-- @column mfu            flops / (seconds x peak_flops); null without such steps
-- @column lowest_mfu     lowest MFU of one of those steps
-- @column typical_mfu    mean FLOPs per step / (typical step x peak_flops)
-- @column effective_mfu  mean FLOPs per step / (effective step x peak_flops)
CREATE VIEW mfu AS
SELECT COUNT(*) AS steps, SUM(m.flops) AS flops, SUM(m.dur) / 1e9 AS seconds, MAX(m.peak_flops) AS peak_flops,
       SUM(m.flops) / (SUM(m.dur) / 1e9 * MAX(m.peak_flops)) AS mfu, MIN(m.mfu) AS lowest_mfu,
       AVG(m.flops) / (MAX(v.typical) / 1e9 * MAX(m.peak_flops)) AS typical_mfu,
       AVG(m.flops) / (MAX(v.effective) / 1e9 * MAX(m.peak_flops)) AS effective_mfu
FROM step_mfu AS m CROSS JOIN step_time_views AS v
WHERE m.mfu IS NOT NULL;
