-- @requires ops, step_breakdown, steps

-- The one definition of warm-up and steady state: one row per step, saying whether it is a
-- warm-up step. Warm-up steps are the leading steps in which some rank compiled, at most the
-- first two (XLA compiles the training graph on first sight and the graph with optimizer state
-- one step later) and never the last step; every other step is steady state. `trnprof info`,
-- the report, the MFU views, the rule engine's impact and every rule use it: shares, medians and
-- percentiles are taken over the steady steps, and warm-up steps are shown apart.
-- @column step      training step number
-- @column dur       step time (slowest rank), ns
-- @column compiles  compile events in the step, all ranks
-- @column position  1 for the first step of the run, 2 for the next, ...
-- @column warmup    true for a warm-up step
CREATE VIEW step_phases AS
WITH compiles AS (
    SELECT step, SUM(n) AS n FROM event_stats WHERE kind = 'compile' AND step IS NOT NULL GROUP BY step
),
ordered AS (
    SELECT t.step, t.dur, COALESCE(c.n, 0) AS compiles,
           ROW_NUMBER() OVER (ORDER BY t.step) AS position, COUNT(*) OVER () AS steps
    FROM step_times AS t LEFT JOIN compiles AS c ON c.step = t.step
),
prefix AS (
    SELECT *, MIN(CASE WHEN compiles > 0 THEN 1 ELSE 0 END)
                  OVER (ORDER BY position ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS all_compiled
    FROM ordered
)
SELECT step, dur, compiles, position, all_compiled = 1 AND position <= 2 AND position < steps AS warmup
FROM prefix;

-- step_breakdown without the warm-up steps (see step_phases): the steady state that rules judge
-- and the report draws.
-- @column rank               global rank
-- @column step               training step number
-- @column dur                step duration, ns
-- @column compute            time any compute op ran, ns
-- @column collective         time any collective or p2p ran, ns
-- @column exposed_comm       collective time not overlapped by compute, ns
-- @column overlapped_comm    collective time hidden under compute, ns
-- @column input_wait         time waiting for input with no device work running, ns
-- @column host               host work while no device work, input wait or host sync ran, ns
-- @column transfer_exposed   copy/memset/DMA time with no compute or communication running, ns
-- @column compile            compile time with none of the above running, ns
-- @column idle               time with nothing known running, ns
-- @column overlap_ratio      overlapped_comm / collective; null without communication
-- @column host_sync          host blocked on the device while no device work or input wait ran, ns
CREATE VIEW steady_breakdown AS
SELECT b.rank, b.step, b.dur, b.compute, b.collective, b.exposed_comm, b.overlapped_comm, b.input_wait,
       b.host, b.transfer_exposed, b.compile, b.idle, b.overlap_ratio, b.host_sync
FROM step_breakdown AS b
JOIN step_phases AS p ON p.step = b.step
WHERE NOT p.warmup;

-- Each steady step's slot of wall time: from its start (earliest rank) to the next steady step's
-- start, the last one to its end (latest rank). A slot holds the step and whatever ran between it
-- and the next (a checkpoint save, an evaluation, a pause), so the slots of a run sum to its wall
-- time after warm-up.
-- @column step   training step number
-- @column ts     step start, earliest rank, ns
-- @column dur    step time (slowest rank), ns
-- @column slot   wall time from this step's start to the next steady step's start (the last: to its end), ns
CREATE VIEW step_slots AS
WITH bounds AS (
    SELECT s.step, MIN(s.ts) AS ts, MAX(s.end_ts) AS end_ts
    FROM steps AS s JOIN step_phases AS p ON p.step = s.step
    WHERE NOT p.warmup
    GROUP BY s.step
)
SELECT b.step, b.ts, p.dur,
       COALESCE(LEAD(b.ts) OVER (ORDER BY b.ts, b.step), b.end_ts) - b.ts AS slot
FROM bounds AS b JOIN step_phases AS p ON p.step = b.step;

-- The two views of a run's step time, one row. The *typical* step is the median steady step:
-- robust to noise, the step to compare runs on. The *effective* step is the wall time per step
-- after warm-up (the sum of `step_slots` over the steady steps): what the job pays per step,
-- recurring outliers (a recompile every few steps, checkpoint saves, evaluation, allocator or GC
-- pauses, a slow shard) included, so samples per step / effective step is samples / wall time.
-- `trnprof info`, `diff`, the rule engine's shares and whatif's pricing read them from here.
-- @column steps      steady steps
-- @column typical    median steady step time (slowest rank), ns
-- @column p95        95th percentile of the steady step time, ns
-- @column mean       mean steady step time, ns
-- @column wall       wall time of the steady steps, first start to last end, ns
-- @column effective  wall / steps: wall time per step, ns
-- @column outlier_share  share of the wall time above the typical step (1 - typical / effective); null without steps
CREATE VIEW step_time_views AS
SELECT COUNT(*) AS steps,
       PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY dur) AS typical,
       PERCENTILE_CONT(0.95) WITHIN GROUP (ORDER BY dur) AS p95,
       AVG(dur) AS mean,
       SUM(slot) AS wall,
       SUM(slot) / NULLIF(COUNT(*), 0) AS effective,
       GREATEST(1 - PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY dur) / NULLIF(SUM(slot) / COUNT(*), 0), 0)
           AS outlier_share
