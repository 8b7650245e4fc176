-- The run's instance type and its row of the `hardware` table: the job metadata's instance type,
-- else the most common one in the ranks table (ties: the first by name). One row; the peaks are
-- null when the instance type is unknown or not a Trainium type.
-- @column instance_type          instance type; null when neither the job nor the ranks name one
-- @column cores                  NeuronCores per node
-- @column hbm_bytes_per_core     device memory per NeuronCore, bytes
-- @column tensor_bf16_flops      tensor engine peak per NeuronCore, dense BF16, FLOP/s
-- @column tensor_fp32_flops      tensor engine peak per NeuronCore, dense FP32, FLOP/s
-- @column chip_link_bytes_per_s  DMA bandwidth per NeuronCore (collectives within a chip), bytes/s
-- @column node_link_bytes_per_s  NeuronLink-v2 bandwidth per NeuronCore (inside a node), bytes/s
-- @column network_bytes_per_s    EFA (ENA on trn1.2xlarge) bandwidth per node (across nodes), bytes/s
-- @column network_kind           EFA, or ENA where the instance has no EFA
CREATE VIEW run_hardware AS
WITH named AS (
    SELECT COALESCE(
        (SELECT MAX(instance_type) FROM run_job),
        (SELECT instance_type FROM ranks WHERE instance_type IS NOT NULL
         GROUP BY instance_type ORDER BY COUNT(*) DESC, instance_type LIMIT 1)) AS instance_type
)
SELECT n.instance_type, h.cores, h.hbm_bytes_per_core, h.tensor_bf16_flops, h.tensor_fp32_flops,
       h.chip_link_bytes_per_s, h.node_link_bytes_per_s, h.network_bytes_per_s, h.network_kind
FROM named AS n
LEFT JOIN hardware AS h ON h.instance_type = n.instance_type;

-- The link peaks of the run's instance type, one row per link class: `chip` (DMA per
-- NeuronCore: a collective between the two cores of a chip moves through HBM), `node`
-- (NeuronLink-v2 per NeuronCore, inside a node) and `network` (EFA per node, across nodes; ENA
-- on trn1.2xlarge, which has no EFA).
-- Classes the instance type lacks are left out; no rows when it is unknown.
-- @column link_class   chip, node or network
-- @column link         what the peak is, in words
-- @column bytes_per_s  peak bandwidth, bytes/s
CREATE VIEW link_peaks AS
SELECT 'chip' AS link_class, 'on-chip DMA per NeuronCore (same chip)' AS link, chip_link_bytes_per_s AS bytes_per_s
FROM run_hardware WHERE chip_link_bytes_per_s IS NOT NULL
UNION ALL
SELECT 'node', 'NeuronLink-v2 per NeuronCore (intra-node)', node_link_bytes_per_s
FROM run_hardware WHERE node_link_bytes_per_s IS NOT NULL
UNION ALL
SELECT 'network', network_kind || ' network per node (inter-node)', network_bytes_per_s
FROM run_hardware WHERE network_bytes_per_s IS NOT NULL;

-- Peak bus bandwidth (nccl-tests convention) each replica group's collectives can reach, from
-- the links they cross: inside one node the NeuronLink-v2 share of a NeuronCore (the DMA share
-- where the instance has no NeuronLink); across nodes also the node's EFA bandwidth, of which a
-- group gets its members' share of the node's cores. The group's instance type is its ranks',
-- else the run's (run_hardware); the peak is null when it is unknown.
-- @column coll_group     replica group
-- @column ranks          distinct ranks of the group
-- @column nodes          distinct nodes of the group (1 when the ranks table places no rank)
-- @column instance_type  instance type of the group's ranks
-- @column peak_busbw     peak bus bandwidth of one rank of the group, bytes/s; null when unknown
CREATE VIEW collective_peaks AS
WITH typed AS (
    SELECT g.coll_group, g.ranks, COALESCE(g.nodes, 1) AS nodes,
           COALESCE(g.instance_type, (SELECT instance_type FROM run_hardware)) AS instance_type
    FROM collective_groups AS g
)
SELECT g.coll_group, g.ranks, g.nodes, g.instance_type,
       CASE WHEN g.nodes = 1 THEN COALESCE(h.node_link_bytes_per_s, h.chip_link_bytes_per_s)
            ELSE LEAST(COALESCE(h.node_link_bytes_per_s, h.chip_link_bytes_per_s),
                       h.network_bytes_per_s * (CAST(g.ranks AS DOUBLE) / g.nodes) / h.cores) END AS peak_busbw
