-- @requires collectives, steady_state

-- Per rank and steady-state step (see step_phases): how far the rank's step time and compute
-- time sit from its peers', the ranks of the same pipeline stage in the same step (a stage does
-- different work from the others). The peers' median is the lower median: for a rank above it,
-- the median of the other ranks (exactly so for an even count), so a straggler among two ranks is
-- compared with its peer, not with itself. The scale.straggler rule and the report's straggler
-- heatmaps read this view.
-- @column rank            global rank
-- @column step            training step number
-- @column stage           pipeline stage of the rank (pp_rank; 0 when unknown)
-- @column peers           ranks of the stage that recorded the step, the rank included
-- @column dur             the rank's step duration, ns
-- @column compute         the rank's compute time in the step, ns
-- @column median_dur      lower median of the stage's step durations in the step, ns
-- @column median_compute  lower median of the stage's compute times in the step, ns
-- @column step_dev        (dur - median_dur) / median_dur: +0.1 is 10 % slower; null when the median is 0
-- @column compute_dev     (compute - median_compute) / median_compute; null when the median is 0
CREATE VIEW rank_deviation AS
WITH per AS (
    SELECT b.rank, b.step, b.dur, b.compute, COALESCE(r.pp_rank, 0) AS stage
    FROM steady_breakdown AS b LEFT JOIN ranks AS r ON r.rank = b.rank
),
medians AS (
    SELECT step, stage, COUNT(*) AS peers,
           PERCENTILE_DISC(0.5) WITHIN GROUP (ORDER BY dur) AS median_dur,
           PERCENTILE_DISC(0.5) WITHIN GROUP (ORDER BY compute) AS median_compute
    FROM per GROUP BY step, stage
)
SELECT p.rank, p.step, p.stage, m.peers, p.dur, p.compute, m.median_dur, m.median_compute,
       CAST(p.dur - m.median_dur AS DOUBLE) / NULLIF(m.median_dur, 0) AS step_dev,
       CAST(p.compute - m.median_compute AS DOUBLE) / NULLIF(m.median_compute, 0) AS compute_dev
FROM per AS p
JOIN medians AS m ON m.step = p.step AND m.stage = p.stage;

