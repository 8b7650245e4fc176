-- @requires ops

-- One row per collective instance, matched across ranks by group, sequence number and op.
-- Collective events without a sequence number cannot be matched and stay one row per event.
-- Bandwidths follow nccl-tests: algbw = bytes / transfer time; busbw = algbw x bus factor,
-- the factor being 2(n-1)/n for all-reduce, (n-1)/n for all-gather, reduce-scatter and
-- all-to-all, and 1 for point-to-point and anything else (n = group size; null for a
-- collective whose group size is unknown or 1, e.g. one rank's file of a larger job).
-- @column coll_op        collective kind
-- @column coll_group     replica group
-- @column coll_seq       sequence number within the group; null for unmatched events
-- @column name           the op name as the source spells it (first over ranks)
-- @column step           training step, when known
-- @column ranks_seen     ranks that recorded this instance
-- @column group_size     ranks in the group: the collector's coll_ranks, else ranks_seen
-- @column bytes          message size as nccl-tests counts it (all-gather: the gathered output), bytes
-- @column first_start    earliest arrival over ranks, ns
-- @column last_start     latest arrival over ranks, ns
-- @column last_end       latest completion over ranks, ns
-- @column arrival_skew   last_start - first_start: how long early ranks waited for the last, ns
-- @column transfer_dur   shortest rank duration: the last to arrive waits least, so this is the transfer time, ns
-- @column algbw          algorithm bandwidth, bytes/s; null without bytes or duration
-- @column bus_factor     bus-bandwidth factor for the op and group size; null when the size is unknown
-- @column busbw          bus bandwidth, bytes/s; null when bus_factor is
CREATE VIEW collectives AS
WITH names AS (  -- the collective events' names, numbered in sort order: MIN of the number is MIN(name);
                -- read from view _op_stats (a row per rank, step and op): not a second read of the events
    SELECT name, row_number() OVER (ORDER BY name) AS name_id
    FROM (SELECT DISTINCT name FROM _op_stats WHERE kind IN ('collective', 'p2p') AND name IS NOT NULL)
),
numbered AS (  -- one instance per group, every aggregate a number: no string per instance in the
               -- hash table (the 30-step 1,024-rank run's 8M instances spilled with MIN(name))
    SELECT coll_op, coll_group, coll_seq, MIN(n.name_id) AS name_id, MIN(step) AS step,
           COUNT(*) AS ranks_seen, MAX(coll_ranks) AS coll_ranks, MAX(bytes) AS bytes,
           MIN(ts) AS first_start, MAX(ts) AS last_start, MAX(ts + dur) AS last_end,
           MIN(dur) AS transfer_dur
    FROM events AS e
    LEFT JOIN names AS n ON n.name = e.name
    WHERE e.kind IN ('collective', 'p2p')
    GROUP BY coll_op, coll_group, coll_seq,
             CASE WHEN coll_seq IS NULL THEN CAST(rank AS VARCHAR) || ':' || CAST(ts AS VARCHAR) END
),
matched AS (
    SELECT m.coll_op, m.coll_group, m.coll_seq, n.name, m.step, m.ranks_seen, m.coll_ranks, m.bytes,
           m.first_start, m.last_start, m.last_end, m.transfer_dur
    FROM numbered AS m
    LEFT JOIN names AS n ON n.name_id = m.name_id
),
sized AS (
    SELECT *, COALESCE(coll_ranks, ranks_seen) AS group_size,
           CAST(bytes AS DOUBLE) * 1e9 / NULLIF(transfer_dur, 0) AS algbw
    FROM matched
),
factored AS (
    SELECT *, CASE WHEN coll_op IN ('all_reduce', 'all_gather', 'reduce_scatter', 'all_to_all')
                        AND group_size < 2 THEN NULL
                   WHEN coll_op = 'all_reduce' THEN 2.0 * (group_size - 1) / group_size
                   WHEN coll_op IN ('all_gather', 'reduce_scatter', 'all_to_all')
                        THEN 1.0 * (group_size - 1) / group_size
                   ELSE 1.0 END AS bus_factor
    FROM sized
)
SELECT coll_op, coll_group, coll_seq, name, step, ranks_seen, group_size, bytes,
       first_start, last_start, last_end, last_start - first_start AS arrival_skew, transfer_dur,
       algbw, bus_factor, algbw * bus_factor AS busbw
FROM factored;

-- Each (op, group) pair of view collectives with sequenced instances, numbered, with the span of
-- its sequence numbers: the views that match events to instances key an instance by one BIGINT,
-- pair * 2^40 + (coll_seq - first_seq), where `packed` (the span is under 2^39, the DOUBLE
-- difference erring by at most 2^11, and the pair number under 2^22). A join or grouping on one
-- 8-byte key instead of two strings and a number: at 1,024 ranks x 30 steps it took
-- collective_lateness from 65 to 50 s and _matched_collective_events from 22 to 14 s. A pair
-- that is not packed (sequence numbers no real run gives) is matched by its strings instead.
-- @column coll_op     collective kind
-- @column coll_group  replica group
-- @column pair        the pair's number, 1, 2, ... in (coll_op, coll_group) order
-- @column first_seq   the pair's smallest sequence number
-- @column packed      true when pair * 2^40 + (coll_seq - first_seq) keys the pair's instances
CREATE VIEW _collective_pairs AS
SELECT coll_op, coll_group, pair, first_seq, span < 549755813888 AND pair < 4194304 AS packed
FROM (SELECT coll_op, coll_group, MIN(coll_seq) AS first_seq,
             CAST(MAX(coll_seq) AS DOUBLE) - CAST(MIN(coll_seq) AS DOUBLE) AS span,
             row_number() OVER (ORDER BY coll_op, coll_group) AS pair
      FROM collectives
      WHERE coll_op IS NOT NULL AND coll_group IS NOT NULL AND coll_seq IS NOT NULL
      GROUP BY coll_op, coll_group);
