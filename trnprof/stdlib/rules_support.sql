-- Per rank, step, event kind and op name: how many events, how long they ran in total, the work
-- and bytes they report, and for compute ops the data type the source states. The one scan of
-- the events that the per-kind and per-type views below aggregate further. The data type comes
-- from the event's args: `dtype`, else the first of Kineto's `Input type` list (lower case).
-- (json_extract_string is DuckDB's spelling of SQL/JSON JSON_VALUE, which DuckDB returns quoted.)
-- @column rank        global rank
-- @column step        training step; null for events outside every step
-- @column kind        event kind
-- @column name        op name as the source spells it
-- @column dtype       data type stated in the args of compute events, lower case; null when none
-- @column n           events
-- @column dur         summed duration, ns
-- @column flops       summed FLOPs of the events that report them; null when none do
-- @column n_flops     events that report FLOPs
-- @column bytes       summed bytes of the events that report them; null when none do
-- @column n_bytes     events that report bytes
CREATE VIEW op_stats AS
WITH typed AS (
    SELECT rank, step, kind, name, dur, flops, bytes,
           CASE WHEN kind = 'compute' AND args IS NOT NULL
                THEN LOWER(COALESCE(json_extract_string(args, '$.dtype'),
                                    json_extract_string(args, '$."Input type"[0]'))) END AS dtype
    FROM events
)
SELECT rank, step, kind, name, dtype, COUNT(*) AS n, SUM(dur) AS dur, SUM(flops) AS flops,
       COUNT(flops) AS n_flops, SUM(bytes) AS bytes, COUNT(bytes) AS n_bytes
FROM typed
GROUP BY rank, step, kind, name, dtype;

-- Per rank, step and event kind: how many events, how long they ran in total, and the work and
-- bytes they report (op counts, FLOPs, compiles). Durations are plain sums: overlapping events
-- of one kind count once each.
-- @column rank        global rank
-- @column step        training step; null for events outside every step
-- @column kind        event kind
-- @column n           events
-- @column dur         summed duration, ns
-- @column flops       summed FLOPs of the events that report them; null when none do
-- @column n_flops     events that report FLOPs
-- @column bytes       summed bytes of the events that report them; null when none do
-- @column n_bytes     events that report bytes
CREATE VIEW event_stats AS
SELECT rank, step, kind, SUM(n) AS n, SUM(dur) AS dur, SUM(flops) AS flops, SUM(n_flops) AS n_flops,
       SUM(bytes) AS bytes, SUM(n_bytes) AS n_bytes
FROM op_stats
GROUP BY rank, step, kind;

-- Collective and point-to-point events only: the columns the communication views below need,
-- so they share one filtered pass over the events.
-- @column rank        global rank
-- @column ts          start, ns
-- @column dur         duration, ns
-- @column step        training step, when known
-- @column coll_op     collective kind
-- @column coll_group  replica group
-- @column coll_seq    sequence number within the group
-- @column bytes       per-rank payload, bytes, when known
CREATE VIEW comm_events AS
SELECT rank, ts, dur, step, coll_op, coll_group, coll_seq, bytes
FROM events
WHERE kind IN ('collective', 'p2p');

-- What a run holds, in one row of flags: a rule lists the flags it needs under `requires` and
-- is reported as not evaluated, with the flag's description, when one is false. Every flag is
-- true or false, never null (a run without events has every event flag false).
-- @column steps             the run has step events, so per-step timing is known
-- @column multi_rank        more than one rank recorded steps
-- @column compute           the run has compute events
-- @column flops             some compute events report their FLOPs
-- @column collectives       the run has collective or p2p events
-- @column collective_bytes  some collective events report their payload bytes
-- @column input             the run has input (data loading) events
-- @column transfer          the run has transfer (host-to-device copy) or memory events
-- @column compile           the run has compile events
-- @column hbm               the run has device-memory counters (hbm.*)
-- @column hbm_capacity      the ranks table gives each rank's device-memory capacity
-- @column topology          the ranks table places every rank on a node
-- @column data_parallel     the ranks table has more than one data-parallel coordinate
-- @column pipeline          the ranks table has more than one pipeline stage
CREATE VIEW signals AS
WITH kinds AS (
    SELECT MAX(CASE WHEN kind = 'step' THEN 1 ELSE 0 END) AS steps,
           MAX(CASE WHEN kind = 'compute' THEN 1 ELSE 0 END) AS compute,
           MAX(CASE WHEN kind = 'compute' AND n_flops > 0 THEN 1 ELSE 0 END) AS flops,
           MAX(CASE WHEN kind IN ('collective', 'p2p') THEN 1 ELSE 0 END) AS collectives,
           MAX(CASE WHEN kind = 'collective' AND n_bytes > 0 THEN 1 ELSE 0 END) AS collective_bytes,
           MAX(CASE WHEN kind = 'input' THEN 1 ELSE 0 END) AS input,
           MAX(CASE WHEN kind IN ('transfer', 'memory') THEN 1 ELSE 0 END) AS transfer,
           MAX(CASE WHEN kind = 'compile' THEN 1 ELSE 0 END) AS compile,
           COUNT(DISTINCT CASE WHEN kind = 'step' THEN rank END) AS step_ranks
    FROM event_stats
),
memory AS (
    SELECT COUNT(*) AS samples FROM memory_timeline
),
layout AS (
    SELECT COUNT(*) AS n_ranks, COUNT(node) AS with_node, COUNT(hbm_capacity_bytes) AS with_capacity,
           COUNT(DISTINCT dp_rank) AS dp, COUNT(DISTINCT pp_rank) AS pp
    FROM ranks
)
SELECT COALESCE(k.steps = 1, FALSE) AS steps, k.step_ranks > 1 AS multi_rank,
       COALESCE(k.compute = 1, FALSE) AS compute, COALESCE(k.flops = 1, FALSE) AS flops,
       COALESCE(k.collectives = 1, FALSE) AS collectives,
       COALESCE(k.collective_bytes = 1, FALSE) AS collective_bytes, COALESCE(k.input = 1, FALSE) AS input,
       COALESCE(k.transfer = 1, FALSE) AS transfer, COALESCE(k.compile = 1, FALSE) AS compile, m.samples > 0 AS hbm,
       l.with_capacity > 0 AS hbm_capacity, l.n_ranks > 0 AND l.with_node = l.n_ranks AS topology,
       l.dp > 1 AS data_parallel, l.pp > 1 AS pipeline
FROM kinds AS k, memory AS m, layout AS l;

-- Compute time by data type, per rank and step, split into matrix multiplies and other ops.
-- The data type is op_stats' (normalised: float/float32/fp32 -> fp32, bfloat16/bf16 -> bf16,
-- half/float16/fp16 -> fp16), else cuBLAS's FP32 kernel naming (`sgemm`). Matrix multiplies are
-- ops whose name holds matmul, gemm, linear, dot, conv or is aten::mm / aten::bmm / aten::addmm.
-- @column rank       global rank
-- @column step       training step; null outside every step
-- @column is_matmul  true for matrix-multiply ops
-- @column dtype      fp32, bf16, fp16, another source spelling, or null when unknown
-- @column n          ops
-- @column dur        summed duration, ns
-- @column flops      summed FLOPs; null when not reported
CREATE VIEW compute_dtypes AS
WITH classified AS (
    SELECT rank, step, n, dur, flops,
           (LOWER(name) LIKE '%matmul%' OR LOWER(name) LIKE '%gemm%' OR LOWER(name) LIKE '%linear%'
            OR LOWER(name) LIKE '%dot%' OR LOWER(name) LIKE '%conv%'
            OR LOWER(name) IN ('aten::mm', 'aten::bmm', 'aten::addmm')) AS is_matmul,
           CASE WHEN dtype IN ('float', 'float32', 'fp32', 'torch.float32', 'f32') THEN 'fp32'
                WHEN dtype IN ('c10::bfloat16', 'bfloat16', 'bf16', 'torch.bfloat16') THEN 'bf16'
                WHEN dtype IN ('c10::half', 'half', 'float16', 'fp16', 'torch.float16') THEN 'fp16'
                WHEN dtype IS NOT NULL AND dtype <> '' THEN dtype
                WHEN LOWER(name) LIKE '%sgemm%' THEN 'fp32'
           END AS dtype
    FROM op_stats
    WHERE kind = 'compute'
)
SELECT rank, step, is_matmul, dtype, SUM(n) AS n, SUM(dur) AS dur, SUM(flops) AS flops
FROM classified
GROUP BY rank, step, is_matmul, dtype;

