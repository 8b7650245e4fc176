-- device_segments on Spark: the sweep of trnprof/stdlib/intervals.sql, one window partition per
-- rank. DuckDB's runs one window ordered by (rank, t) over every rank, which Spark would compute
-- in a single task; and Spark requires LEAD to have its own frame, so LEAD and the running sums
-- cannot share DuckDB's ROWS frame over tied points. The points of one instant are summed first
-- (one row per rank and instant), so both windows see the same total order. The rows are the
-- same: one per elementary segment with something open.
WITH weighted AS (
    SELECT rank, ts, end_ts,
           CASE category WHEN 'host' THEN CAST(1 AS BIGINT) ELSE CAST(0 AS BIGINT) END AS host_weight,
           CASE category WHEN 'host' THEN CAST(0 AS BIGINT)
                         WHEN 'compute' THEN CAST(1 AS BIGINT)
                         WHEN 'comm' THEN CAST(4096 AS BIGINT)
                         WHEN 'input' THEN CAST(16777216 AS BIGINT)
                         WHEN 'transfer' THEN CAST(68719476736 AS BIGINT)
                         ELSE CAST(281474976710656 AS BIGINT) END AS weight
    FROM device_intervals
),
points AS (
    SELECT rank, ts AS t, weight AS delta, host_weight AS step_delta FROM weighted
    UNION ALL
    SELECT rank, end_ts AS t, -weight AS delta, -host_weight AS step_delta FROM weighted
    UNION ALL
    SELECT rank, ts AS t, CAST(0 AS BIGINT) AS delta, CAST(step + 1 AS BIGINT) * 4096 AS step_delta FROM steps
    UNION ALL
    SELECT rank, end_ts AS t, CAST(0 AS BIGINT) AS delta, -CAST(step + 1 AS BIGINT) * 4096 AS step_delta FROM steps
),
instants AS (
    SELECT rank, t, SUM(delta) AS delta, SUM(step_delta) AS step_delta FROM points GROUP BY rank, t
),
swept AS (
    SELECT rank, t,
           LEAD(t) OVER (PARTITION BY rank ORDER BY t) - t AS dur,
           SUM(delta) OVER running AS packed,
           SUM(step_delta) OVER running AS step_host
    FROM instants
    WINDOW running AS (PARTITION BY rank ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
)
SELECT rank, CASE WHEN step_host >= 4096 THEN CAST((step_host - step_host % 4096) / 4096 AS INT) - 1 END AS step,
       t AS ts, dur,
       CAST(packed % 4096 AS INT) AS n_compute,
       CAST((packed % 16777216 - packed % 4096) / 4096 AS INT) AS n_comm,
       CAST((packed % 68719476736 - packed % 16777216) / 16777216 AS INT) AS n_input,
       CAST((packed % 281474976710656 - packed % 68719476736) / 68719476736 AS INT) AS n_transfer,
       CAST((packed - packed % 281474976710656) / 281474976710656 AS INT) AS n_compile,
       CAST(step_host % 4096 AS INT) AS n_host
FROM swept
WHERE dur > 0 AND (packed <> 0 OR step_host <> 0)
