-- Host events with whether each is a host call that blocks until the device is done: a
-- synchronous copy (`cudaMemcpy*`, `hipMemcpy*`: a device-to-host copy waits for the work queued
-- before it), a stream, event, context or device synchronize, `.item()`
-- (`aten::item`, `aten::_local_scalar_dense`), torch-xla's `mark_step` / `wait_device_ops`. The
-- one place that names them.
-- @column rank     global rank
-- @column step     training step; null outside every step
-- @column ts       start, ns
-- @column dur      duration, ns
-- @column name     call name as the source spells it
-- @column lane     host thread
-- @column is_sync  true for a call that blocks on the device
CREATE VIEW _host_calls AS
SELECT rank, step, ts, dur, name, lane,
       regexp_matches(name, '^(cuda|hip|cu)(Memcpy[A-Za-z0-9]*|StreamSynchronize|DeviceSynchronize|EventSynchronize|CtxSynchronize)$|^aten::(item|_local_scalar_dense)$|mark_step|wait_device_ops')
           AS is_sync
FROM events
WHERE kind = 'host' AND dur > 0;

-- Timed events with the time-accounting category each belongs to. The one place that decides
-- which kinds count in the step accounting: device work and input waits, and host work (which
-- counts only where the device has nothing else: step_breakdown's `host`); annotations and
-- steps do not. A host call that blocks until the device is done (view _host_calls) is
-- `host_sync`: the host waits for the device, not the other way round.
-- @column rank      global rank
-- @column ts        start, ns
-- @column end_ts    end, ns
-- @column category  compute | comm | input | transfer | compile | host | host_sync
CREATE VIEW device_intervals AS
SELECT rank, ts, ts + dur AS end_ts,
       CASE kind WHEN 'compute' THEN 'compute'
                 WHEN 'collective' THEN 'comm' WHEN 'p2p' THEN 'comm'
                 WHEN 'input' THEN 'input'
                 WHEN 'transfer' THEN 'transfer' WHEN 'memory' THEN 'transfer'
                 ELSE 'compile' END AS category
FROM events
WHERE kind IN ('compute', 'collective', 'p2p', 'input', 'transfer', 'memory', 'compile') AND dur > 0
UNION ALL
SELECT rank, ts, ts + dur AS end_ts, CASE WHEN is_sync THEN 'host_sync' ELSE 'host' END AS category
FROM _host_calls;

-- Where the host blocked on the device: each blocking call of view _host_calls in a step, with
-- its call site, the host events around it on its thread (outermost first, at most the three
-- innermost: Python frames where the trace records the stack, then the op, e.g.
-- `train.py(88): log > aten::to > aten::_to_copy`).
-- @column rank      global rank
-- @column step      training step
-- @column ts        start, ns
-- @column dur       duration, ns
-- @column name      the blocking call
-- @column site      the host events enclosing it, outermost first; the call's own name when none
CREATE VIEW host_sync_calls AS
WITH calls AS (
    SELECT rank, step, ts, dur, name, lane FROM _host_calls WHERE is_sync AND step IS NOT NULL
),
around AS (  -- enclosing non-blocking host events on the same thread, innermost first
    SELECT c.rank, c.ts, c.lane, o.name,
           ROW_NUMBER() OVER (PARTITION BY c.rank, c.lane, c.ts ORDER BY o.ts DESC, o.dur) AS depth_up
    FROM calls AS c
    JOIN _host_calls AS o
      ON o.rank = c.rank AND o.lane = c.lane AND NOT o.is_sync AND o.ts <= c.ts AND o.ts + o.dur >= c.ts + c.dur
),
sites AS (
    SELECT rank, lane, ts, STRING_AGG(name, ' > ' ORDER BY depth_up DESC) AS site
    FROM around WHERE depth_up <= 3 GROUP BY rank, lane, ts
)
SELECT c.rank, c.step, c.ts, c.dur, c.name, COALESCE(s.site, c.name) AS site
FROM calls AS c
LEFT JOIN sites AS s ON s.rank = c.rank AND s.lane = c.lane AND s.ts = c.ts;

-- The sweep's points: each start (+) and end (-) of a rank's device and host intervals and
-- step windows. Each device category's open-interval count is packed into 12 bits of one BIGINT
-- (`delta`: so at most 4,095 intervals of one category may be open at once on a rank), and
-- `step_delta` packs the open step's number + 1 (steps do not overlap on a rank) times 2^24 with
-- the counts of open host_sync (times 4096) and host intervals (at most 4,095 each at once).
-- @column rank        global rank
-- @column t           the point, ns
-- @column delta       change of the packed device counts at the point
-- @column step_delta  change of the packed step and host count at the point
CREATE VIEW _sweep_points AS
WITH weighted AS (
    SELECT rank, ts, end_ts,
           CASE category WHEN 'host' THEN CAST(1 AS BIGINT) WHEN 'host_sync' THEN CAST(4096 AS BIGINT)
                         ELSE CAST(0 AS BIGINT) END AS host_weight,
           CASE category WHEN 'host' THEN CAST(0 AS BIGINT) WHEN 'host_sync' THEN CAST(0 AS BIGINT)
                         WHEN 'compute' THEN CAST(1 AS BIGINT)
                         WHEN 'comm' THEN CAST(4096 AS BIGINT)
                         WHEN 'input' THEN CAST(16777216 AS BIGINT)
                         WHEN 'transfer' THEN CAST(68719476736 AS BIGINT)
                         ELSE CAST(281474976710656 AS BIGINT) END AS weight
    FROM device_intervals
)
SELECT rank, ts AS t, weight AS delta, host_weight AS step_delta FROM weighted
UNION ALL
SELECT rank, end_ts AS t, -weight AS delta, -host_weight AS step_delta FROM weighted
UNION ALL
SELECT rank, ts AS t, CAST(0 AS BIGINT) AS delta, CAST(step + 1 AS BIGINT) * 16777216 AS step_delta FROM steps
UNION ALL
SELECT rank, end_ts AS t, CAST(0 AS BIGINT) AS delta, -CAST(step + 1 AS BIGINT) * 16777216 AS step_delta FROM steps;

-- The sweep: one ordered pass over the points with running sums, a row per point with the
-- packed counts open from it to the next point. All counts return to zero at a rank's last
-- point, so one ordering by (rank, t) serves every rank without per-rank partitions. (Spark
-- runs a replacement: trnprof/spark/views/_swept.sql.)
-- @column rank       global rank
-- @column t          the point, ns
-- @column dur        time to the next point, ns
-- @column packed     packed device counts open after the point
-- @column step_host  packed step, host_sync and host counts open after the point
CREATE VIEW _swept AS
SELECT rank, t,
       LEAD(t) OVER w - t AS dur,
       SUM(delta) OVER w AS packed,
       SUM(step_delta) OVER w AS step_host
FROM _sweep_points
WINDOW w AS (ORDER BY rank, t ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW);

-- Interval union and intersection, done once: the sweep over every start and end point of each
-- rank's device and host intervals and step windows (`_sweep_points`, `_swept`). Each row is an
-- elementary segment between two consecutive points with how many intervals of each category
-- cover it, so the length of any union (covered by some category) or intersection (covered by
-- several) is a filtered SUM(dur).
-- @column rank       global rank
-- @column step       step whose window holds the segment; null outside every step
-- @column ts         segment start, ns
-- @column dur        segment length, ns (> 0)
-- @column n_compute  compute intervals covering the segment
-- @column n_comm     collective and p2p intervals covering the segment
-- @column n_input    input intervals covering the segment
-- @column n_transfer transfer and memory intervals covering the segment
-- @column n_compile  compile intervals covering the segment
-- @column n_host     host intervals covering the segment (host_sync ones apart)
-- @column n_host_sync host calls blocked on the device covering the segment
CREATE VIEW device_segments AS
SELECT rank, CASE WHEN step_host >= 16777216 THEN CAST((step_host - step_host % 16777216) / 16777216 AS INTEGER) - 1 END
           AS step,
       t AS ts, dur,
       CAST(packed % 4096 AS INTEGER) AS n_compute,
       CAST((packed % 16777216 - packed % 4096) / 4096 AS INTEGER) AS n_comm,
       CAST((packed % 68719476736 - packed % 16777216) / 16777216 AS INTEGER) AS n_input,
       CAST((packed % 281474976710656 - packed % 68719476736) / 68719476736 AS INTEGER) AS n_transfer,
       CAST((packed - packed % 281474976710656) / 281474976710656 AS INTEGER) AS n_compile,
       CAST(step_host % 4096 AS INTEGER) AS n_host,
       CAST((step_host % 16777216 - step_host % 4096) / 4096 AS INTEGER) AS n_host_sync
FROM _swept
WHERE dur > 0 AND (packed <> 0 OR step_host <> 0);
