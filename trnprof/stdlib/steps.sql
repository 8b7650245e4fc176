-- One row per training step on each rank, from the collector's `step` events (several step
-- events of one rank and step are merged into their hull). A step that overlaps the rank's next
-- step is cut where the next one starts, so a rank's steps never overlap.
-- @column rank    global rank
-- @column step    training step number
-- @column ts      step start, ns
-- @column dur     step duration, ns
-- @column end_ts  step end (ts + dur), ns
CREATE VIEW steps AS
WITH hulls AS (
    SELECT rank, step, MIN(ts) AS ts, MAX(ts + dur) AS end_ts
    FROM events
    WHERE kind = 'step' AND step IS NOT NULL
    GROUP BY rank, step
),
cut AS (
    SELECT rank, step, ts,
           LEAST(end_ts, COALESCE(LEAD(ts) OVER (PARTITION BY rank ORDER BY ts, step), end_ts)) AS end_ts
    FROM hulls
)
SELECT rank, step, ts, end_ts - ts AS dur, end_ts
FROM cut;

-- One row per step across all ranks. Training steps are synchronous, so a step's time is its
-- slowest rank's.
-- @column step        training step number
-- @column ranks       ranks that recorded the step
-- @column ts          earliest start over ranks, ns
-- @column dur         step time: the longest rank's step duration, ns
-- @column dur_median  median of the ranks' step durations, ns
-- @column dur_min     shortest rank's step duration, ns
CREATE VIEW step_times AS
SELECT step, COUNT(*) AS ranks, MIN(ts) AS ts, MAX(dur) AS dur,
       PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY dur) AS dur_median, MIN(dur) AS dur_min
FROM steps
GROUP BY step;
