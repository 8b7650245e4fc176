-- @requires intervals, steps

-- Where each rank's step time went. The exclusive categories partition the step:
-- dur = compute + exposed_comm + transfer_exposed + input_wait + host_sync + host + compile + idle,
-- each instant counted once, in the first category that covers it in that order: device work
-- of any kind first (compute, communication, copies and memsets), then the input wait, then the
-- host blocked on the device (a synchronous copy or synchronize with no device work in the
-- trace), then host work while the device is idle, then compile; `idle` is the time nothing known
-- ran. `collective` and `overlapped_comm` are not categories: they overlap compute.
-- @column rank               global rank
-- @column step               training step number
-- @column dur                step duration, ns
-- @column compute            time any compute op ran, ns
-- @column collective         time any collective or p2p ran, overlapped or not, ns
-- @column exposed_comm       collective time not overlapped by compute, ns
-- @column overlapped_comm    collective time hidden under compute, ns
-- @column input_wait         time waiting for input with no device work running, ns
-- @column host_sync          time a host call of the rank blocked on the device (synchronous copy, synchronize, .item(), mark_step) while no device work or input wait ran, ns
-- @column host               time a host event of the rank ran (graph launch, tracing, Python, CPU ops) while none of the above did: the device waits for the host, ns
-- @column transfer_exposed   copy/memset/DMA time with no compute or communication running, ns
-- @column compile            compile time with none of the above running, ns
-- @column idle               time with nothing known running (no device, input or host event), ns
-- @column overlap_ratio      overlapped_comm / collective; null without communication
CREATE VIEW step_breakdown AS
WITH sums AS (
    SELECT rank, step,
           CAST(SUM(CASE WHEN n_compute > 0 THEN dur ELSE 0 END) AS BIGINT) AS compute,
           CAST(SUM(CASE WHEN n_comm > 0 THEN dur ELSE 0 END) AS BIGINT) AS collective,
           CAST(SUM(CASE WHEN n_comm > 0 AND n_compute = 0 THEN dur ELSE 0 END) AS BIGINT) AS exposed_comm,
           CAST(SUM(CASE WHEN n_transfer > 0 AND n_compute = 0 AND n_comm = 0 THEN dur ELSE 0 END) AS BIGINT)
               AS transfer_exposed,
           CAST(SUM(CASE WHEN n_input > 0 AND n_compute = 0 AND n_comm = 0 AND n_transfer = 0
                    THEN dur ELSE 0 END) AS BIGINT) AS input_wait,
           CAST(SUM(CASE WHEN n_host_sync > 0 AND n_compute = 0 AND n_comm = 0 AND n_transfer = 0 AND n_input = 0
                    THEN dur ELSE 0 END) AS BIGINT) AS host_sync,
           CAST(SUM(CASE WHEN n_host > 0 AND n_host_sync = 0 AND n_compute = 0 AND n_comm = 0 AND n_transfer = 0
                         AND n_input = 0 THEN dur ELSE 0 END) AS BIGINT) AS host,
           CAST(SUM(CASE WHEN n_compile > 0 AND n_compute = 0 AND n_comm = 0 AND n_transfer = 0 AND n_input = 0
                         AND n_host_sync = 0 AND n_host = 0 THEN dur ELSE 0 END) AS BIGINT) AS compile
    FROM device_segments
    WHERE step IS NOT NULL
    GROUP BY rank, step
)
SELECT s.rank, s.step, s.dur,
       COALESCE(b.compute, 0) AS compute,
       COALESCE(b.collective, 0) AS collective,
       COALESCE(b.exposed_comm, 0) AS exposed_comm,
       COALESCE(b.collective - b.exposed_comm, 0) AS overlapped_comm,
       COALESCE(b.input_wait, 0) AS input_wait,
       COALESCE(b.host_sync, 0) AS host_sync,
       COALESCE(b.host, 0) AS host,
       COALESCE(b.transfer_exposed, 0) AS transfer_exposed,
       COALESCE(b.compile, 0) AS compile,
       s.dur - COALESCE(b.compute + b.exposed_comm + b.transfer_exposed + b.input_wait + b.host_sync + b.host
                        + b.compile, 0) AS idle,
       CASE WHEN b.collective > 0 THEN CAST(b.collective - b.exposed_comm AS DOUBLE) / b.collective END
           AS overlap_ratio
FROM steps AS s
LEFT JOIN sums AS b ON b.rank = s.rank AND b.step = s.step;

