-- _swept on Spark: the sweep of trnprof/stdlib/intervals.sql, one window partition per rank.
-- DuckDB's runs one window ordered by (rank, t) over every rank, which Spark would compute in a
-- single task; and Spark requires LEAD to have its own frame, so LEAD and the running sums
-- cannot share DuckDB's ROWS frame over tied points. The points of one instant are summed first
-- (one row per rank and instant), so both windows see the same total order. The rows kept are
-- the same as DuckDB's: those with time to the next point and something open (a tied point has
-- no time to the next one on DuckDB; here it is merged into its instant).
WITH instants AS (
    SELECT rank, t, SUM(delta) AS delta, SUM(step_delta) AS step_delta FROM _sweep_points GROUP BY rank, t
),
swept AS (
    SELECT rank, t,
           LEAD(t) OVER (PARTITION BY rank ORDER BY t) - t AS dur,
           SUM(delta) OVER running AS packed,
           SUM(step_delta) OVER running AS step_host
    FROM instants
    WINDOW running AS (PARTITION BY rank ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
)
SELECT * FROM swept WHERE dur > 0 AND (packed <> 0 OR step_host <> 0)
