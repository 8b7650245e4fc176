-- @requires communication

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
SELECT 'node', 'NeuronLink per NeuronCore (intra-node)', node_link_bytes_per_s
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
-- a rule then says what it assumed. On Trainium also the software stack the advice follows: the
-- Neuron SDK and the framework as the job metadata records them; without a recorded framework,
-- torch-xla before Neuron 2.30 and TorchNeuron (native PyTorch) from 2.30 on, when Neuron 2.30
-- ended PyTorch/XLA support for training; without either, TorchNeuron on Trainium2 and torch-xla
-- on Trainium1, stated as an assumption (`stack_assumed`).
-- @column device_kind     trainium, cuda, rocm, mtia, xpu, hpu, cpu; null when unknown
-- @column device_model    device name or instance type; null when unknown
-- @column platform        the platform in words, e.g. `CUDA (Tesla V100-SXM2-32GB)`, `Trainium (trn1.32xlarge)`
-- @column bf16            whether the device computes in BF16; null when unknown
-- @column half_dtype      the 16-bit format to cast matmuls to: bf16, or fp16 where BF16 is missing; null when unknown
-- @column half_speedup    tensor peak in half_dtype over the FP32 matmul peak; null when unknown
-- @column chip            Trainium1 or Trainium2 (hardware table); null off Trainium or for an unknown instance type
-- @column neuron_sdk      Neuron SDK release as recorded (run_job), e.g. 2.30.0; null when not recorded
-- @column framework       on Trainium (or no device named): torch-xla, torchneuron, torchtitan or jax (recorded, else derived); null elsewhere
-- @column stack_assumed   true when the framework is assumed: neither it nor the Neuron SDK is recorded
-- @column stack           the Trainium software stack in words, with the assumption when there is one; null elsewhere
CREATE VIEW run_platform AS
WITH job AS (
    SELECT j.device_kind, j.device_model, h.instance_type, h.tensor_bf16_flops, h.tensor_fp32_flops,
           hw.chip, j.neuron_sdk,
           TRY_CAST(SPLIT_PART(j.neuron_sdk, '.', 1) AS INTEGER) * 1000
               + TRY_CAST(SPLIT_PART(j.neuron_sdk, '.', 2) AS INTEGER) AS sdk_order,
           CASE WHEN LOWER(j.framework) LIKE '%jax%' THEN 'jax'
                WHEN LOWER(j.framework) LIKE '%xla%' THEN 'torch-xla'
                WHEN LOWER(j.framework) LIKE '%titan%' THEN 'torchtitan'
                WHEN LOWER(j.framework) LIKE '%neuron%' OR LOWER(j.framework) IN ('torch', 'pytorch') THEN 'torchneuron'
                END AS recorded_framework
    FROM run_job AS j CROSS JOIN run_hardware AS h
    LEFT JOIN hardware AS hw ON hw.instance_type = h.instance_type
),
kinded AS (
    SELECT COALESCE(device_kind, CASE WHEN instance_type LIKE 'trn%' THEN 'trainium' END) AS device_kind,
           COALESCE(device_model, instance_type) AS device_model, tensor_bf16_flops, tensor_fp32_flops,
           chip, neuron_sdk, sdk_order, recorded_framework
    FROM job
),
stacked AS (
    SELECT k.*,
           CASE WHEN k.device_kind <> 'trainium' THEN NULL  -- no device named: Trainium assumed, as the rules do
                WHEN k.recorded_framework IS NOT NULL THEN k.recorded_framework
                WHEN k.sdk_order >= 2030 THEN 'torchneuron'
                WHEN k.sdk_order IS NOT NULL THEN 'torch-xla'
                WHEN k.chip = 'Trainium2' THEN 'torchneuron'
                ELSE 'torch-xla' END AS framework,
           COALESCE(k.device_kind, 'trainium') = 'trainium' AND k.recorded_framework IS NULL
               AND k.sdk_order IS NULL AS stack_assumed
    FROM kinded AS k
),
gpu AS (
    SELECT k.*, g.bf16 AS gpu_bf16, g.fp32_flops, g.tensor_fp16_flops, g.tensor_bf16_flops AS gpu_bf16_flops
    FROM stacked AS k
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
            ELSE COALESCE(gpu_bf16_flops, tensor_fp16_flops) / fp32_flops END AS half_speedup,
       chip, neuron_sdk, framework, COALESCE(stack_assumed, FALSE) AS stack_assumed,
       CASE WHEN framework IS NULL THEN NULL
            ELSE CASE framework WHEN 'torch-xla' THEN 'torch-xla (PyTorch/XLA)'
                                WHEN 'torchneuron' THEN 'TorchNeuron (native PyTorch on Neuron)'
                                WHEN 'torchtitan' THEN 'TorchTitan on TorchNeuron'
                                ELSE 'JAX' END
                 || ' on Neuron' || COALESCE(' ' || neuron_sdk, '')
                 || CASE WHEN stack_assumed AND framework = 'torchneuron'
                         THEN ' (assumed: the run records neither the Neuron SDK nor the framework, and '
                              || 'Trainium2 trains on TorchNeuron since Neuron 2.30)'
                         WHEN stack_assumed
                         THEN ' (assumed: the run records neither the Neuron SDK nor the framework; '
                              || 'torch-xla was the Trainium1 training stack before Neuron 2.30)'
                         ELSE '' END END AS stack
FROM gpu;
