-- host_self_time on Spark: the view of trnprof/stdlib/intervals.sql, whose ASOF join (the claimed
-- time per thread at each point of a thread, read from the last mark at or before it) Spark SQL
-- does not have. The same lookup as a running last value: the marks and the points in one order
-- per rank, each point taking the last mark before it.
WITH stack AS (
    SELECT * FROM _host_stack
),
stretches AS (  -- from each point of a thread to the next: the call open at its depth (the last one
                -- opened there) and whether it blocks on the device (then the thread runs no op)
    SELECT rank, lane, ts, end_ts, SHIFTRIGHT(owner_code, 1) AS owner, owner_code & 1 = 1 AS blocking
    FROM (SELECT rank, lane, t AS ts, next_t AS end_ts,
                 LAST_VALUE(CASE WHEN opens THEN seq * 2 + CAST(is_sync AS BIGINT) END, TRUE)
                     OVER (PARTITION BY rank, lane, depth ORDER BY pos ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
                     AS owner_code
          FROM stack
          WHERE depth > 0) AS points
    WHERE end_ts > ts
),
claimed AS (  -- starts (+1) and ends (-1) of runs of claimed segments: adjacent segments' shared ends cancel
    SELECT rank, t, SUM(d) AS d_claim
    FROM (SELECT rank, CASE WHEN e.d = 1 THEN ts ELSE ts + dur END AS t, e.d
          FROM device_segments CROSS JOIN (VALUES (1), (-1)) AS e(d)
          WHERE step IS NOT NULL AND n_host > 0 AND n_host_sync = 0 AND n_compute = 0 AND n_comm = 0
                AND n_transfer = 0 AND n_input = 0) AS ends
    GROUP BY rank, t
    HAVING SUM(d) <> 0
),
marks AS (  -- per instant of a rank: the change in claimed runs and in threads running an op
    SELECT rank, t, SUM(d_claim) AS d_claim, SUM(d_busy) AS d_busy
    FROM (SELECT rank, t, d_claim, 0 AS d_busy FROM claimed
          UNION ALL  -- a thread's outermost call opens, or its last open call ends
          SELECT rank, t, 0 AS d_claim, CASE WHEN opens THEN 1 ELSE -1 END AS d_busy
          FROM stack WHERE (opens AND depth = 1) OR (NOT opens AND depth = 0)
          UNION ALL  -- a stretch whose innermost call blocks
          SELECT rank, CASE WHEN e.d = 1 THEN ts ELSE end_ts END AS t, 0 AS d_claim, -e.d AS d_busy
          FROM stretches CROSS JOIN (VALUES (1), (-1)) AS e(d) WHERE blocking) AS changes
    GROUP BY rank, t
),
swept AS (
    SELECT rank, t, LEAD(t) OVER (PARTITION BY rank ORDER BY t) - t AS dur,
           SUM(d_claim) OVER (PARTITION BY rank ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS claim,
           SUM(d_busy) OVER (PARTITION BY rank ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS busy
    FROM marks
),
pieces AS (  -- from each mark to the next: the threads sharing the claimed time (0: none claimed), each one's share
    SELECT rank, t, CASE WHEN claim > 0 AND busy > 0 THEN busy ELSE 0 END AS sharing,
           CASE WHEN claim > 0 AND busy > 0 AND dur > 0 THEN CAST(dur AS DOUBLE) / busy ELSE 0.0 END AS share
    FROM swept
),
cumulative AS (  -- claimed time per thread before each mark
    SELECT rank, t, sharing,
           SUM(share) OVER (PARTITION BY rank ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) - share
               AS before
    FROM pieces
),
at_points AS (  -- claimed time per thread before each point of a thread: the last mark's at or
                -- before it (a rank's first point is one; at one instant the mark first), plus the time since it
    SELECT rank, t,
           mark_before + CASE WHEN mark_sharing > 0 THEN CAST(t - mark_t AS DOUBLE) / mark_sharing ELSE 0.0 END AS before
    FROM (SELECT rank, t, is_point,
                 LAST_VALUE(m_t, TRUE) OVER last_mark AS mark_t,
                 LAST_VALUE(m_sharing, TRUE) OVER last_mark AS mark_sharing,
                 LAST_VALUE(m_before, TRUE) OVER last_mark AS mark_before
          FROM (SELECT rank, t, 1 AS is_point, CAST(NULL AS BIGINT) AS m_t, CAST(NULL AS BIGINT) AS m_sharing,
                       CAST(NULL AS DOUBLE) AS m_before
                FROM (SELECT DISTINCT rank, t FROM stack) AS points
                UNION ALL
                SELECT rank, t, 0 AS is_point, t AS m_t, CAST(sharing AS BIGINT) AS m_sharing, before AS m_before
                FROM cumulative) AS both_kinds
          WINDOW last_mark AS (PARTITION BY rank ORDER BY t, is_point ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW))
          AS looked_up
    WHERE is_point = 1
),
per_owner AS (
    SELECT o.rank, o.lane, o.owner, SUM(e.before - s.before) AS self
    FROM stretches AS o
    JOIN at_points AS s ON s.rank = o.rank AND s.t = o.ts
    JOIN at_points AS e ON e.rank = o.rank AND e.t = o.end_ts
    WHERE NOT o.blocking
    GROUP BY o.rank, o.lane, o.owner
)
SELECT c.rank, c.step, c.lane, c.name, CAST(ROUND(SUM(p.self)) AS BIGINT) AS self_ns
FROM per_owner AS p
JOIN stack AS c ON c.rank = p.rank AND c.lane = p.lane AND c.seq = p.owner AND c.opens
GROUP BY c.rank, c.step, c.lane, c.name
HAVING SUM(p.self) > 0;
