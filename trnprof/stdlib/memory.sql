-- @requires steps

-- Device-memory residency samples by category: counters named `hbm.<category>` in bytes
-- (params, grads, optimizer_state, activations, runtime, ...). Categories are additive and a
-- collector samples all of a rank's categories at the same ts.
-- @column rank      global rank
-- @column ts        sample time, ns
-- @column category  memory category (the counter name without `hbm.`)
-- @column bytes     resident bytes in that category
CREATE VIEW memory_timeline AS
SELECT rank, ts, SUBSTRING(name, 5) AS category, value AS bytes
FROM counters
WHERE name LIKE 'hbm.%';

-- Total device memory per rank and sample time, with the rank's capacity.
-- @column rank            global rank
-- @column ts              sample time, ns
-- @column bytes           resident bytes, all categories
-- @column capacity_bytes  device memory the rank may use; null when unknown
CREATE VIEW memory_totals AS
SELECT m.rank, m.ts, SUM(m.bytes) AS bytes, MAX(r.hbm_capacity_bytes) AS capacity_bytes
FROM memory_timeline AS m
LEFT JOIN ranks AS r ON r.rank = m.rank
GROUP BY m.rank, m.ts;

-- Peak device memory per rank.
-- @column rank            global rank
-- @column peak_bytes      largest total residency sampled, bytes
-- @column capacity_bytes  device memory the rank may use; null when unknown
-- @column peak_fraction   peak_bytes / capacity_bytes; null when capacity is unknown
CREATE VIEW memory_peak AS
SELECT rank, MAX(bytes) AS peak_bytes, MAX(capacity_bytes) AS capacity_bytes,
       MAX(bytes) / NULLIF(MAX(capacity_bytes), 0) AS peak_fraction
FROM memory_totals
GROUP BY rank;

-- Peak device memory of each rank in each step: the largest total residency sampled inside the
-- step's window.
-- @column rank            global rank
-- @column step            training step
-- @column peak_bytes      largest total residency sampled in the step, bytes
-- @column capacity_bytes  device memory the rank may use; null when unknown
CREATE VIEW step_memory AS
SELECT s.rank, s.step, MAX(m.bytes) AS peak_bytes, MAX(m.capacity_bytes) AS capacity_bytes
FROM steps AS s
JOIN memory_totals AS m ON m.rank = s.rank AND m.ts >= s.ts AND m.ts < s.end_ts
GROUP BY s.rank, s.step;

-- Device memory by category at each rank's peak: what fills memory when it is fullest (the
-- earliest sample holding the peak).
-- @column rank            global rank
-- @column ts              time of the peak sample, ns
-- @column category        memory category
-- @column bytes           resident bytes of the category at the peak
-- @column peak_bytes      total resident bytes at the peak
-- @column capacity_bytes  device memory the rank may use; null when unknown
CREATE VIEW memory_at_peak AS
WITH peak AS (
    SELECT rank, MIN(ts) AS ts, MAX(bytes) AS peak_bytes, MAX(capacity_bytes) AS capacity_bytes
    FROM (SELECT t.rank, t.ts, t.bytes, t.capacity_bytes,
                 MAX(t.bytes) OVER (PARTITION BY t.rank) AS rank_peak
          FROM memory_totals AS t) AS ranked
    WHERE bytes = rank_peak
    GROUP BY rank
)
SELECT p.rank, p.ts, m.category, m.bytes, p.peak_bytes, p.capacity_bytes
FROM peak AS p
JOIN memory_timeline AS m ON m.rank = p.rank AND m.ts = p.ts;

-- Peak of every memory counter of each rank in each step, for rules that follow memory over
-- steps (memory.growth): device memory in total (`hbm`: all hbm.* categories, with the rank's
-- capacity), each device category (`hbm.<category>`), and each host-memory counter in bytes
-- (`host.allocated` from the PyTorch profiler's [memory] events, neuron-monitor's
-- `host.memory.memory_used_bytes`, `host_mem.<category>`, `runtime.memory.host`; capacities,
-- named `*total*`, are left out).
-- @column rank            global rank
-- @column step            training step
-- @column counter         `hbm` (device total), a device category `hbm.<category>` or a host counter name
-- @column domain          `device` or `host`
-- @column peak_bytes      largest value sampled in the step, bytes
-- @column capacity_bytes  device memory the rank may use, for device counters; null for host counters and when unknown
CREATE VIEW memory_counter_steps AS
WITH samples AS (
    SELECT rank, ts, 'hbm' AS counter, 'device' AS domain, bytes, capacity_bytes FROM memory_totals
    UNION ALL
    SELECT m.rank, m.ts, 'hbm.' || m.category, 'device', m.bytes, r.hbm_capacity_bytes
    FROM memory_timeline AS m LEFT JOIN ranks AS r ON r.rank = m.rank
    UNION ALL
    SELECT rank, ts, name, 'host', value, CAST(NULL AS DOUBLE)
    FROM counters
    WHERE unit = 'bytes' AND (name LIKE 'host.%' OR name LIKE 'host_mem.%' OR name = 'runtime.memory.host')
      AND name NOT LIKE '%total%'
)
SELECT s.rank, s.step, m.counter, MIN(m.domain) AS domain, MAX(m.bytes) AS peak_bytes,
       MAX(m.capacity_bytes) AS capacity_bytes
FROM steps AS s
JOIN samples AS m ON m.rank = s.rank AND m.ts >= s.ts AND m.ts < s.end_ts
GROUP BY s.rank, s.step, m.counter;
