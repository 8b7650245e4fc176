-- @requires collectives, memory, ops, steady_state, step_breakdown

-- Per steady-state step (step_phases, warm-up excluded): step_breakdown's buckets averaged over
-- the ranks that recorded the step. The per-rank view of where a step's time went, which runs
-- of different world sizes share; `trnprof diff` compares two runs on it.
-- @column step          training step number
-- @column ranks         ranks that recorded the step
-- @column dur           mean rank step duration, ns
-- @column compute       mean compute time, ns
-- @column exposed_comm  mean exposed communication time, ns
-- @column input_wait    mean input wait, ns
-- @column host          mean host time with the device idle, ns
-- @column transfer_exposed mean exposed transfer time, ns
-- @column compile       mean exposed compile time, ns
-- @column idle          mean idle time, ns
-- @column host_sync     mean time the host blocked on the device with no device work, ns
CREATE VIEW steady_step_means AS
SELECT b.step, COUNT(*) AS ranks, AVG(b.dur) AS dur, AVG(b.compute) AS compute,
       AVG(b.exposed_comm) AS exposed_comm, AVG(b.input_wait) AS input_wait, AVG(b.host) AS host,
       AVG(b.transfer_exposed) AS transfer_exposed, AVG(b.compile) AS compile,
       AVG(b.idle) AS idle, AVG(b.host_sync) AS host_sync
FROM step_breakdown AS b
JOIN step_phases AS p ON p.step = b.step
WHERE NOT p.warmup
GROUP BY b.step;

-- Per steady-state step, event kind, op name and lane class: how many events ran and for how
-- long in total, over all ranks. The lane class is the lane with thread and process ids masked
-- (`host/tid-4711` -> `host/tid-*`), since those ids differ from one run of a job to the next;
-- Trn1 lanes (`nc/tensor`) and GPU streams are kept as they are. Step events are left out.
-- Aggregated from _op_stats (stored per batch of ranks), so it reads no event again.
-- @column step   training step number
-- @column kind   event kind
-- @column name   op name as the source spells it
-- @column lane   lane class
-- @column n      events
-- @column dur    summed duration over ranks, ns
CREATE VIEW steady_op_totals AS
WITH by_lane AS (
    SELECT o.step, o.kind, o.name, o.lane, SUM(o.n) AS n, SUM(o.dur) AS dur
    FROM _op_stats AS o
    JOIN step_phases AS p ON p.step = o.step
    WHERE NOT p.warmup AND o.kind <> 'step'
    GROUP BY o.step, o.kind, o.name, o.lane
)
SELECT step, kind, name, regexp_replace(lane, '(tid|pid)-[0-9]+', '\1-*', 'g') AS lane, SUM(n) AS n, SUM(dur) AS dur
FROM by_lane
GROUP BY step, kind, name, regexp_replace(lane, '(tid|pid)-[0-9]+', '\1-*', 'g');

-- Collectives of the steady-state steps by op and size class: the class is the power of two at
-- or below the message size (bytes as `collectives` counts them), so 3 MiB and 3.5 MiB messages
-- share the 2 MiB class. Bus bandwidth is the median over the class's instances.
-- @column coll_op        collective kind
-- @column size_class     message size class (a power of two), bytes; null when sizes are unknown
-- @column n              matched collective instances
-- @column bytes          summed message size, bytes; null when unknown
-- @column transfer_ns    summed transfer time (the collectives view's transfer_dur), ns
-- @column busbw_median   median bus bandwidth, bytes/s; null when unknown
CREATE VIEW steady_collective_classes AS
SELECT c.coll_op,
       CAST(POWER(2, FLOOR(LOG2(NULLIF(c.bytes, 0)))) AS BIGINT) AS size_class,
       COUNT(*) AS n, SUM(c.bytes) AS bytes, SUM(c.transfer_dur) AS transfer_ns,
       PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY c.busbw) AS busbw_median
FROM collectives AS c
JOIN step_phases AS p ON p.step = c.step
WHERE NOT p.warmup
GROUP BY c.coll_op, CAST(POWER(2, FLOOR(LOG2(NULLIF(c.bytes, 0)))) AS BIGINT);

-- Device memory at each rank's peak by category, the largest over ranks (memory_at_peak).
-- @column category    memory category
-- @column bytes       largest resident bytes of the category at a rank's peak
-- @column peak_bytes  largest total peak over ranks, bytes
CREATE VIEW peak_memory_categories AS
SELECT category, MAX(bytes) AS bytes, MAX(peak_bytes) AS peak_bytes
FROM memory_at_peak
GROUP BY category;
