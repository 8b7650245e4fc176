-- Every step on each rank as the trace recorded it, whole or cut by the trace's start or end:
-- the collector's `step` events of one rank and step merged into their hull, a step that
-- overlaps the rank's next step cut where the next one starts. A profiler that starts or stops
-- inside a step records only part of it (PyTorch's profiler closes its last ProfilerStep when it
-- stops), so the rank's first and last steps are judged against its interior steps: one under
-- half their median duration (the lower middle one of an even number: a step's own duration, so
-- a run recompiling every other step judges against a plain step) is partial (with only two
-- steps, under 1/20 of the other one, which may be a compiling warm-up step). `steps` keeps the whole ones; every statistic and rule reads
-- those.
-- @column rank     global rank
-- @column step     training step number
-- @column ts       step start, ns
-- @column dur      step duration as recorded, ns
-- @column end_ts   step end (ts + dur), ns
-- @column partial  true for a first or last step the trace cut (see above)
CREATE VIEW recorded_steps AS
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
),
placed AS (
    SELECT rank, step, ts, end_ts, end_ts - ts AS dur,
           ROW_NUMBER() OVER (PARTITION BY rank ORDER BY ts, step) AS position,
           COUNT(*) OVER (PARTITION BY rank) AS n
    FROM cut
),
edges AS (  -- each edge step against the median of the rank's interior steps (whole by
            -- construction); with two steps, against the other one
    SELECT e.rank, e.step, PERCENTILE_DISC(0.5) WITHIN GROUP (ORDER BY o.dur) AS others
    FROM placed AS e
    JOIN placed AS o ON o.rank = e.rank AND o.step <> e.step AND (e.n = 2 OR o.position NOT IN (1, e.n))
    WHERE e.n >= 2 AND (e.position = 1 OR e.position = e.n)
    GROUP BY e.rank, e.step
)
SELECT p.rank, p.step, p.ts, p.dur, p.end_ts,
       COALESCE(p.dur < e.others * CASE WHEN p.n = 2 THEN 0.05 ELSE 0.5 END, FALSE) AS partial
FROM placed AS p LEFT JOIN edges AS e ON e.rank = p.rank AND e.step = p.step;

-- One row per whole training step on each rank (view recorded_steps without the steps the
-- trace cut). A rank's steps never overlap.
-- @column rank    global rank
-- @column step    training step number
-- @column ts      step start, ns
-- @column dur     step duration, ns
-- @column end_ts  step end (ts + dur), ns
CREATE VIEW steps AS
SELECT rank, step, ts, dur, end_ts FROM recorded_steps WHERE NOT partial;

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
