-- @requires memory, step_breakdown

-- One row per rank: where it sits and where its time went over all steps.
-- @column rank              global rank
-- @column node              node index
-- @column dp_rank           data-parallel coordinate
-- @column tp_rank           tensor-parallel coordinate
-- @column pp_rank           pipeline-parallel coordinate
-- @column steps             steps recorded on the rank
-- @column step_time_mean    mean step duration, ns
-- @column step_time_max     longest step duration, ns
-- @column compute_share     compute / step time over all steps
-- @column exposed_comm_share exposed communication / step time
-- @column input_wait_share  input wait / step time
-- @column host_share        host (device idle while the host works) / step time
-- @column transfer_share    exposed transfer / step time
-- @column compile_share     exposed compile / step time
-- @column idle_share        idle / step time
-- @column overlap_ratio     overlapped / all communication over all steps; null without communication
-- @column hbm_peak_bytes    peak device memory, bytes; null without memory counters
-- @column host_sync_share   host blocked on the device (no device work running) / step time
CREATE VIEW rank_summary AS
WITH per_rank AS (
    SELECT rank, COUNT(*) AS steps, AVG(dur) AS step_time_mean, MAX(dur) AS step_time_max,
           SUM(dur) AS total, SUM(compute) AS compute, SUM(exposed_comm) AS exposed_comm,
           SUM(input_wait) AS input_wait, SUM(host) AS host,
           SUM(transfer_exposed) AS transfer_exposed, SUM(compile) AS compile, SUM(idle) AS idle,
           SUM(collective) AS collective, SUM(overlapped_comm) AS overlapped_comm,
           SUM(host_sync) AS host_sync
    FROM step_breakdown
    GROUP BY rank
)
SELECT r.rank, r.node, r.dp_rank, r.tp_rank, r.pp_rank,
       COALESCE(p.steps, 0) AS steps, p.step_time_mean, p.step_time_max,
       CAST(p.compute AS DOUBLE) / NULLIF(p.total, 0) AS compute_share,
       CAST(p.exposed_comm AS DOUBLE) / NULLIF(p.total, 0) AS exposed_comm_share,
       CAST(p.input_wait AS DOUBLE) / NULLIF(p.total, 0) AS input_wait_share,
       CAST(p.host AS DOUBLE) / NULLIF(p.total, 0) AS host_share,
       CAST(p.transfer_exposed AS DOUBLE) / NULLIF(p.total, 0) AS transfer_share,
       CAST(p.compile AS DOUBLE) / NULLIF(p.total, 0) AS compile_share,
       CAST(p.idle AS DOUBLE) / NULLIF(p.total, 0) AS idle_share,
       CAST(p.overlapped_comm AS DOUBLE) / NULLIF(p.collective, 0) AS overlap_ratio,
       m.peak_bytes AS hbm_peak_bytes,
       CAST(p.host_sync AS DOUBLE) / NULLIF(p.total, 0) AS host_sync_share
FROM ranks AS r
LEFT JOIN per_rank AS p ON p.rank = r.rank
LEFT JOIN memory_peak AS m ON m.rank = r.rank;
