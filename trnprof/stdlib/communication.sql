-- @requires collectives, ops, step_breakdown

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
CREATE VIEW _comm_events AS
SELECT rank, ts, dur, step, coll_op, coll_group, coll_seq, bytes
FROM events
WHERE kind IN ('collective', 'p2p');

-- Per rank, step, collective op and group: the rank's collective events matched to an instance
-- of `collectives` (by op, group and sequence number), summed, each event split into the part
-- before the instance's last arrival (waiting for late ranks) and the part from it to the
-- event's end (moving data). The one join of the collective events with `collectives`: on a
-- 1,024-rank run it is most of the communication views' cost, so collective_waits and
-- rank_collective_transfers aggregate these rows instead of joining again. An instance of a
-- packed pair (view _collective_pairs) is keyed by one BIGINT (joining 22M events on two strings
-- and a number cost twice as much); the second branch joins the other pairs' events on the
-- strings themselves (a join with an empty side: it costs nothing in a real run).
-- @column rank          global rank
-- @column step          training step; null outside every step
-- @column coll_op       collective kind
-- @column coll_group    replica group
-- @column n             matched collective events
-- @column dur           summed duration of those events, ns
-- @column bytes         summed per-rank payload, bytes; null when not reported
-- @column wait_ns       summed time before the last rank arrived, ns
-- @column after_last_ns summed time from the last arrival (or the event's own start, if later) to its end, ns
CREATE VIEW _matched_collective_events AS
WITH instances AS (
    SELECT p.pair * 1099511627776 + (c.coll_seq - p.first_seq) AS instance, c.last_start
    FROM collectives AS c
    JOIN _collective_pairs AS p ON p.coll_op = c.coll_op AND p.coll_group = c.coll_group AND p.packed
    WHERE c.coll_seq IS NOT NULL
),
keyed AS (
    SELECT e.rank, e.step, e.ts, e.dur, e.bytes, p.pair, p.pair * 1099511627776 + (e.coll_seq - p.first_seq) AS instance
    FROM _comm_events AS e
    JOIN _collective_pairs AS p ON p.coll_op = e.coll_op AND p.coll_group = e.coll_group AND p.packed
),
by_key AS (
    SELECT e.rank, e.step, e.pair, COUNT(*) AS n, SUM(e.dur) AS dur, SUM(e.bytes) AS bytes,
           SUM(LEAST(e.dur, GREATEST(0, c.last_start - e.ts))) AS wait_ns,
           SUM(GREATEST(0, e.ts + e.dur - GREATEST(e.ts, c.last_start))) AS after_last_ns
    FROM keyed AS e JOIN instances AS c ON c.instance = e.instance
    GROUP BY e.rank, e.step, e.pair
),
by_name AS (
    SELECT e.rank, e.step, e.coll_op, e.coll_group, COUNT(*) AS n, SUM(e.dur) AS dur, SUM(e.bytes) AS bytes,
           SUM(LEAST(e.dur, GREATEST(0, c.last_start - e.ts))) AS wait_ns,
           SUM(GREATEST(0, e.ts + e.dur - GREATEST(e.ts, c.last_start))) AS after_last_ns
    FROM _comm_events AS e
    JOIN _collective_pairs AS p ON p.coll_op = e.coll_op AND p.coll_group = e.coll_group AND NOT p.packed
    JOIN collectives AS c
      ON c.coll_op = e.coll_op AND c.coll_group = e.coll_group AND c.coll_seq = e.coll_seq
    GROUP BY e.rank, e.step, e.coll_op, e.coll_group
)
SELECT k.rank, k.step, p.coll_op, p.coll_group, k.n, k.dur, k.bytes, k.wait_ns, k.after_last_ns
FROM by_key AS k JOIN _collective_pairs AS p ON p.pair = k.pair
UNION ALL
SELECT rank, step, coll_op, coll_group, n, dur, bytes, wait_ns, after_last_ns FROM by_name;

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
SELECT rank, step, CAST(SUM(n) AS BIGINT) AS n, SUM(dur) AS collective_ns, SUM(wait_ns) AS wait_ns,
       SUM(dur) - SUM(wait_ns) AS transfer_ns
FROM _matched_collective_events
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
    FROM _comm_events
    WHERE coll_op = 'send' AND coll_seq IS NOT NULL
    GROUP BY coll_group, coll_seq
)
SELECT r.rank, r.step, COUNT(*) AS n, SUM(r.dur) AS recv_ns,
       SUM(LEAST(r.dur, GREATEST(0, s.send_ts - r.ts))) AS wait_ns
FROM _comm_events AS r
JOIN sends AS s ON s.coll_group = r.coll_group AND s.coll_seq = r.coll_seq
WHERE r.coll_op = 'recv'
GROUP BY r.rank, r.step;

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
SELECT m.rank, r.node, m.coll_op, m.coll_group, CAST(SUM(m.n) AS BIGINT) AS n, SUM(m.bytes) AS bytes,
       SUM(m.after_last_ns) AS transfer_ns
FROM _matched_collective_events AS m
LEFT JOIN ranks AS r ON r.rank = m.rank
GROUP BY m.rank, r.node, m.coll_op, m.coll_group;

-- Replica groups and where their members sit: how many ranks and nodes a group spans decides
-- which links its collectives cross (NeuronLink inside a node, EFA between nodes).
-- @column coll_group     replica group
-- @column ranks          distinct ranks that ran collectives in the group
-- @column nodes          distinct nodes of those ranks; null when the ranks table has no nodes
-- @column instance_type  instance type of the group's ranks (one of them)
CREATE VIEW collective_groups AS
WITH members AS (
    SELECT DISTINCT coll_group, rank FROM _comm_events
    WHERE coll_group IS NOT NULL
)
SELECT m.coll_group, COUNT(*) AS ranks,
       CASE WHEN COUNT(r.node) > 0 THEN COUNT(DISTINCT r.node) END AS nodes,
       MAX(r.instance_type) AS instance_type
FROM members AS m
LEFT JOIN ranks AS r ON r.rank = m.rank
GROUP BY m.coll_group;
