-- Device-visible events with the time-accounting category each belongs to. The one place that
-- decides which kinds count as device time: host work, annotations and steps do not.
-- @column rank      global rank
-- @column ts        start, ns
-- @column end_ts    end, ns
-- @column category  compute | comm | input | transfer | compile
CREATE VIEW device_intervals AS
SELECT rank, ts, ts + dur AS end_ts,
       CASE kind WHEN 'compute' THEN 'compute'
                 WHEN 'collective' THEN 'comm' WHEN 'p2p' THEN 'comm'
                 WHEN 'input' THEN 'input'
                 WHEN 'transfer' THEN 'transfer' WHEN 'memory' THEN 'transfer'
                 ELSE 'compile' END AS category
FROM events
WHERE kind IN ('compute', 'collective', 'p2p', 'input', 'transfer', 'memory', 'compile') AND dur > 0;

-- Interval union and intersection, done once: a sweep over every start and end point of each
-- rank's device intervals and step windows. Each row is an elementary segment between two
-- consecutive points with how many intervals of each category cover it, so the length of any
-- union (covered by some category) or intersection (covered by several) is a filtered SUM(dur).
-- Running sums instead of self-joins keep it one ordered pass per rank.
-- @column rank       global rank
-- @column step       step whose window holds the segment; null outside every step
-- @column ts         segment start, ns
-- @column dur        segment length, ns (> 0)
-- @column n_compute  compute intervals covering the segment
-- @column n_comm     collective and p2p intervals covering the segment
-- @column n_input    input intervals covering the segment
-- @column n_transfer transfer and memory intervals covering the segment
-- @column n_compile  compile intervals covering the segment
CREATE VIEW device_segments AS
WITH points AS (
    SELECT rank, ts AS t, category, 1 AS delta, 0 AS step_delta FROM device_intervals
    UNION ALL
    SELECT rank, end_ts AS t, category, -1 AS delta, 0 AS step_delta FROM device_intervals
    UNION ALL
    SELECT rank, ts AS t, 'step' AS category, 0 AS delta, step + 1 AS step_delta FROM steps
    UNION ALL
    SELECT rank, end_ts AS t, 'step' AS category, 0 AS delta, -(step + 1) AS step_delta FROM steps
),
swept AS (
    SELECT rank, t,
           LEAD(t) OVER w - t AS dur,
           SUM(CASE WHEN category = 'compute' THEN delta ELSE 0 END) OVER w AS n_compute,
           SUM(CASE WHEN category = 'comm' THEN delta ELSE 0 END) OVER w AS n_comm,
           SUM(CASE WHEN category = 'input' THEN delta ELSE 0 END) OVER w AS n_input,
           SUM(CASE WHEN category = 'transfer' THEN delta ELSE 0 END) OVER w AS n_transfer,
           SUM(CASE WHEN category = 'compile' THEN delta ELSE 0 END) OVER w AS n_compile,
           SUM(step_delta) OVER w AS step_plus_one
    FROM points
    WINDOW w AS (PARTITION BY rank ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
)
SELECT rank, CASE WHEN step_plus_one > 0 THEN step_plus_one - 1 END AS step, t AS ts, dur,
       n_compute, n_comm, n_input, n_transfer, n_compile
FROM swept
WHERE dur > 0;