FROM typed AS g
LEFT JOIN hardware AS h ON h.instance_type = g.instance_type;

-- The platform the run's devices are (one row): the collector's `device_kind` (Kineto traces:
-- cuda, rocm, mtia, xpu, hpu, cpu), else `trainium` for a Trn instance type; the device model;
-- and what matrix-multiply advice needs: whether BF16 is supported and how much faster the
-- fastest supported 16-bit tensor format runs matmuls than FP32, from the `hardware` table
-- (Trainium) or `gpu_hardware` (V100, A100, H100). Null where the table does not know the device:
-- a rule then says what it assumed.
-- @column device_kind     trainium, cuda, rocm, mtia, xpu, hpu, cpu; null when unknown
-- @column device_model    device name or instance type; null when unknown
-- @column platform        the platform in words, e.g. `CUDA (Tesla V100-SXM2-32GB)`, `Trainium (trn1.32xlarge)`
-- @column bf16            whether the device computes in BF16; null when unknown
-- @column half_dtype      the 16-bit format to cast matmuls to: bf16, or fp16 where BF16 is missing; null when unknown
-- @column half_speedup    tensor peak in half_dtype over the FP32 matmul peak; null when unknown
CREATE VIEW run_platform AS
WITH job AS (
    SELECT j.device_kind, j.device_model, h.instance_type, h.tensor_bf16_flops, h.tensor_fp32_flops
    FROM run_job AS j, run_hardware AS h
),
kinded AS (
    SELECT COALESCE(device_kind, CASE WHEN instance_type LIKE 'trn%' THEN 'trainium' END) AS device_kind,
           COALESCE(device_model, instance_type) AS device_model, tensor_bf16_flops, tensor_fp32_flops
    FROM job
),
gpu AS (
    SELECT k.*, g.bf16 AS gpu_bf16, g.fp32_flops, g.tensor_fp16_flops, g.tensor_bf16_flops AS gpu_bf16_flops
    FROM kinded AS k
    LEFT JOIN gpu_hardware AS g
        ON k.device_kind IN ('cuda', 'rocm') AND STRPOS(LOWER(COALESCE(k.device_model, '')), g.match) > 0
)
SELECT device_kind, device_model,
       CASE device_kind WHEN 'trainium' THEN 'Trainium' WHEN 'cuda' THEN 'CUDA' WHEN 'rocm' THEN 'ROCm'
                        WHEN 'mtia' THEN 'MTIA' WHEN 'xpu' THEN 'Intel XPU' WHEN 'hpu' THEN 'Gaudi HPU'
                        WHEN 'cpu' THEN 'CPU only' ELSE 'unknown platform' END
           || COALESCE(' (' || device_model || ')', '') AS platform,
       CASE WHEN device_kind = 'trainium' THEN TRUE ELSE gpu_bf16 END AS bf16,
       CASE WHEN device_kind = 'trainium' THEN 'bf16' WHEN gpu_bf16 THEN 'bf16'
            WHEN gpu_bf16 = FALSE THEN 'fp16' END AS half_dtype,
       CASE WHEN device_kind = 'trainium' THEN tensor_bf16_flops / tensor_fp32_flops
            ELSE COALESCE(gpu_bf16_flops, tensor_fp16_flops) / fp32_flops END AS half_speedup
FROM gpu;
