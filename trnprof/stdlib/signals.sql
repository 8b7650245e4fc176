-- @requires memory, ops, steps

-- What a run holds, in one row of flags: a rule lists the flags it needs under `requires` and
-- is reported as not evaluated, with the flag's description, when one is false. Every flag is
-- true or false, never null (a run without events has every event flag false).
-- @column steps             the run has whole steps (view steps), so per-step timing is known
-- @column multi_rank        more than one rank recorded whole steps
-- @column compute           the run has compute events
-- @column flops             some compute events report their FLOPs
-- @column collectives       the run has collective or p2p events
-- @column collective_bytes  some collective events report their payload bytes
-- @column input             the run has input (data loading) events
-- @column transfer          the run has transfer (host-to-device copy) or memory events
-- @column compile           the run has compile events
-- @column hbm               the run has device-memory counters (hbm.*)
-- @column hbm_capacity      the ranks table gives each rank's device-memory capacity
-- @column topology          the ranks table places every rank on a node
-- @column data_parallel     the ranks table has more than one data-parallel coordinate
-- @column pipeline          the ranks table has more than one pipeline stage
-- @column device_profile    the run has a device profile (Neuron Explorer, or trnprof simulate --device-profile)
CREATE VIEW signals AS
WITH kinds AS (
    SELECT MAX(CASE WHEN kind = 'compute' THEN 1 ELSE 0 END) AS compute,
           MAX(CASE WHEN kind = 'compute' AND n_flops > 0 THEN 1 ELSE 0 END) AS flops,
           MAX(CASE WHEN kind IN ('collective', 'p2p') THEN 1 ELSE 0 END) AS collectives,
           MAX(CASE WHEN kind = 'collective' AND n_bytes > 0 THEN 1 ELSE 0 END) AS collective_bytes,
           MAX(CASE WHEN kind = 'input' THEN 1 ELSE 0 END) AS input,
           MAX(CASE WHEN kind IN ('transfer', 'memory') THEN 1 ELSE 0 END) AS transfer,
           MAX(CASE WHEN kind = 'compile' THEN 1 ELSE 0 END) AS compile
    FROM event_stats
),
stepped AS (
    SELECT COUNT(*) > 0 AS steps, COUNT(DISTINCT rank) AS step_ranks FROM steps
),
memory AS (
    SELECT COUNT(*) AS samples FROM memory_timeline
),
layout AS (
    SELECT COUNT(*) AS n_ranks, COUNT(node) AS with_node, COUNT(hbm_capacity_bytes) AS with_capacity,
           COUNT(DISTINCT dp_rank) AS dp, COUNT(DISTINCT pp_rank) AS pp
    FROM ranks
),
device AS (  -- row counts: Parquet footers, no scan
    SELECT (SELECT COUNT(*) FROM device_instructions) + (SELECT COUNT(*) FROM device_dma)
           + (SELECT COUNT(*) FROM device_cc_ops) AS n_rows
)
SELECT s.steps, s.step_ranks > 1 AS multi_rank,
       COALESCE(k.compute = 1, FALSE) AS compute, COALESCE(k.flops = 1, FALSE) AS flops,
       COALESCE(k.collectives = 1, FALSE) AS collectives,
       COALESCE(k.collective_bytes = 1, FALSE) AS collective_bytes, COALESCE(k.input = 1, FALSE) AS input,
       COALESCE(k.transfer = 1, FALSE) AS transfer, COALESCE(k.compile = 1, FALSE) AS compile, m.samples > 0 AS hbm,
       l.with_capacity > 0 AS hbm_capacity, l.n_ranks > 0 AND l.with_node = l.n_ranks AS topology,
       l.dp > 1 AS data_parallel, l.pp > 1 AS pipeline, d.n_rows > 0 AS device_profile
FROM kinds AS k, stepped AS s, memory AS m, layout AS l, device AS d;