-- step_breakdown's `transfer_exposed` split by what the copies were: host-to-device (`h2d`: the
-- input batch), device-to-host (`d2h`: results read back, usually behind a sync), device-to-device
-- (`d2d`: clones, layout and contiguity copies, peer copies), memsets (`memset`), and copies whose
-- name does not say (`unknown`). The direction is read from the name as the source spells it
-- (CUDA/HIP `Memcpy HtoD (Pinned -> Device)`, `Memset (Device)`, the simulator's `h2d.batch`); the
-- one place that classifies copies. Each exposed instant (a copy or memset running, no compute or
-- communication) is shared evenly by the copies running then, so a step's rows sum to its
-- `transfer_exposed`.
-- @column rank        global rank
-- @column step        training step number
-- @column direction   h2d | d2h | d2d | memset | unknown
-- @column copies      copies (or memsets) of that direction that started in the step
-- @column dur         their summed duration, ns
-- @column exposed_ns  their share of the step's transfer_exposed time, ns
CREATE VIEW copy_exposure AS
WITH copies AS (
    SELECT rank, step, ts, ts + dur AS end_ts, dur,
           CASE WHEN kind = 'memory' OR regexp_matches(name, '(?i)memset') THEN 'memset'
                WHEN regexp_matches(name, '(?i)htod|h2d|host.?to.?device') THEN 'h2d'
                WHEN regexp_matches(name, '(?i)dtoh|d2h|device.?to.?host') THEN 'd2h'
                WHEN regexp_matches(name, '(?i)dtod|d2d|ptop|p2p|device.?to.?device|peer') THEN 'd2d'
                ELSE 'unknown' END AS direction
    FROM events
    WHERE kind IN ('transfer', 'memory') AND dur > 0 AND step IS NOT NULL
),
exposed AS (
    SELECT rank, step, ts, ts + dur AS end_ts, n_transfer
    FROM device_segments
    WHERE n_transfer > 0 AND n_compute = 0 AND n_comm = 0 AND step IS NOT NULL
),
shared AS (
    SELECT c.rank, e.step, c.direction,
           SUM(CAST(LEAST(c.end_ts, e.end_ts) - GREATEST(c.ts, e.ts) AS DOUBLE) / e.n_transfer) AS exposed_ns
    FROM copies AS c
    JOIN exposed AS e ON e.rank = c.rank AND e.ts < c.end_ts AND e.end_ts > c.ts
    GROUP BY c.rank, e.step, c.direction
),
counted AS (
    SELECT rank, step, direction, COUNT(*) AS copies, SUM(dur) AS dur
    FROM copies GROUP BY rank, step, direction
)
SELECT COALESCE(n.rank, s.rank) AS rank, COALESCE(n.step, s.step) AS step,
       COALESCE(n.direction, s.direction) AS direction, COALESCE(n.copies, 0) AS copies,
       COALESCE(n.dur, 0) AS dur, COALESCE(s.exposed_ns, 0) AS exposed_ns
FROM counted AS n
FULL JOIN shared AS s ON s.rank = n.rank AND s.step = n.step AND s.direction = n.direction
JOIN steps AS t ON t.rank = COALESCE(n.rank, s.rank) AND t.step = COALESCE(n.step, s.step);

-- step_breakdown's `host` time during which launched device work was still pending: then the
-- device, not the host, bounds the step (compute.host_bound takes it off). A launch call
-- (`cudaLaunchKernel`, `cudaGraphLaunch`, `cudaMemcpyAsync`, ..., HIP's alike) is pending from
-- its end to the first start of the device ops carrying its correlation id; a graph launch whose
-- kernels the trace does not show until the next blocking call (view host_sync_calls) returns,
-- else until its step ends; any other launch without recorded device ops is of unknown length,
-- not pending (a memset on a stream left out of the trace). Overlapping pending intervals count
-- once; only their part inside the host category counts (work queued while the device runs other
-- work is the normal asynchronous queue). Unlike view launch_pending (per step, any category),
-- this is the part that is host time.
-- @column rank        global rank
-- @column step        training step of the host-category segments
-- @column pending_ns  pending launch time inside the step's host category, ns
CREATE VIEW host_pending AS
WITH calls AS (
    SELECT * FROM _launch_calls
),
device_ops AS (
    SELECT * FROM _launched_ops
),
waited AS (  -- the earliest end of the blocking calls that start after each launch
    SELECT * FROM (
        SELECT rank, step, launched, graph, corr,
               MIN(sync_end) OVER (PARTITION BY rank ORDER BY launched, is_call
                                   ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS sync_end, is_call
        FROM (SELECT rank, step, launched, graph, corr, NULL AS sync_end, 1 AS is_call
              FROM calls WHERE corr IS NOT NULL
              UNION ALL
              SELECT rank, NULL, ts, NULL, NULL, ts + dur, 0 FROM host_sync_calls) AS marks) AS w
    WHERE is_call = 1
),
pending AS (
    SELECT c.rank, c.launched AS a,
           LEAST(COALESCE(o.first_start, CASE WHEN c.graph THEN COALESCE(c.sync_end, s.end_ts) END, c.launched),
                 s.end_ts) AS b
    FROM waited AS c
    LEFT JOIN device_ops AS o ON o.rank = c.rank AND o.corr = c.corr
    JOIN steps AS s ON s.rank = c.rank AND s.step = c.step
),
reached AS (  -- union of the pending intervals: islands of overlapping ones
    SELECT rank, a, b, MAX(b) OVER (PARTITION BY rank ORDER BY a, b
                                    ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
    FROM pending WHERE b > a
),
marked AS (
    SELECT rank, a, b, SUM(CASE WHEN reach IS NULL OR a > reach THEN 1 ELSE 0 END)
                           OVER (PARTITION BY rank ORDER BY a, b ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
                           AS island
    FROM reached
),
islands AS (
    SELECT rank, MIN(a) AS a, MAX(b) AS b FROM marked GROUP BY rank, island
)
SELECT g.rank, g.step, CAST(SUM(LEAST(i.b, g.ts + g.dur) - GREATEST(i.a, g.ts)) AS BIGINT) AS pending_ns
FROM device_segments AS g
JOIN islands AS i ON i.rank = g.rank AND i.a < g.ts + g.dur AND i.b > g.ts
WHERE g.step IS NOT NULL AND g.n_host > 0 AND g.n_host_sync = 0 AND g.n_compute = 0 AND g.n_comm = 0
      AND g.n_transfer = 0 AND g.n_input = 0
GROUP BY g.rank, g.step;