-- Per rank and step, how much of its collective time a rank spent waiting for the last rank of
-- each collective to arrive (synchronisation), as opposed to moving data. For each matched
-- collective the wait is the part of the rank's event before the instance's last arrival.
-- @column rank           global rank
-- @column step           training step; null outside every step
-- @column n              matched collective events of the rank
-- @column collective_ns  summed duration of those events, ns
-- @column wait_ns        summed time waiting for late ranks, ns
-- @column transfer_ns    collective_ns - wait_ns, ns
CREATE VIEW collective_waits AS
WITH per_event AS (
    SELECT e.rank, e.step, e.dur,
           LEAST(e.dur, GREATEST(0, c.last_start - e.ts)) AS wait
    FROM comm_events AS e
    JOIN collectives AS c
      ON c.coll_op = e.coll_op AND c.coll_group = e.coll_group AND c.coll_seq = e.coll_seq
    WHERE e.coll_seq IS NOT NULL
)
SELECT rank, step, COUNT(*) AS n, SUM(dur) AS collective_ns, SUM(wait) AS wait_ns,
       SUM(dur) - SUM(wait) AS transfer_ns
FROM per_event
GROUP BY rank, step;

-- Per rank and step, the parts of communication time that are not data transfer, each split
-- into the part hidden under compute and the exposed part: waiting for the last rank of a
-- collective to arrive (collective_waits) and point-to-point time. Estimated from the step's
-- totals, without a second interval sweep (one cost as much as step_breakdown itself on a
-- 1,024-rank run): the time compute hides goes to waits first, then to p2p, then to transfers,
-- the usual order when a rank starts a collective early and waits for its peers under its
-- remaining compute. Exact when nothing is hidden or all hidden time is waiting; otherwise the
-- exposed wait can be low by at most min(wait, overlapped_comm). With step_breakdown's
-- collective and exposed_comm: exposed transfer = exposed_comm - wait_exposed - p2p_exposed.
-- @column rank          global rank
-- @column step          training step number
-- @column wait_ns       time waiting for late ranks, ns (summed over collectives)
-- @column wait_hidden   part of wait_ns under compute (estimate), ns
-- @column wait_exposed  part of wait_ns with no compute running (estimate), ns
-- @column p2p_ns        point-to-point time, ns (summed over events)
-- @column p2p_hidden    part of p2p_ns under compute (estimate), ns
-- @column p2p_exposed   part of p2p_ns with no compute running (estimate), ns
CREATE VIEW comm_exposure AS
WITH totals AS (
    SELECT b.rank, b.step, b.overlapped_comm, b.exposed_comm,
           COALESCE(w.wait_ns, 0) AS wait_ns, COALESCE(p.dur, 0) AS p2p_ns
    FROM step_breakdown AS b
    LEFT JOIN collective_waits AS w ON w.rank = b.rank AND w.step = b.step
    LEFT JOIN event_stats AS p ON p.rank = b.rank AND p.step = b.step AND p.kind = 'p2p'
),
waits AS (
    SELECT *, LEAST(wait_ns, overlapped_comm) AS wait_hidden,
           LEAST(wait_ns - LEAST(wait_ns, overlapped_comm), exposed_comm) AS wait_exposed
    FROM totals
)
SELECT rank, step, wait_ns, wait_hidden, wait_exposed, p2p_ns,
       LEAST(p2p_ns, overlapped_comm - wait_hidden) AS p2p_hidden,
       LEAST(p2p_ns - LEAST(p2p_ns, overlapped_comm - wait_hidden), exposed_comm - wait_exposed) AS p2p_exposed