FROM step_slots;

-- Steady steps whose wall slot (`step_slots`) is far longer than the typical step: more than
-- 10 % and more than 5 robust standard deviations (1.4826 x the median absolute deviation) above
-- it. `cause` says what made the step long: the step_breakdown category (or the time between
-- steps) whose excess over its typical value (median over steady steps of the slowest rank's) is
-- largest, on the rank where it is largest (a rank's wait in communication weighs half: it is
-- usually another rank's late work). `late rank` is one rank's compute (or host work) that grew
-- while the other ranks' did not, so they waited for it.
-- @column step      training step number
-- @column slot      the step's wall slot, ns
-- @column typical   the typical step (step_time_views), ns
-- @column excess    slot - typical, ns
-- @column cause     compile | checkpoint or other host | input | communication | compute | transfer | idle | between steps | late rank
-- @column category  the step_breakdown category (or `between`) with the largest excess
-- @column rank      the rank where that excess is largest; null for `between`
-- @column cause_ns  that excess, ns
CREATE VIEW outlier_steps AS
WITH views AS (SELECT typical FROM step_time_views),
spread AS (
    SELECT PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY ABS(s.dur - v.typical)) * 1.4826 AS sd
    FROM step_slots AS s CROSS JOIN views AS v
),
long AS (
    SELECT s.step, s.slot, s.dur, v.typical
    FROM step_slots AS s CROSS JOIN views AS v CROSS JOIN spread AS d
    WHERE s.slot > v.typical * 1.1 AND s.slot > v.typical + 5 * COALESCE(d.sd, 0)
),
worst_rank AS (  -- per steady step, each category's largest value over ranks
    SELECT step, MAX(compute) AS compute, MAX(exposed_comm) AS exposed_comm, MAX(input_wait) AS input_wait,
           MAX(host) AS host, MAX(transfer_exposed) AS transfer_exposed, MAX(compile) AS compile, MAX(idle) AS idle
    FROM steady_breakdown GROUP BY step
),
usual AS (
    SELECT PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY compute) AS compute,
           PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY exposed_comm) AS exposed_comm,
           PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY input_wait) AS input_wait,
           PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY host) AS host,
           PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY transfer_exposed) AS transfer_exposed,
           PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY compile) AS compile,
           PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY idle) AS idle
    FROM worst_rank
),
ranked AS (SELECT b.* FROM steady_breakdown AS b JOIN long AS l ON l.step = b.step),
excess AS (
    SELECT r.step, r.rank, 'compute' AS category, r.compute - u.compute AS excess FROM ranked AS r CROSS JOIN usual AS u
    UNION ALL SELECT r.step, r.rank, 'exposed_comm', r.exposed_comm - u.exposed_comm FROM ranked AS r CROSS JOIN usual AS u
    UNION ALL SELECT r.step, r.rank, 'input_wait', r.input_wait - u.input_wait FROM ranked AS r CROSS JOIN usual AS u
    UNION ALL SELECT r.step, r.rank, 'host', r.host - u.host FROM ranked AS r CROSS JOIN usual AS u
    UNION ALL SELECT r.step, r.rank, 'transfer_exposed', r.transfer_exposed - u.transfer_exposed
              FROM ranked AS r CROSS JOIN usual AS u
    UNION ALL SELECT r.step, r.rank, 'compile', r.compile - u.compile FROM ranked AS r CROSS JOIN usual AS u
    UNION ALL SELECT r.step, r.rank, 'idle', r.idle - u.idle FROM ranked AS r CROSS JOIN usual AS u
    UNION ALL SELECT step, CAST(NULL AS BIGINT), 'between', slot - dur FROM long
),
picked AS (
    -- waiting in a collective is usually the effect of another rank's late work: it counts half
    SELECT *, ROW_NUMBER() OVER (PARTITION BY step
                                 ORDER BY excess * CASE WHEN category = 'exposed_comm' THEN 0.5 ELSE 1 END DESC,
                                          rank) AS pick,
              MAX(excess) OVER (PARTITION BY step, category) AS top,
              COUNT(*) OVER (PARTITION BY step, category) AS ranks
    FROM excess
),
showing AS (  -- ranks showing at least half of the category's largest excess in the step
    SELECT step, category, COUNT(*) AS n FROM picked WHERE excess >= top / 2 GROUP BY step, category
)
SELECT l.step, l.slot, l.typical, l.slot - l.typical AS excess,
       CASE WHEN p.category IN ('compute', 'host') AND p.ranks > 1 AND w.n = 1 THEN 'late rank'
            WHEN p.category = 'compile' THEN 'compile'
            WHEN p.category = 'host' THEN 'checkpoint or other host'
            WHEN p.category = 'input_wait' THEN 'input'
            WHEN p.category = 'exposed_comm' THEN 'communication'
            WHEN p.category = 'transfer_exposed' THEN 'transfer'
            WHEN p.category = 'between' THEN 'between steps'
            ELSE p.category END AS cause,
       p.category, p.rank, p.excess AS cause_ns
FROM long AS l
JOIN picked AS p ON p.step = l.step AND p.pick = 1
JOIN showing AS w ON w.step = p.step AND w.category = p.category;
