-- Every interval of the device profile (tables device_instructions, device_dma, device_cc_ops)
-- as the unit it keeps busy: each engine (`tensor`, `vector`, `scalar`, `gpsimd`, `sync`, as
-- Explorer's engine names normalise), `compute` (any engine), `dma` (any DMA packet), `spill`
-- (packets on spill save / reload queues), `data_dma` (the other packets) and `cc` (collective
-- operations). A profile row without a step is step 0 (an Explorer capture is one execution).
-- @column rank      rank the profile belongs to
-- @column step      training step (0 when the profile does not say)
-- @column unit      engine or unit kept busy
-- @column start_ts  start, ns (the profile's clock)
-- @column end_ts    end, ns
CREATE VIEW _device_units AS
WITH instructions AS (
    SELECT rank, COALESCE(step, 0) AS step,
           CASE WHEN LOWER(engine) LIKE '%tensor%' OR LOWER(engine) IN ('pe', 'matmult') THEN 'tensor'
                WHEN LOWER(engine) LIKE '%vector%' OR LOWER(engine) IN ('dve', 'pool_vector') THEN 'vector'
                WHEN LOWER(engine) LIKE '%scalar%' OR LOWER(engine) IN ('act', 'activation') THEN 'scalar'
                WHEN LOWER(engine) LIKE '%gpsimd%' OR LOWER(engine) = 'pool' THEN 'gpsimd'
                WHEN LOWER(engine) LIKE '%sync%' OR LOWER(engine) = 'sp' THEN 'sync'
                ELSE LOWER(engine) END AS unit,
           start_ts, COALESCE(end_ts, start_ts + duration_ns) AS end_ts
    FROM device_instructions
    WHERE start_ts IS NOT NULL AND engine IS NOT NULL
),
dma AS (
    SELECT rank, COALESCE(step, 0) AS step, LOWER(COALESCE(queue_name, '')) LIKE '%spill%' AS spill,
           start_ts, COALESCE(end_ts, start_ts + duration_ns) AS end_ts
    FROM device_dma
    WHERE start_ts IS NOT NULL
)
SELECT rank, step, unit, start_ts, end_ts FROM instructions
UNION ALL SELECT rank, step, 'compute', start_ts, end_ts FROM instructions
UNION ALL SELECT rank, step, 'dma', start_ts, end_ts FROM dma
UNION ALL SELECT rank, step, CASE WHEN spill THEN 'spill' ELSE 'data_dma' END, start_ts, end_ts FROM dma
UNION ALL SELECT rank, COALESCE(step, 0), 'cc', start_ts, COALESCE(end_ts, start_ts + duration_ns)
          FROM device_cc_ops WHERE start_ts IS NOT NULL;

-- The busy time of each unit of _device_units as disjoint intervals: the union of its intervals
-- (Explorer's ActiveTime: an engine is active while at least one instruction runs on it).
-- @column rank      rank
-- @column step      training step
-- @column unit      engine or unit
-- @column start_ts  start of a busy stretch, ns
-- @column end_ts    its end, ns
CREATE VIEW _device_islands AS
WITH ordered AS (
    SELECT *, MAX(end_ts) OVER (PARTITION BY rank, step, unit ORDER BY start_ts, end_ts
                                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
    FROM _device_units
),
marked AS (
    SELECT *, SUM(CASE WHEN reach IS NULL OR start_ts > reach THEN 1 ELSE 0 END)
                  OVER (PARTITION BY rank, step, unit ORDER BY start_ts, end_ts ROWS UNBOUNDED PRECEDING) AS island
    FROM ordered
)
SELECT rank, step, unit, MIN(start_ts) AS start_ts, MAX(end_ts) AS end_ts
FROM marked GROUP BY rank, step, unit, island;

-- Time two units of the device are busy together, per rank and step: each non-tensor engine,
-- the DMA units and the collectives against the tensor engine (`other` = tensor), and the DMA
-- units and collectives against any compute engine (`other` = compute). One sweep over the
-- islands' edges per rank and step: B(t), the time `other` was busy before t, is
-- n(t) x t - the sum of its edges' signed times up to t (n(t): its islands open at t, 0 or 1),
-- the same whichever order ties take; an island [s, e) of a unit overlaps it B(e) - B(s).
-- @column rank        rank
-- @column step        training step
-- @column unit        the unit
-- @column other       `tensor` or `compute`
-- @column overlap_ns  time both are busy, ns
CREATE VIEW _device_overlap AS
WITH edges AS (
    SELECT i.rank, i.step, i.unit, CASE WHEN e.edge = 1 THEN i.start_ts ELSE i.end_ts END AS ts, e.edge
    FROM _device_islands AS i CROSS JOIN (SELECT 1 AS edge UNION ALL SELECT -1 AS edge) AS e
),
swept AS (
    SELECT rank, step, unit, edge,
           SUM(CASE WHEN unit = 'tensor' THEN edge ELSE 0 END) OVER w * ts
             - SUM(CASE WHEN unit = 'tensor' THEN edge * ts ELSE 0 END) OVER w AS tensor_before,
           SUM(CASE WHEN unit = 'compute' THEN edge ELSE 0 END) OVER w * ts
             - SUM(CASE WHEN unit = 'compute' THEN edge * ts ELSE 0 END) OVER w AS compute_before
    FROM edges
    WINDOW w AS (PARTITION BY rank, step ORDER BY ts ROWS UNBOUNDED PRECEDING)
),
per AS (
    SELECT rank, step, unit, SUM(-edge * tensor_before) AS with_tensor, SUM(-edge * compute_before) AS with_compute
    FROM swept
    WHERE unit IN ('vector', 'scalar', 'gpsimd', 'sync', 'dma', 'spill', 'data_dma', 'cc')
    GROUP BY rank, step, unit
)
SELECT p.rank, p.step, p.unit, o.other, CASE WHEN o.other = 'tensor' THEN p.with_tensor ELSE p.with_compute END AS overlap_ns
FROM per AS p CROSS JOIN (SELECT 'tensor' AS other UNION ALL SELECT 'compute' AS other) AS o
WHERE CASE WHEN o.other = 'tensor' THEN p.with_tensor ELSE p.with_compute END > 0
  AND (o.other = 'tensor' OR p.unit IN ('dma', 'spill', 'data_dma', 'cc'));

-- Each unit's busy time per rank and step of the device profile, the time it is busy while
-- the tensor engine idles and while no compute engine works, and the step's device span.
-- @column rank               rank
-- @column step               training step
-- @column unit               engine or unit (see _device_units)
-- @column busy_ns            union of its intervals, ns
-- @column tensor_idle_ns     busy while the tensor engine is not, ns (null for the tensor engine and `compute`)
-- @column compute_idle_ns    busy while no compute engine is, ns (DMA units and `cc` only)
-- @column device_ns          the step's device span on the rank: first start to last end of any unit, ns
CREATE VIEW device_units AS
WITH busy AS (
    SELECT rank, step, unit, SUM(end_ts - start_ts) AS busy_ns FROM _device_islands GROUP BY rank, step, unit
),
span AS (
    SELECT rank, step, MAX(end_ts) - MIN(start_ts) AS device_ns FROM _device_units GROUP BY rank, step
)
SELECT b.rank, b.step, b.unit, b.busy_ns,
       CASE WHEN b.unit NOT IN ('tensor', 'compute') THEN b.busy_ns - COALESCE(t.overlap_ns, 0) END AS tensor_idle_ns,
       CASE WHEN b.unit IN ('dma', 'spill', 'data_dma', 'cc') THEN b.busy_ns - COALESCE(c.overlap_ns, 0) END
           AS compute_idle_ns,
       s.device_ns
FROM busy AS b
JOIN span AS s ON s.rank = b.rank AND s.step = b.step
LEFT JOIN _device_overlap AS t ON t.rank = b.rank AND t.step = b.step AND t.unit = b.unit AND t.other = 'tensor'
LEFT JOIN _device_overlap AS c ON c.rank = b.rank AND c.step = b.step AND c.unit = b.unit AND c.other = 'compute';

-- Per rank, step and engine of the device profile (Neuron Explorer's per-engine summary):
-- instructions, their summed and merged (active) time, FLOPs raw and BF16-adjusted (Explorer's
-- adjusted_flops: FP32 x4, FP8 x0.5 on Trn2), transpose FLOPs, and the bytes they move.
-- @column rank                   rank
-- @column step                   training step (0 when the profile does not say)
-- @column engine                 tensor, vector, scalar, gpsimd, sync (Explorer's engine, normalised)
-- @column instructions           instructions executed
-- @column instruction_ns         summed instruction time, ns (overlaps counted twice)
-- @column active_ns              time at least one instruction runs on the engine, ns
-- @column active_share           active_ns over the step's device span
-- @column tensor_idle_ns         active while the tensor engine idles, ns (null for the tensor engine)
-- @column raw_flops              FLOPs as executed (Explorer raw_flops)
-- @column adjusted_flops         BF16-equivalent FLOPs (Explorer adjusted_flops)
-- @column transpose_flops        FLOPs of transposes run as matmuls (Explorer flops_transpose)
-- @column hbm_bytes              HBM bytes read and written by the instructions
-- @column sbuf_bytes             SBUF bytes read and written
-- @column spill_save_bytes       bytes saved from SBUF to HBM for lack of SBUF space
-- @column spill_reload_bytes     spilled bytes loaded back
-- @column device_ns              the step's device span on the rank, ns
CREATE VIEW engine_activity AS
WITH per AS (
    SELECT rank, COALESCE(step, 0) AS step,
           CASE WHEN LOWER(engine) LIKE '%tensor%' OR LOWER(engine) IN ('pe', 'matmult') THEN 'tensor'
                WHEN LOWER(engine) LIKE '%vector%' OR LOWER(engine) IN ('dve', 'pool_vector') THEN 'vector'
                WHEN LOWER(engine) LIKE '%scalar%' OR LOWER(engine) IN ('act', 'activation') THEN 'scalar'
                WHEN LOWER(engine) LIKE '%gpsimd%' OR LOWER(engine) = 'pool' THEN 'gpsimd'
                WHEN LOWER(engine) LIKE '%sync%' OR LOWER(engine) = 'sp' THEN 'sync'
                ELSE LOWER(engine) END AS engine,
           COALESCE(duration_ns, end_ts - start_ts) AS dur, raw_flops, adjusted_flops, flops_transpose,
           COALESCE(hbm_read_bytes, 0) + COALESCE(hbm_write_bytes, 0) AS hbm_bytes,
           COALESCE(sbuf_read_bytes, 0) + COALESCE(sbuf_write_bytes, 0) AS sbuf_bytes,
           spill_save_bytes, spill_reload_bytes
    FROM device_instructions
    WHERE start_ts IS NOT NULL AND engine IS NOT NULL
)
SELECT p.rank, p.step, p.engine, COUNT(*) AS instructions, SUM(p.dur) AS instruction_ns,
       MAX(u.busy_ns) AS active_ns, MAX(u.busy_ns) / NULLIF(MAX(u.device_ns), 0) AS active_share,
       MAX(u.tensor_idle_ns) AS tensor_idle_ns,
       SUM(p.raw_flops) AS raw_flops, SUM(COALESCE(p.adjusted_flops, p.raw_flops)) AS adjusted_flops,
       SUM(COALESCE(p.flops_transpose, 0)) AS transpose_flops,
       SUM(p.hbm_bytes) AS hbm_bytes, SUM(p.sbuf_bytes) AS sbuf_bytes,
       SUM(COALESCE(p.spill_save_bytes, 0)) AS spill_save_bytes,
       SUM(COALESCE(p.spill_reload_bytes, 0)) AS spill_reload_bytes,
       MAX(u.device_ns) AS device_ns
FROM per AS p
LEFT JOIN device_units AS u ON u.rank = p.rank AND u.step = p.step AND u.unit = p.engine
GROUP BY p.rank, p.step, p.engine;

-- DMA queues per rank and step of the device profile: packets, bytes, busy time and achieved
-- throughput; spill queues (save / reload of SBUF spills) are marked. Packets under 512 B are
-- small (Neuron Explorer flags small DMA transfers; a DMA's fixed cost dominates below that size).
-- @column rank               rank
-- @column step               training step
-- @column queue_name         DMA queue (Explorer queue_name)
-- @column queue_type         instruction, input, output, data, software_dynamic, hardware_dynamic, unknown
-- @column spill              whether the queue carries SBUF spill save / reload traffic
-- @column packets            DMA packets
-- @column bytes              bytes transferred
-- @column busy_ns            summed packet time, ns
-- @column mean_packet_bytes  bytes per packet
-- @column bytes_per_s        bytes over busy time
-- @column small_packets      packets under 512 B
-- @column small_ns           their summed time, ns
CREATE VIEW dma_queues AS
SELECT rank, COALESCE(step, 0) AS step, COALESCE(queue_name, '') AS queue_name, queue_type,
       LOWER(COALESCE(queue_name, '')) LIKE '%spill%' AS spill, COUNT(*) AS packets,
       SUM(transfer_bytes) AS bytes, SUM(COALESCE(duration_ns, end_ts - start_ts)) AS busy_ns,
       AVG(transfer_bytes) AS mean_packet_bytes,
       SUM(transfer_bytes) / NULLIF(SUM(COALESCE(duration_ns, end_ts - start_ts)) / 1e9, 0) AS bytes_per_s,
       COUNT(*) FILTER (WHERE transfer_bytes < 512) AS small_packets,
       COALESCE(SUM(COALESCE(duration_ns, end_ts - start_ts)) FILTER (WHERE transfer_bytes < 512), 0) AS small_ns
FROM device_dma
GROUP BY rank, COALESCE(step, 0), COALESCE(queue_name, ''), queue_type;

-- SBUF spills per rank and step: bytes saved to HBM and reloaded (the instructions' spill
-- counters), the reloads' share of HBM reads (Explorer flags more than 25 %), the time the spill
-- DMA queues are busy and the part of it the tensor engine idles through.
-- @column rank                rank
-- @column step                training step
-- @column spill_save_bytes    bytes saved from SBUF to HBM
-- @column spill_reload_bytes  bytes reloaded into SBUF
-- @column hbm_read_bytes      HBM bytes the instructions read
-- @column reload_share        spill_reload_bytes over hbm_read_bytes
-- @column spill_dma_ns        time the spill queues are busy, ns
-- @column spill_exposed_ns    of it, time the tensor engine idles, ns
-- @column device_ns           the step's device span on the rank, ns
CREATE VIEW device_spill AS
WITH bytes AS (
    SELECT rank, COALESCE(step, 0) AS step, SUM(COALESCE(spill_save_bytes, 0)) AS spill_save_bytes,
           SUM(COALESCE(spill_reload_bytes, 0)) AS spill_reload_bytes, SUM(COALESCE(hbm_read_bytes, 0)) AS hbm_read_bytes
    FROM device_instructions GROUP BY rank, COALESCE(step, 0)
),
span AS (
    SELECT rank, step, MAX(device_ns) AS device_ns FROM device_units GROUP BY rank, step
)
SELECT b.rank, b.step, b.spill_save_bytes, b.spill_reload_bytes, b.hbm_read_bytes,
       b.spill_reload_bytes / NULLIF(CAST(b.hbm_read_bytes AS DOUBLE), 0) AS reload_share,
       COALESCE(u.busy_ns, 0) AS spill_dma_ns, COALESCE(u.tensor_idle_ns, 0) AS spill_exposed_ns,
       d.device_ns
FROM bytes AS b
LEFT JOIN device_units AS u ON u.rank = b.rank AND u.step = b.step AND u.unit = 'spill'
LEFT JOIN span AS d ON d.rank = b.rank AND d.step = b.step
WHERE b.spill_save_bytes + b.spill_reload_bytes > 0 OR u.busy_ns > 0;

-- Tensor-engine throttling per rank and step (Explorer table Throttle: the hardware limits the
-- engine's utilization to k/n while a window lasts): windows, throttled time, the mean allowed
-- utilization, the tensor engine's active time inside the windows, and the time the limit costs:
-- active time inside a window x (1 - k/n), what the engine would have saved at full rate.
-- @column rank                 rank
-- @column step                 training step
-- @column windows              throttle windows
-- @column throttled_ns         summed window time, ns
-- @column mean_allowed         time-weighted mean of k/n
-- @column tensor_throttled_ns  tensor-engine active time inside the windows, ns
-- @column lost_ns              tensor_throttled_ns x (1 - k/n), summed over the windows, ns
-- @column device_ns            the step's device span on the rank, ns
CREATE VIEW throttling AS
WITH windows AS (
    SELECT rank, COALESCE(step, 0) AS step, timestamp AS start_ts, timestamp + duration AS end_ts, duration,
           CAST(k AS DOUBLE) / NULLIF(n, 0) AS allowed
    FROM device_throttle
    WHERE duration > 0 AND n > 0
),
numbered AS (
    SELECT *, ROW_NUMBER() OVER (PARTITION BY rank, step ORDER BY start_ts, end_ts, allowed) AS window_id FROM windows
),
edges AS (  -- the tensor engine's busy edges (+1, -1) and each window's (edge 0; read on side -1 at
            -- its start, +1 at its end)
    SELECT i.rank, i.step, CASE WHEN e.edge = 1 THEN i.start_ts ELSE i.end_ts END AS ts, e.edge,
           CAST(NULL AS BIGINT) AS window_id, 0 AS side
    FROM _device_islands AS i CROSS JOIN (SELECT 1 AS edge UNION ALL SELECT -1 AS edge) AS e
    WHERE i.unit = 'tensor'
    UNION ALL
    SELECT w.rank, w.step, CASE WHEN e.edge = 1 THEN w.start_ts ELSE w.end_ts END, 0, w.window_id, -e.edge
    FROM numbered AS w CROSS JOIN (SELECT 1 AS edge UNION ALL SELECT -1 AS edge) AS e
),
swept AS (  -- B(t), the tensor engine's busy time before t (as in _device_overlap)
    SELECT rank, step, window_id, side,
           SUM(edge) OVER w * ts - SUM(edge * ts) OVER w AS tensor_before
    FROM edges
    WINDOW w AS (PARTITION BY rank, step ORDER BY ts ROWS UNBOUNDED PRECEDING)
),
hit AS (  -- tensor-engine active time inside each window: B(end) - B(start)
    SELECT rank, step, window_id, SUM(side * tensor_before) AS tensor_ns
    FROM swept WHERE window_id IS NOT NULL GROUP BY rank, step, window_id
),
span AS (
    SELECT rank, step, MAX(device_ns) AS device_ns FROM device_units GROUP BY rank, step
)
SELECT w.rank, w.step, COUNT(*) AS windows, SUM(w.duration) AS throttled_ns,
       SUM(w.duration * w.allowed) / SUM(w.duration) AS mean_allowed,
       SUM(COALESCE(h.tensor_ns, 0)) AS tensor_throttled_ns,
       SUM(COALESCE(h.tensor_ns, 0) * (1 - LEAST(w.allowed, 1))) AS lost_ns,
       MAX(d.device_ns) AS device_ns
FROM numbered AS w
LEFT JOIN hit AS h ON h.rank = w.rank AND h.step = w.step AND h.window_id = w.window_id
LEFT JOIN span AS d ON d.rank = w.rank AND d.step = w.step
GROUP BY w.rank, w.step;

-- Collective operations of the device profile against the link peak and their group: bus
-- bandwidth (Explorer's, else computed from size and time as nccl-tests does) over the
-- NeuronLink peak per NeuronCore (`hardware`, the rank's instance type; the core-to-core DMA
-- peak without NeuronLink), and the op's time over the median of the same operation and size
-- across the profile's ranks and steps (Explorer flags outliers against the group median).
-- @column rank          rank
-- @column step          training step
-- @column op_id         Explorer op_id
-- @column operation     AllGather, AllReduce, ...
-- @column start_ts      start, ns
-- @column dur           time, ns
-- @column bytes         max(input_size, output_size)
-- @column bus_bandwidth bytes/s (Explorer's bus_bandwidth, else its algorithm bandwidth)
-- @column link_peak     the link's peak per NeuronCore, bytes/s
-- @column link_share    bus_bandwidth over link_peak
-- @column median_ns     median time of the same operation and size in the profile, ns
-- @column vs_median     dur over median_ns
CREATE VIEW device_collectives AS
WITH ops AS (
    SELECT c.rank, COALESCE(c.step, 0) AS step, c.op_id, c.operation, c.start_ts,
           COALESCE(c.duration_ns, c.end_ts - c.start_ts) AS dur,
           GREATEST(COALESCE(c.input_size, 0), COALESCE(c.output_size, 0)) AS bytes,
           COALESCE(c.bus_bandwidth, c.algorithm_bandwidth) AS bus_bandwidth,
           COALESCE(h.node_link_bytes_per_s, h.chip_link_bytes_per_s) AS link_peak
    FROM device_cc_ops AS c
    LEFT JOIN ranks AS r ON r.rank = c.rank
    LEFT JOIN hardware AS h ON h.instance_type = r.instance_type
),
medians AS (
    SELECT operation, bytes, PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY dur) AS median_ns
    FROM ops GROUP BY operation, bytes
)
SELECT o.rank, o.step, o.op_id, o.operation, o.start_ts, o.dur, o.bytes, o.bus_bandwidth, o.link_peak,
       o.bus_bandwidth / NULLIF(o.link_peak, 0) AS link_share, m.median_ns,
       o.dur / NULLIF(m.median_ns, 0) AS vs_median
FROM ops AS o JOIN medians AS m ON m.operation = o.operation AND m.bytes = o.bytes;

-- Tensor-engine utilization per rank and step of the device profile over its device span:
-- HFU (every tensor-engine FLOP, BF16-adjusted, as Explorer's hfu_estimated_percent), MFU (the
-- model's FLOPs: Explorer's model_flops where the profile has a Summary, else the job's
-- model_flops_per_step over its ranks), MBU (the instructions' HBM bytes over the HBM peak) and
-- the share of non-transpose tensor FLOPs the model does not need (recomputation). Peaks come
-- from the profile's Metadata (2 x rows x columns x clock, Explorer's formula; hbm_ddr_bandwidth)
-- else the hardware table (the rank's instance type).
-- @column rank             rank
-- @column step             training step
-- @column device_ns        the step's device span on the rank, ns
-- @column tensor_active_ns tensor-engine active time, ns
-- @column hardware_flops   tensor-engine FLOPs, BF16-adjusted
-- @column transpose_flops  of them, transposes
-- @column model_flops      the model's FLOPs for this rank and step; null when unknown
-- @column peak_flops       tensor-engine BF16 peak of one NeuronCore, FLOP/s
-- @column hbm_peak         HBM bandwidth of one NeuronCore, bytes/s
-- @column hfu              hardware_flops / (peak_flops x device span)
-- @column mfu              model_flops / (peak_flops x device span)
-- @column mbu              HBM bytes / (hbm_peak x device span)
-- @column recompute_share  1 - model_flops / (hardware_flops - transpose_flops): tensor work the model does not need
CREATE VIEW device_utilization AS
WITH tensor AS (
    SELECT rank, step, SUM(adjusted_flops) AS hardware_flops, SUM(transpose_flops) AS transpose_flops,
           MAX(active_ns) FILTER (WHERE engine = 'tensor') AS tensor_active_ns, SUM(hbm_bytes) AS hbm_bytes,
           MAX(device_ns) AS device_ns
    FROM engine_activity GROUP BY rank, step
),
flops AS (
    SELECT rank, step, SUM(adjusted_flops) AS hardware_flops, SUM(transpose_flops) AS transpose_flops
    FROM engine_activity WHERE engine = 'tensor' GROUP BY rank, step
),
meta AS (
    SELECT rank, MAX(2.0 * tensor_engine_num_rows * tensor_engine_num_cols * tensor_engine_clock_freq * 1e9) AS peak,
           MAX(hbm_ddr_bandwidth) AS hbm
    FROM explorer_metadata GROUP BY rank
),
model AS (
    SELECT rank, COALESCE(step, 0) AS step, MAX(model_flops) AS model_flops FROM explorer_summary
    WHERE model_flops > 0 GROUP BY rank, COALESCE(step, 0)
)
SELECT t.rank, t.step, t.device_ns, COALESCE(t.tensor_active_ns, 0) AS tensor_active_ns,
       COALESCE(f.hardware_flops, 0) AS hardware_flops, COALESCE(f.transpose_flops, 0) AS transpose_flops,
       COALESCE(m.model_flops, j.model_flops_per_step / NULLIF(j.world_size, 0)) AS model_flops,
       COALESCE(x.peak, h.tensor_bf16_flops) AS peak_flops, COALESCE(x.hbm, h.hbm_bytes_per_s_per_core) AS hbm_peak,
       COALESCE(f.hardware_flops, 0) / (COALESCE(x.peak, h.tensor_bf16_flops) * t.device_ns / 1e9) AS hfu,
       COALESCE(m.model_flops, j.model_flops_per_step / NULLIF(j.world_size, 0))
           / (COALESCE(x.peak, h.tensor_bf16_flops) * t.device_ns / 1e9) AS mfu,
       t.hbm_bytes / (COALESCE(x.hbm, h.hbm_bytes_per_s_per_core) * t.device_ns / 1e9) AS mbu,
       1 - COALESCE(m.model_flops, j.model_flops_per_step / NULLIF(j.world_size, 0))
           / NULLIF(f.hardware_flops - f.transpose_flops, 0) AS recompute_share
FROM tensor AS t
LEFT JOIN flops AS f ON f.rank = t.rank AND f.step = t.step
LEFT JOIN meta AS x ON x.rank = t.rank
LEFT JOIN model AS m ON m.rank = t.rank AND m.step = t.step
LEFT JOIN ranks AS r ON r.rank = t.rank
LEFT JOIN hardware AS h ON h.instance_type = r.instance_type
CROSS JOIN run_job AS j
WHERE t.device_ns > 0;

-- trnprof's device figures beside Neuron Explorer's own (table explorer_summary, one row per
-- profile), per rank: engine active times, DMA active time, collective time, tensor FLOPs,
-- spill bytes and HFU. Each agrees when within 1 % (`within_tolerance`); HFU is compared as
-- trnprof computes it over the span of the profile's events and Explorer over total_time (the
-- runtime's start / stop notifications), so it agrees only when the two spans do: `note` says
-- by how much they differ.
-- @column rank              rank
-- @column metric            the figure (Explorer's Summary field name)
-- @column trnprof_value     trnprof's value (seconds, FLOPs, bytes or percent as Explorer's)
-- @column explorer_value    Explorer's value
-- @column relative_diff     |trnprof - Explorer| / Explorer
-- @column within_tolerance  relative_diff <= 0.01
-- @column note              why a figure may differ
CREATE VIEW explorer_agreement AS
WITH ours AS (
    SELECT rank,
           SUM(busy_ns) FILTER (WHERE unit = 'tensor') / 1e9 AS tensor_engine_active_time,
           SUM(busy_ns) FILTER (WHERE unit = 'vector') / 1e9 AS vector_engine_active_time,
           SUM(busy_ns) FILTER (WHERE unit = 'scalar') / 1e9 AS scalar_engine_active_time,
           SUM(busy_ns) FILTER (WHERE unit = 'gpsimd') / 1e9 AS gpsimd_engine_active_time,
           SUM(busy_ns) FILTER (WHERE unit = 'sync') / 1e9 AS sync_engine_active_time,
           SUM(busy_ns) FILTER (WHERE unit = 'dma') / 1e9 AS dma_active_time
    FROM device_units GROUP BY rank
),
flops AS (
    SELECT rank, SUM(raw_flops) FILTER (WHERE engine = 'tensor') AS hardware_flops,
           SUM(transpose_flops) FILTER (WHERE engine = 'tensor') AS transpose_flops,
           SUM(spill_save_bytes) AS spill_save_bytes, SUM(spill_reload_bytes) AS spill_reload_bytes
    FROM engine_activity GROUP BY rank
),
cc AS (
    SELECT rank, SUM(COALESCE(duration_ns, end_ts - start_ts)) / 1e9 AS cc_op_time FROM device_cc_ops GROUP BY rank
),
util AS (
    SELECT rank, 100 * SUM(hfu * device_ns) / SUM(device_ns) AS hfu, SUM(device_ns) / 1e9 AS span_s
    FROM device_utilization GROUP BY rank
),
theirs AS (
    SELECT rank, SUM(tensor_engine_active_time) AS tensor_engine_active_time,
           SUM(vector_engine_active_time) AS vector_engine_active_time,
           SUM(scalar_engine_active_time) AS scalar_engine_active_time,
           SUM(gpsimd_engine_active_time) AS gpsimd_engine_active_time,
           SUM(sync_engine_active_time) AS sync_engine_active_time, SUM(dma_active_time) AS dma_active_time,
           SUM(cc_op_time) AS cc_op_time, SUM(hardware_flops) AS hardware_flops,
           SUM(transpose_flops) AS transpose_flops, SUM(spill_save_bytes) AS spill_save_bytes,
           SUM(spill_reload_bytes) AS spill_reload_bytes,
           SUM(hfu_estimated_percent * total_time) / NULLIF(SUM(total_time), 0) AS hfu, SUM(total_time) AS total_time
    FROM explorer_summary GROUP BY rank
),
joined AS (
    SELECT t.*, o.tensor_engine_active_time AS o_tensor, o.vector_engine_active_time AS o_vector,
           o.scalar_engine_active_time AS o_scalar, o.gpsimd_engine_active_time AS o_gpsimd,
           o.sync_engine_active_time AS o_sync, o.dma_active_time AS o_dma, c.cc_op_time AS o_cc,
           f.hardware_flops AS o_hardware_flops, f.transpose_flops AS o_transpose_flops,
           f.spill_save_bytes AS o_spill_save, f.spill_reload_bytes AS o_spill_reload, u.hfu AS o_hfu, u.span_s
    FROM theirs AS t
    LEFT JOIN ours AS o ON o.rank = t.rank
    LEFT JOIN flops AS f ON f.rank = t.rank
    LEFT JOIN cc AS c ON c.rank = t.rank
    LEFT JOIN util AS u ON u.rank = t.rank
),
pairs AS (
    SELECT rank, 'tensor_engine_active_time' AS metric, CAST(COALESCE(o_tensor, 0) AS DOUBLE) AS ours, CAST(tensor_engine_active_time AS DOUBLE) AS theirs, '' AS note FROM joined
    UNION ALL
    SELECT rank, 'vector_engine_active_time' AS metric, CAST(COALESCE(o_vector, 0) AS DOUBLE) AS ours, CAST(vector_engine_active_time AS DOUBLE) AS theirs, '' AS note FROM joined
    UNION ALL
    SELECT rank, 'scalar_engine_active_time' AS metric, CAST(COALESCE(o_scalar, 0) AS DOUBLE) AS ours, CAST(scalar_engine_active_time AS DOUBLE) AS theirs, '' AS note FROM joined
    UNION ALL
    SELECT rank, 'gpsimd_engine_active_time' AS metric, CAST(COALESCE(o_gpsimd, 0) AS DOUBLE) AS ours, CAST(gpsimd_engine_active_time AS DOUBLE) AS theirs, '' AS note FROM joined
    UNION ALL
    SELECT rank, 'sync_engine_active_time' AS metric, CAST(COALESCE(o_sync, 0) AS DOUBLE) AS ours, CAST(sync_engine_active_time AS DOUBLE) AS theirs, '' AS note FROM joined
    UNION ALL
    SELECT rank, 'dma_active_time' AS metric, CAST(COALESCE(o_dma, 0) AS DOUBLE) AS ours, CAST(dma_active_time AS DOUBLE) AS theirs, '' AS note FROM joined
    UNION ALL
    SELECT rank, 'cc_op_time' AS metric, CAST(COALESCE(o_cc, 0) AS DOUBLE) AS ours, CAST(cc_op_time AS DOUBLE) AS theirs, '' AS note FROM joined
    UNION ALL
    SELECT rank, 'hardware_flops' AS metric, CAST(COALESCE(o_hardware_flops, 0) AS DOUBLE) AS ours, CAST(hardware_flops AS DOUBLE) AS theirs, '' AS note FROM joined
    UNION ALL
    SELECT rank, 'transpose_flops' AS metric, CAST(COALESCE(o_transpose_flops, 0) AS DOUBLE) AS ours, CAST(transpose_flops AS DOUBLE) AS theirs, '' AS note FROM joined
    UNION ALL
    SELECT rank, 'spill_save_bytes' AS metric, CAST(COALESCE(o_spill_save, 0) AS DOUBLE) AS ours, CAST(spill_save_bytes AS DOUBLE) AS theirs, '' AS note FROM joined
    UNION ALL
    SELECT rank, 'spill_reload_bytes' AS metric, CAST(COALESCE(o_spill_reload, 0) AS DOUBLE) AS ours, CAST(spill_reload_bytes AS DOUBLE) AS theirs, '' AS note FROM joined
    UNION ALL
    SELECT rank, 'hfu_estimated_percent', o_hfu, hfu,
           'trnprof divides by the events'' span, Explorer by total_time: they differ by '
           || CAST(ROUND(100 * ABS(span_s - total_time) / NULLIF(total_time, 0), 1) AS VARCHAR) || ' %' FROM joined
)
SELECT rank, metric, ours AS trnprof_value, theirs AS explorer_value,
       ABS(ours - theirs) / NULLIF(ABS(theirs), 0) AS relative_diff,
       COALESCE(ABS(ours - theirs) <= 0.01 * ABS(theirs), FALSE) AS within_tolerance, note
FROM pairs
WHERE theirs IS NOT NULL;