FROM waits;

-- Per rank, node and collective op: the time the rank's collectives took once every rank had
-- arrived (the data movement), per instance. Ranks whose links are slow show longer transfers
-- than their peers on the same collectives.
-- @column rank          global rank
-- @column node          node of the rank; null when unknown
-- @column coll_op       collective kind
-- @column coll_group    replica group
-- @column n             matched instances
-- @column bytes         summed per-rank payload, bytes; null when not reported
-- @column transfer_ns   summed time from the last arrival to the rank's own completion, ns
CREATE VIEW rank_collective_transfers AS
SELECT e.rank, r.node, e.coll_op, e.coll_group, COUNT(*) AS n, SUM(e.bytes) AS bytes,
       SUM(GREATEST(0, e.ts + e.dur - GREATEST(e.ts, c.last_start))) AS transfer_ns
FROM comm_events AS e
JOIN collectives AS c
  ON c.coll_op = e.coll_op AND c.coll_group = e.coll_group AND c.coll_seq = e.coll_seq
LEFT JOIN ranks AS r ON r.rank = e.rank
WHERE e.coll_seq IS NOT NULL
GROUP BY e.rank, r.node, e.coll_op, e.coll_group;

-- Replica groups and where their members sit: how many ranks and nodes a group spans decides
-- which links its collectives cross (NeuronLink inside a node, EFA between nodes).
-- @column coll_group     replica group
-- @column ranks          distinct ranks that ran collectives in the group
-- @column nodes          distinct nodes of those ranks; null when the ranks table has no nodes
-- @column instance_type  instance type of the group's ranks (one of them)
CREATE VIEW collective_groups AS
WITH members AS (
    SELECT DISTINCT coll_group, rank FROM comm_events
    WHERE coll_group IS NOT NULL
)
SELECT m.coll_group, COUNT(*) AS ranks,
       CASE WHEN COUNT(r.node) > 0 THEN COUNT(DISTINCT r.node) END AS nodes,
       MAX(r.instance_type) AS instance_type
