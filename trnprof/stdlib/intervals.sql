-- @requires steps

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

-- Each host call's place on its thread's stack of open calls: one ordered pass per thread over
-- the starts and ends of view _host_calls. At one instant ends come before starts, inner ends
-- and outer starts first; calls with the same start and length nest by the order `seq` gives
-- them: the blocking one inside, the others by name (the first outside). The call open at depth
-- d after a point is the last one opened at depth d.
-- @column rank     global rank
-- @column lane     host thread
-- @column t        the point: the call's start or end, ns
-- @column opens    true at the call's start, false at its end
-- @column seq      the call's place on its thread, outer first (1, 2, ...)
-- @column pos      the point's place on its thread (1, 2, ...)
-- @column depth    calls open on the thread after the point; at a start, the call's own depth (1: outermost)
-- @column next_t   the thread's next point, ns
-- @column end_ts   the call's end, ns
-- @column step     the call's training step; null outside every step
-- @column name     the call's name
-- @column is_sync  true for a call that blocks on the device
CREATE VIEW _host_stack AS
WITH calls AS (
    SELECT rank, step, lane, ts, ts + dur AS end_ts, name, is_sync,
           ROW_NUMBER() OVER (PARTITION BY rank, lane ORDER BY ts, dur DESC, is_sync, name) AS seq
    FROM _host_calls
),
points AS (  -- the start (d = 1) and the end (d = -1) of each call, from one read of the calls
    SELECT rank, step, lane, end_ts, name, is_sync, seq, CASE WHEN e.d = 1 THEN ts ELSE end_ts END AS t, e.d
    FROM calls CROSS JOIN (VALUES (1), (-1)) AS e(d)
)
SELECT rank, lane, t, d = 1 AS opens, seq,
       ROW_NUMBER() OVER (PARTITION BY rank, lane ORDER BY t, d, d * seq) AS pos,
       CAST(SUM(d) OVER (PARTITION BY rank, lane ORDER BY t, d, d * seq
                         ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS BIGINT) AS depth,
       LEAD(t) OVER (PARTITION BY rank, lane ORDER BY t, d, d * seq) AS next_t, end_ts, step, name, is_sync
FROM points;

-- Where the host blocked on the device: each blocking call of view _host_calls in a step, with
-- its call site, the host events around it on its thread (outermost first, at most the three
-- innermost: Python frames where the trace records the stack, then the op, e.g.
-- `train.py(88): log > aten::to > aten::_to_copy`). The events around a call are the
-- non-blocking ones below it on its thread's stack (view _host_stack) that also end no earlier
-- than it; events with the same start and length nest as host_self_time nests them.
-- @column rank      global rank
-- @column step      training step
-- @column ts        start, ns
-- @column dur       duration, ns
-- @column name      the blocking call
-- @column site      the host events enclosing it, outermost first; the call's own name when none
CREATE VIEW host_sync_calls AS
WITH opened AS (
    SELECT rank, lane, seq, t AS ts, end_ts, depth, step, name, is_sync FROM _host_stack WHERE opens
),
calls AS (
    SELECT * FROM opened WHERE is_sync AND step IS NOT NULL
),
below AS (  -- each depth of the stack under a call
    SELECT rank, lane, seq, end_ts, UNNEST(range(1, depth)) AS depth FROM calls
),
around AS (  -- the call open at that depth: the last one opened there before the call
    SELECT b.rank, b.lane, b.seq, o.depth, o.name
    FROM below AS b ASOF JOIN opened AS o
      ON o.rank = b.rank AND o.lane = b.lane AND o.depth = b.depth AND b.seq > o.seq
    WHERE NOT o.is_sync AND o.end_ts >= b.end_ts
),
innermost AS (
    SELECT rank, lane, seq, depth, name,
           ROW_NUMBER() OVER (PARTITION BY rank, lane, seq ORDER BY depth DESC) AS depth_up
    FROM around
),
sites AS (
    SELECT rank, lane, seq, STRING_AGG(name, ' > ' ORDER BY depth) AS site
    FROM innermost WHERE depth_up <= 3 GROUP BY rank, lane, seq
)
SELECT c.rank, c.step, c.ts, c.end_ts - c.ts AS dur, c.name, COALESCE(s.site, c.name) AS site
FROM calls AS c
LEFT JOIN sites AS s ON s.rank = c.rank AND s.lane = c.lane AND s.seq = c.seq;

-- The sweep's points: each start (+) and end (-) of a rank's device and host intervals and
-- step windows, from one read of them. Each device category's open-interval count is packed
-- into 12 bits of one BIGINT (`delta`: so at most 4,095 intervals of one category may be open at
-- once on a rank), and `step_delta` packs the open step's number + 1 (steps do not overlap on a
-- rank) times 2^24 with the counts of open host_sync (times 4096) and host intervals (at most
-- 4,095 each at once).
-- @column rank        global rank
-- @column t           the point, ns
-- @column delta       change of the packed device counts at the point
-- @column step_delta  change of the packed step and host count at the point
CREATE VIEW _sweep_points AS
WITH weighted AS (
    SELECT rank, ts, end_ts,
           CASE category WHEN 'host' THEN CAST(0 AS BIGINT) WHEN 'host_sync' THEN CAST(0 AS BIGINT)
                         WHEN 'compute' THEN CAST(1 AS BIGINT)
                         WHEN 'comm' THEN CAST(4096 AS BIGINT)
                         WHEN 'input' THEN CAST(16777216 AS BIGINT)
                         WHEN 'transfer' THEN CAST(68719476736 AS BIGINT)
                         ELSE CAST(281474976710656 AS BIGINT) END AS weight,
           CASE category WHEN 'host' THEN CAST(1 AS BIGINT) WHEN 'host_sync' THEN CAST(4096 AS BIGINT)
                         ELSE CAST(0 AS BIGINT) END AS host_weight
    FROM device_intervals
    UNION ALL
    SELECT rank, ts, end_ts, CAST(0 AS BIGINT) AS weight, CAST(step + 1 AS BIGINT) * 16777216 AS host_weight
    FROM steps
)
SELECT rank, CASE WHEN e.d = 1 THEN ts ELSE end_ts END AS t, e.d * weight AS delta, e.d * host_weight AS step_delta
FROM weighted CROSS JOIN (VALUES (CAST(1 AS BIGINT)), (CAST(-1 AS BIGINT))) AS e(d);