-- Per rank and step, the collective half of view collective_lateness: each arrival of the rank at
-- an instance that two ranks or more reached, against the median of the other ranks' arrivals.
-- Computed in parts by sequence number on a large run (trnprof/parts.py: an instance falls in one
-- part whole), so a (rank, step) may have a row per part: its reader sums them.
-- @column rank          global rank
-- @column step          training step; null outside every step
-- @column n             arrivals of the rank at matched instances
-- @column late_ns       summed arrival after the median of the other ranks' arrivals, ns (negative: early)
-- @column max_late_ns   the largest single arrival's skew, ns
-- @column waited_ns     summed time the rank blocked until the instance's last arrival, ns
CREATE VIEW _collective_skew AS
WITH matchable AS (
    SELECT rank, coll_op, coll_group, coll_seq, step, ts, dur
    FROM events
    WHERE kind = 'collective' AND coll_op IS NOT NULL AND coll_group IS NOT NULL AND coll_seq IS NOT NULL
),
unpacked AS (  -- the instances of a pair that is not packed (view _collective_pairs), numbered -1,
               -- -2, ... (no pair of a real run: a join with an empty side costs nothing)
    SELECT c.coll_op, c.coll_group, c.coll_seq,
           -row_number() OVER (ORDER BY c.coll_op, c.coll_group, c.coll_seq) AS instance
    FROM collectives AS c
    JOIN _collective_pairs AS p ON p.coll_op = c.coll_op AND p.coll_group = c.coll_group AND NOT p.packed
    WHERE c.coll_seq IS NOT NULL
),
arrivals AS (  -- one arrival per rank and instance (its first event of the instance), an instance of
               -- a packed pair keyed by one BIGINT: the grouping, sort and join hold 8 bytes of key
    SELECT e.rank, p.pair * 1099511627776 + (e.coll_seq - p.first_seq) AS instance,
           MIN(e.step) AS step, MIN(e.ts) AS ts, MAX(e.ts + e.dur) AS end_ts
    FROM matchable AS e
    JOIN _collective_pairs AS p ON p.coll_op = e.coll_op AND p.coll_group = e.coll_group AND p.packed
    GROUP BY e.rank, instance
    UNION ALL
    SELECT e.rank, u.instance, MIN(e.step) AS step, MIN(e.ts) AS ts, MAX(e.ts + e.dur) AS end_ts
    FROM events AS e  -- not matchable: a CTE read twice is kept whole
    JOIN unpacked AS u ON u.coll_op = e.coll_op AND u.coll_group = e.coll_group AND u.coll_seq = e.coll_seq
    WHERE e.kind = 'collective'
    GROUP BY e.rank, u.instance
),
ranked AS (  -- each arrival's place in its instance's arrival order, and how many the instance has
    SELECT instance, ts, row_number() OVER (PARTITION BY instance ORDER BY ts) AS place,
           COUNT(*) OVER (PARTITION BY instance ORDER BY ts  -- the same order: one sort for both
                          ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS n
    FROM arrivals
),
medians AS (  -- each instance two ranks or more reached: the median of the n - 1 other arrivals of a
              -- rank sits at their places q1 = n // 2 and q2 = (n - 1) // 2 + 1; with one arrival at
              -- ts taken out, the q-th of the others is the q-th of all where that is earlier than
              -- ts, else the next one (equal times alike: no order of ranks needed). Only the places
              -- q1 to q2 + 1 and the last are read: no list of every arrival is built
    SELECT instance, MAX(ts) AS last_ts,
           MAX(ts) FILTER (WHERE place = n // 2) AS at_q1, MAX(ts) FILTER (WHERE place = n // 2 + 1) AS after_q1,
           MAX(ts) FILTER (WHERE place = (n - 1) // 2 + 1) AS at_q2,
           MAX(ts) FILTER (WHERE place = (n - 1) // 2 + 2) AS after_q2
    FROM ranked
    WHERE n > 1 AND (place BETWEEN n // 2 AND n // 2 + 2 OR place = n)
    GROUP BY instance
),
skew AS (
    SELECT a.rank, a.step,
           CAST((a.ts - CASE WHEN m.at_q1 < a.ts THEN m.at_q1 ELSE m.after_q1 END)
                + (a.ts - CASE WHEN m.at_q2 < a.ts THEN m.at_q2 ELSE m.after_q2 END) AS DOUBLE) / 2 AS late_ns,
           LEAST(m.last_ts, a.end_ts) - a.ts AS waited_ns
    FROM arrivals AS a
    JOIN medians AS m ON m.instance = a.instance
)
SELECT rank, step, COUNT(*) AS n, SUM(late_ns) AS late_ns, MAX(late_ns) AS max_late_ns, SUM(waited_ns) AS waited_ns
FROM skew
GROUP BY rank, step;

-- Per rank and step: how late the rank arrived at the step's collectives and point-to-point
-- transfers against the other ranks of each (arrival skew). For every collective instance that
-- two ranks or more recorded (matched by op, group and sequence number), the rank's arrival (its
-- event's start) minus the median arrival of the instance's other ranks, summed over the step's
-- instances. The ranks leave a collective together, so each instance's skew is the delay built up
-- since the previous one, whatever filled it: ops, Python, I/O or sleep the trace does not
-- record. For every pipeline transfer (a p2p send and its receive on another rank: one of each
-- per group and sequence number, as p2p_waits pairs them) the side that arrived first blocks for
-- the other, at most for its own event's length (a send the transport buffered did not wait):
-- that wait counts late for the later side and early for the first. A late pipeline stage shows
-- as its neighbours blocked in receive or send for it, step after step. Where the ranks table
-- gives two pipeline stages or more, a rank's transfer lateness is counted against the mean of
-- its stage's other ranks' (the stages wait for each other by design: the bubble); a stage of
-- one rank keeps its own. Positive: the others
-- waited for the rank; negative: it waited for them. The scale.straggler rule sizes a straggler
-- by it.
-- @column rank          global rank
-- @column step          training step; null outside every step
-- @column instances     matched collective instances and pipeline transfers of the rank in the step
-- @column late_ns       summed arrival after the median of the other ranks' arrivals, ns (negative: early)
-- @column max_late_ns   the largest single instance's skew, ns
-- @column waited_ns     summed time the rank blocked for later ranks: at each collective until its last arrival, at each transfer until its other side arrived (at most its event's length), ns
CREATE VIEW collective_lateness AS
WITH transfers AS (  -- pipeline transfers: one send and one receive of a group and sequence number
    SELECT coll_group, coll_seq
    FROM events
    WHERE kind = 'p2p' AND coll_op IN ('send', 'recv') AND coll_group IS NOT NULL AND coll_seq IS NOT NULL
    GROUP BY coll_group, coll_seq
    HAVING COUNT(*) FILTER (WHERE coll_op = 'send') = 1 AND COUNT(*) FILTER (WHERE coll_op = 'recv') = 1
),
sides AS (
    SELECT e.rank, e.step, e.coll_op, e.coll_group, e.coll_seq, e.ts, e.dur
    FROM events AS e JOIN transfers AS t ON t.coll_group = e.coll_group AND t.coll_seq = e.coll_seq
    WHERE e.kind = 'p2p' AND e.coll_op IN ('send', 'recv')
),
p2p_skew AS (  -- the first side's wait for the later one, late for the later side, early for the first
    SELECT a.rank, a.step,
           CASE WHEN a.ts > b.ts THEN LEAST(a.ts - b.ts, b.dur) ELSE -LEAST(b.ts - a.ts, a.dur) END AS late_ns,
           CASE WHEN a.ts > b.ts THEN 0 ELSE LEAST(b.ts - a.ts, a.dur) END AS waited_ns
    FROM sides AS a JOIN sides AS b
      ON b.coll_group = a.coll_group AND b.coll_seq = a.coll_seq AND b.coll_op <> a.coll_op AND b.rank <> a.rank
),
p2p_rank AS (  -- per rank and step, with its pipeline stage (pp_rank) when the run has two stages or more
    SELECT s.rank, s.step, COUNT(*) AS n, SUM(s.late_ns) AS late_ns, MAX(s.late_ns) AS max_late_ns,
           SUM(s.waited_ns) AS waited_ns,
           CASE WHEN (SELECT COUNT(DISTINCT pp_rank) FROM ranks) > 1 THEN r.pp_rank END AS stage
    FROM p2p_skew AS s LEFT JOIN ranks AS r ON r.rank = s.rank
    GROUP BY s.rank, s.step, r.pp_rank
),
p2p_late AS (  -- a stage's transfers wait for the other stages by design (the bubble): where the
               -- stages are known, a rank is late against the mean of its stage's other ranks
    SELECT rank, step, n, max_late_ns, waited_ns,
           late_ns - CASE WHEN stage IS NOT NULL AND COUNT(*) OVER (PARTITION BY step, stage) > 1
                          THEN (SUM(late_ns) OVER (PARTITION BY step, stage) - late_ns)
                               / (COUNT(*) OVER (PARTITION BY step, stage) - 1)
                          ELSE 0 END AS late_ns
    FROM p2p_rank
)
SELECT rank, step, CAST(SUM(n) AS BIGINT) AS instances, SUM(late_ns) AS late_ns, MAX(max_late_ns) AS max_late_ns,
       SUM(waited_ns) AS waited_ns
FROM (SELECT rank, step, n, late_ns, max_late_ns, waited_ns FROM _collective_skew
      UNION ALL
      SELECT rank, step, n, late_ns, max_late_ns, waited_ns FROM p2p_late)
GROUP BY rank, step;