FROM members AS m
LEFT JOIN ranks AS r ON r.rank = m.rank
GROUP BY m.coll_group;

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

-- One row per step: whether it is a warm-up step. Warm-up steps are the leading steps in which
-- some rank compiled, at most the first two (XLA compiles the training graph on first sight and
-- the graph with optimizer state one step later) and never the last step. Rules measure shares
-- and the engine measures impact over the other, steady-state steps.
-- @column step      training step number
-- @column dur       step time (slowest rank), ns
-- @column compiles  compile events in the step, all ranks
-- @column position  1 for the first step of the run, 2 for the next, ...
-- @column warmup    true for a warm-up step
CREATE VIEW step_phases AS
WITH compiles AS (
    SELECT step, SUM(n) AS n FROM event_stats WHERE kind = 'compile' AND step IS NOT NULL GROUP BY step
),
ordered AS (
    SELECT t.step, t.dur, COALESCE(c.n, 0) AS compiles,
           ROW_NUMBER() OVER (ORDER BY t.step) AS position, COUNT(*) OVER () AS steps
    FROM step_times AS t LEFT JOIN compiles AS c ON c.step = t.step
),
prefix AS (
    SELECT *, MIN(CASE WHEN compiles > 0 THEN 1 ELSE 0 END)
                  OVER (ORDER BY position ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS all_compiled
    FROM ordered
)
SELECT step, dur, compiles, position, all_compiled = 1 AND position <= 2 AND position < steps AS warmup
FROM prefix;

-- step_breakdown without the warm-up steps (see step_phases): the steady state rules judge.
-- @column rank               global rank
-- @column step               training step number
-- @column dur                step duration, ns
-- @column compute            time any compute op ran, ns
-- @column collective         time any collective or p2p ran, ns
-- @column exposed_comm       collective time not overlapped by compute, ns
-- @column overlapped_comm    collective time hidden under compute, ns
-- @column input_wait         time waiting for input with no compute or communication running, ns
-- @column transfer_exposed   transfer/memory time with nothing above running, ns
-- @column compile            compile time with nothing above running, ns
-- @column other              transfer_exposed + compile, ns
-- @column idle               time with no device activity at all, ns
-- @column overlap_ratio      overlapped_comm / collective; null without communication
CREATE VIEW steady_breakdown AS
SELECT b.rank, b.step, b.dur, b.compute, b.collective, b.exposed_comm, b.overlapped_comm, b.input_wait,
       b.transfer_exposed, b.compile, b.other, b.idle, b.overlap_ratio
FROM step_breakdown AS b
JOIN step_phases AS p ON p.step = b.step
WHERE NOT p.warmup;

-- Per rank and step, how long the rank's point-to-point receives waited for their sender to
-- start (in a pipeline: the bubble) as opposed to receiving data. A receive is matched to the
-- send of the same group and sequence number; the wait is the part of the receive before the
-- send began.
-- @column rank      global rank
-- @column step      training step; null outside every step
-- @column n         matched receives
-- @column recv_ns   summed duration of those receives, ns
-- @column wait_ns   summed time waiting for the sender to start, ns
CREATE VIEW p2p_waits AS
WITH sends AS (
    SELECT coll_group, coll_seq, MIN(ts) AS send_ts
    FROM comm_events
    WHERE coll_op = 'send' AND coll_seq IS NOT NULL
    GROUP BY coll_group, coll_seq
)
SELECT r.rank, r.step, COUNT(*) AS n, SUM(r.dur) AS recv_ns,
       SUM(LEAST(r.dur, GREATEST(0, s.send_ts - r.ts))) AS wait_ns
FROM comm_events AS r
JOIN sends AS s ON s.coll_group = r.coll_group AND s.coll_seq = r.coll_seq
WHERE r.coll_op = 'recv'
GROUP BY r.rank, r.step;
