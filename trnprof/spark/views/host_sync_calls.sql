-- host_sync_calls on Spark: the view of trnprof/stdlib/intervals.sql, whose ASOF join (the call
-- open at each depth under a blocking call: the last one opened there before it) Spark SQL does
-- not have. The same lookup as a running maximum: the calls opened and the lookups in one order
-- per thread and depth, each lookup taking the last call opened before it.
WITH opened AS (
    SELECT rank, lane, seq, t AS ts, end_ts, depth, step, name, is_sync FROM _host_stack WHERE opens
),
calls AS (
    SELECT * FROM opened WHERE is_sync AND step IS NOT NULL
),
below AS (
    SELECT rank, lane, seq, end_ts, EXPLODE(SEQUENCE(CAST(1 AS BIGINT), depth - 1)) AS depth FROM calls WHERE depth > 1
),
marks AS (
    SELECT rank, lane, depth, seq, 0 AS lookup, CAST(NULL AS BIGINT) AS call_end FROM opened
    UNION ALL
    SELECT rank, lane, depth, seq, 1 AS lookup, end_ts AS call_end FROM below
),
found AS (
    SELECT rank, lane, seq, lookup, call_end,
           MAX(CASE WHEN lookup = 0 THEN seq END) OVER (PARTITION BY rank, lane, depth ORDER BY seq, lookup
                                                        ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS above
    FROM marks
),
around AS (
    SELECT f.rank, f.lane, f.seq, o.depth, o.name
    FROM found AS f JOIN opened AS o ON o.rank = f.rank AND o.lane = f.lane AND o.seq = f.above
    WHERE f.lookup = 1 AND NOT o.is_sync AND o.end_ts >= f.call_end
),
innermost AS (
    SELECT rank, lane, seq, depth, name,
           ROW_NUMBER() OVER (PARTITION BY rank, lane, seq ORDER BY depth DESC) AS depth_up
    FROM around
),
sites AS (
    SELECT rank, lane, seq, LISTAGG(name, ' > ') WITHIN GROUP (ORDER BY depth) AS site
    FROM innermost WHERE depth_up <= 3 GROUP BY rank, lane, seq
)
SELECT c.rank, c.step, c.ts, c.end_ts - c.ts AS dur, c.name, COALESCE(s.site, c.name) AS site
FROM calls AS c
LEFT JOIN sites AS s ON s.rank = c.rank AND s.lane = c.lane AND s.seq = c.seq
