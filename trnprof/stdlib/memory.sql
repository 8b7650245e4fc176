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
