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