-- The sweep: one ordered pass over the points with running sums, a row per elementary segment:
-- a point with time to the next one and something open from it, with the packed counts. All
-- counts return to zero at a rank's last point, so one ordering by (rank, t) serves every rank
-- without per-rank partitions. At tied points only the last has time to the next one, with every
-- tied point summed. The two packed sums run as one 128-bit sum, delta * 2^64 + step_delta (one
-- running aggregate instead of two: the window costs an eighth less): an interval's start
-- sorts before its end (dur > 0), so every prefix of the points holds each count at zero or
-- more, and the low 64 bits are step_host exactly. The batch pass keeps these rows as a table of
-- the batch while its views read them (`batches.SHARED_IN_BATCH`: five columns, where
-- device_segments unpacks eleven). (Spark runs a replacement: trnprof/spark/views/_swept.sql.)
-- @column rank       global rank
-- @column t          the point, ns
-- @column dur        time to the next point, ns (> 0)
-- @column packed     packed device counts open after the point
-- @column step_host  packed step, host_sync and host counts open after the point
CREATE VIEW _swept AS
WITH swept AS (
    SELECT rank, t,
           LEAD(t) OVER w - t AS dur,
           SUM(CAST(delta AS HUGEINT) * CAST(18446744073709551616 AS HUGEINT) + step_delta) OVER w AS counts
    FROM _sweep_points
    WINDOW w AS (ORDER BY rank, t ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
)
SELECT rank, t, dur, CAST(counts >> 64 AS BIGINT) AS packed,
       CAST(counts & CAST(18446744073709551615 AS HUGEINT) AS BIGINT) AS step_host
FROM swept WHERE dur > 0 AND counts <> 0;

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
SELECT rank, CASE WHEN step_host >= 16777216 THEN CAST(step_host >> 24 AS INTEGER) - 1 END AS step,
       t AS ts, dur,
       CAST(packed & 4095 AS INTEGER) AS n_compute,
       CAST((packed >> 12) & 4095 AS INTEGER) AS n_comm,
       CAST((packed >> 24) & 4095 AS INTEGER) AS n_input,
       CAST((packed >> 36) & 4095 AS INTEGER) AS n_transfer,
       CAST(packed >> 48 AS INTEGER) AS n_compile,
       CAST(step_host & 4095 AS INTEGER) AS n_host,
       CAST((step_host >> 12) & 4095 AS INTEGER) AS n_host_sync
FROM _swept;

-- Host-op self time in step_breakdown's `host` time (device idle, no input wait, no host call
-- blocked on the device, a host event of the rank running): each host op gets the time it is
-- the innermost open op of its thread, so nested ops (`aten::to` > `aten::_to_copy` >
-- `aten::copy_`) never share one instant. Each thread's stack of open calls (view _host_stack)
-- gives each stretch between two points of the thread its innermost op (the op open at depth d is
-- the last one started at depth d); each claimed instant is split evenly over the threads running
-- a non-blocking op then, so the ops' times sum to at most the `host` time. The claimed time per
-- thread is summed once per rank over the instants where its rate changes (a run of claimed
-- segments starts or ends, a thread starts or stops running an op) and read at each point of a
-- thread from the last such instant before it.
-- @column rank     global rank
-- @column step     training step of the op; null outside every step
-- @column lane     host thread
-- @column name     host op as the source spells it
-- @column self_ns  its share of the `host` time, ns
CREATE VIEW host_self_time AS
WITH stack AS (
    SELECT * FROM _host_stack
),
stretches AS (  -- from each point of a thread to the next: the call open at its depth (the last one
                -- opened there) and whether it blocks on the device (then the thread runs no op)
    SELECT rank, lane, ts, end_ts, owner_code >> 1 AS owner, owner_code & 1 = 1 AS blocking
    FROM (SELECT rank, lane, t AS ts, next_t AS end_ts,
                 LAST_VALUE(CASE WHEN opens THEN seq * 2 + CAST(is_sync AS BIGINT) END IGNORE NULLS)
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
at_points AS (  -- claimed time per thread before each point of a thread: the last mark's (a rank's
                -- first point is one), plus the time since it
    SELECT p.rank, p.t,
           c.before + CASE WHEN c.sharing > 0 THEN CAST(p.t - c.t AS DOUBLE) / c.sharing ELSE 0.0 END AS before
    FROM (SELECT DISTINCT rank, t FROM stack) AS p
    ASOF JOIN cumulative AS c ON c.rank = p.rank AND c.t <= p.t
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

-- The launch calls of CUDA and HIP (`cudaLaunchKernel`, `cudaGraphLaunch`, `cudaMemcpyAsync`, ...,
-- HIP's alike) with the correlation id Kineto gives them in `args`: the one place that names them
-- (views launch_pending and host_pending time them against view _launched_ops).
-- @column rank      global rank
-- @column step      training step of the call
-- @column launched  the call's end, ns
-- @column graph     true for a graph launch (its kernels may be missing from the trace)
-- @column corr      correlation id; null when `args` holds none that parses
CREATE VIEW _launch_calls AS
SELECT rank, step, ts + dur AS launched, contains(name, 'GraphLaunch') AS graph,
       TRY_CAST(regexp_extract(args, '"correlation":\s*(-?[0-9]{1,18})', 1) AS BIGINT) AS corr
FROM events
WHERE kind = 'host' AND step IS NOT NULL
  AND regexp_matches(name, '^(cuda|hip|cu)(LaunchKernel|LaunchCooperativeKernel|GraphLaunch|MemcpyAsync|MemsetAsync|ModuleLaunchKernel|ExtModuleLaunchKernel)')
  AND contains(args, '"correlation"');

-- The first start of the device ops (lanes gpu*) that carry each correlation id: where the
-- launch calls of view _launch_calls began to run.
-- @column rank         global rank
-- @column corr         correlation id
-- @column first_start  first start of its device ops, ns
CREATE VIEW _launched_ops AS
SELECT rank, TRY_CAST(regexp_extract(args, '"correlation":\s*(-?[0-9]{1,18})', 1) AS BIGINT) AS corr,
       MIN(ts) AS first_start
FROM events
WHERE lane LIKE 'gpu%' AND contains(args, '"correlation"')
GROUP BY ALL;

-- Per rank and step: how long device work had been launched but not started (queued on the
-- device), from the launch calls (`cudaLaunchKernel`, `cudaGraphLaunch`, `cudaMemcpyAsync`, ...,
-- HIP's alike) and the device ops that carry their correlation id (Kineto's `correlation` in
-- `args`). A launch is pending from its call's end to the first start of its device ops; a
-- launch none of whose device ops the trace recorded (a CUDA graph replayed without kernel
-- records) is pending until the rank's next blocking host call ends (view _host_calls: the host
-- waited for it there), else until its step ends. Overlapping launches count once. While work
-- is pending the device, not the host, bounds the step: time the device runs work the trace
-- does not show, or a queue the host keeps full.
-- @column rank           global rank
-- @column step           training step of the launch calls
-- @column launches       launch calls matched by correlation id or left without device ops
-- @column unrecorded     launches none of whose device ops the trace recorded
-- @column pending_ns     union of the pending intervals within the step, ns
-- @column p50_wait_ns    median time from a launch call's end to its first device op's start (recorded ones), ns
CREATE VIEW launch_pending AS
WITH calls AS (
    SELECT rank, step, launched, corr FROM _launch_calls
),
ops AS (
    SELECT * FROM _launched_ops
),
syncs AS (
    SELECT rank, ts, ts + dur AS sync_end FROM _host_calls WHERE is_sync
),
waited AS (  -- the earliest end of the blocking calls that start after each launch
    SELECT * FROM (
        SELECT rank, step, launched, corr,
               MIN(sync_end) OVER (PARTITION BY rank ORDER BY launched, is_call
                                   ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS sync_end, is_call
        FROM (SELECT rank, step, launched, corr, NULL AS sync_end, 1 AS is_call FROM calls WHERE corr IS NOT NULL
              UNION ALL
              SELECT rank, NULL, ts, NULL, sync_end, 0 FROM syncs))
    WHERE is_call = 1
),
bounded AS (
    SELECT c.rank, c.step, c.launched, o.first_start, s.end_ts AS step_end, c.sync_end
    FROM waited AS c
    LEFT JOIN ops AS o ON o.rank = c.rank AND o.corr = c.corr
    JOIN steps AS s ON s.rank = c.rank AND s.step = c.step
),
intervals AS (
    SELECT rank, step, launched AS a, first_start IS NULL AS unrecorded,
           first_start - launched AS wait_ns,
           LEAST(COALESCE(first_start, sync_end, step_end), step_end) AS b
    FROM bounded
),
swept AS (  -- union length: each interval adds what lies past the reach of those started before it
    SELECT *, MAX(b) OVER (PARTITION BY rank, step ORDER BY a, b
                           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
    FROM intervals
)
SELECT rank, step, CAST(COUNT(*) AS BIGINT) AS launches,
       CAST(SUM(CASE WHEN unrecorded THEN 1 ELSE 0 END) AS BIGINT) AS unrecorded,
       CAST(SUM(GREATEST(b - GREATEST(a, COALESCE(reach, a)), 0)) AS BIGINT) AS pending_ns,
       MEDIAN(CASE WHEN wait_ns IS NOT NULL THEN GREATEST(wait_ns, 0) END) AS p50_wait_ns
FROM swept
GROUP BY rank, step;
