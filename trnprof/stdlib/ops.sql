-- Per rank, step, event kind, op name and lane: how many events, how long they ran in total, the
-- work and bytes they report, and for compute ops the data type the source states. The one scan
-- of the events that the per-kind, per-type and per-op views (here and in diff_support) aggregate
-- further. The data type comes
-- from the event's args: `dtype`, else the first of Kineto's `Input type` list (lower case).
-- (json_extract_string is DuckDB's spelling of SQL/JSON JSON_VALUE, which DuckDB returns quoted.)
-- @column rank        global rank
-- @column step        training step; null for events outside every step
-- @column kind        event kind
-- @column name        op name as the source spells it
-- @column lane        lane as the source spells it
-- @column dtype       data type stated in the args of compute events, lower case; null when none
-- @column engine      Trn1 engine of the lane: `tensor` (nc/tensor), `other` (another nc/ lane); null off a NeuronCore
-- @column n           events
-- @column dur         summed duration, ns
-- @column flops       summed FLOPs of the events that report them; null when none do
-- @column n_flops     events that report FLOPs
-- @column bytes       summed bytes of the events that report them; null when none do
-- @column n_bytes     events that report bytes
CREATE VIEW _op_stats AS
WITH typed AS (
    SELECT rank, step, kind, name, lane, dur, flops, bytes,
           CASE WHEN lane = 'nc/tensor' THEN 'tensor' WHEN lane LIKE 'nc/%' THEN 'other' END AS engine,
           CASE WHEN kind = 'compute' AND args IS NOT NULL
                THEN LOWER(COALESCE(json_extract_string(args, '$.dtype'),
                                    json_extract_string(args, '$."Input type"[0]'))) END AS dtype
    FROM events
)
SELECT rank, step, kind, name, lane, dtype, engine, COUNT(*) AS n, SUM(dur) AS dur, SUM(flops) AS flops,
       COUNT(flops) AS n_flops, SUM(bytes) AS bytes, COUNT(bytes) AS n_bytes
FROM typed
GROUP BY rank, step, kind, name, lane, dtype, engine;

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
FROM _op_stats
GROUP BY rank, step, kind;

-- Compute time by data type, per rank and step, split into matrix multiplies and other ops.
-- The data type is _op_stats' (normalised: float/float32/fp32 -> fp32, bfloat16/bf16 -> bf16,
-- half/float16/fp16 -> fp16), else cuBLAS's FP32 kernel naming (`sgemm`). Matrix multiplies are
-- ops whose name holds matmul, gemm, linear, dot, conv or is aten::mm / aten::bmm / aten::addmm,
-- ops on a NeuronCore's tensor engine (lane nc/tensor, whatever their name: `layers.3.mlp`), and
-- off a NeuronCore ops that report FLOPs (PyTorch's profiler counts FLOPs only for matrix
-- multiplies and convolutions).
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
            OR LOWER(name) IN ('aten::mm', 'aten::bmm', 'aten::addmm')
            OR engine = 'tensor' OR (engine IS NULL AND n_flops > 0)) AS is_matmul,
           CASE WHEN dtype IN ('float', 'float32', 'fp32', 'torch.float32', 'f32') THEN 'fp32'
                WHEN dtype IN ('c10::bfloat16', 'bfloat16', 'bf16', 'torch.bfloat16') THEN 'bf16'
                WHEN dtype IN ('c10::half', 'half', 'float16', 'fp16', 'torch.float16') THEN 'fp16'
                WHEN dtype IS NOT NULL AND dtype <> '' THEN dtype
                WHEN LOWER(name) LIKE '%sgemm%' THEN 'fp32'
           END AS dtype
    FROM _op_stats
    WHERE kind = 'compute'
)
SELECT rank, step, is_matmul, dtype, SUM(n) AS n, SUM(dur) AS dur, SUM(flops) AS flops
FROM classified
GROUP BY rank, step, is_matmul, dtype;
