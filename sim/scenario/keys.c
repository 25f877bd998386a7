/* keys.c - the table of scenario keys (keys.h) and the name tables of the
 * enums.  Row order is the order of the canonical text (which the store
 * hashes: reordering rows changes every hash, so append within a section).
 *
 * Defaults (`def`) are what a file that leaves a key out gets; `builtin` is
 * the built-in default scenario (`mmsim run` with no file): a
 * LLaVA-OneVision-7B-like model (SigLIP so400m + MLP projector + Qwen2.5-7B)
 * on two DGX H100 nodes (16 GPUs), the encoder colocated with the LLM, one
 * image in 5 tiles (anyres 2x2 + base) of 729 tokens and 300 text tokens per
 * sample.  Any LLM config runs on top of it (--set model=models/llama-2-7b.json):
 * a model without an encoder ignores the encoder sections and the images.
 * Not for: reading or writing (read.c, write.c). */
#include "scenario/keys.h"
#include "workload/batch.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "model/fp8.h"
#include "hw/compress.h"
#include "model/moe.h"
#include "scenario/scenario.h"

const char *const mm_precision_names[] = {"bf16", "fp16", "fp8", NULL};
const char *const mm_recompute_names[] = {"none", "selective", "full", NULL};
const char *const mm_cp_comm_names[] = {"ring", "ulysses", NULL};
const char *const mm_cuda_graphs_names[] = {"none", "layer", "full", NULL};
const char *const mm_video_decoder_names[] = {"cpu", "nvdec", NULL};
const char *const mm_train_padding_names[] = {"auto", "none", "longest", "max_length", NULL};
const char *const mm_train_overlap_names[] = {"auto", "false", "true", NULL};
const char *const mm_coexec_names[] = {"none", "dhelix", NULL};
const char *const mm_enc_schedule_names[] = {"serial", "bubbles", NULL};
const char *const mm_train_grad_reduce_names[] = {"auto", "fp32", "bf16", NULL};
const char *const mm_outer_sync_names[] = {"allreduce", "diloco", "atom", NULL};
const char *const mm_outer_sync_dtype_names[] = {"fp32", "bf16", NULL};
const char *const mm_outer_sync_state_names[] = {"host", "gpu", NULL};
const char *const mm_attention_names[] = {"auto", "flash", "unfused", "flash1", "flash2", "flash3", "cudnn", "unfused-eager", NULL};
const char *const mm_placement_names[] = {"pipeline", "colocated", "disjoint",
                                          "homogeneous", NULL};
const char *const mm_batching_names[] = {"sequential", "grouped", "packed", "balanced",
                                         "post-balance", NULL};
const char *const mm_network_names[] = {"flow", "analytic", NULL};
static const char *const projector_sides[] = {"encoder", "llm", NULL};
static const char *const workload_kinds[] = {"fixed", NULL};

#define F(field) offsetof(mm_scenario, field), sizeof(((mm_scenario *)0)->field)
#define NOFIELD SIZE_MAX, 0
#define POS INT64_C(1), (int64_t)INT_MAX
#define NONNEG INT64_C(0), (int64_t)INT_MAX

/* The rows of one module layout; tp first so that a typo such as `tpp`,
 * as close to tp as to pp, suggests tp. */
#define LAYOUT(m, flags, what, b_tp, b_pp, b_cp, b_dp, b_vpp, b_ep)                                                      \
    {"parallel." #m, MM_KT_SECTION, (flags) | MM_KF_FLOW, 0, 0, 0, 0, NULL, NULL, NULL,                      \
     what, F(parallel.m.present), 0},                                                                        \
    {"parallel." #m ".tp", MM_KT_INT, 0, POS, 0, 0, NULL, "1", b_tp, "tensor-parallel degree",                 \
     F(parallel.m.lay.tp), 0},                                                                                   \
    {"parallel." #m ".pp", MM_KT_INT, 0, POS, 0, 0, NULL, "1", b_pp, "pipeline stages", F(parallel.m.lay.pp), 0},  \
    {"parallel." #m ".cp", MM_KT_INT, 0, POS, 0, 0, NULL, "1", b_cp,                                           \
     "context-parallel degree (splits the sequence)", F(parallel.m.lay.cp), 0},                                  \
    {"parallel." #m ".dp", MM_KT_INT, 0, POS, 0, 0, NULL, "1", b_dp, "data-parallel degree",                   \
     F(parallel.m.lay.dp), 0},                                                                                   \
    {"parallel." #m ".vpp", MM_KT_INT, 0, POS, 0, 0, NULL, "1", b_vpp,                                         \
     "virtual stages per pipeline rank (interleaved schedule)", F(parallel.m.lay.vpp), 0},                       \
    {"parallel." #m ".ep", MM_KT_INT, 0, POS, 0, 0, NULL, "1", b_ep,                                           \
     "expert-parallel degree (MoE; divides dp and the experts)", F(parallel.m.lay.ep), 0},                       \
    {"parallel." #m ".zero", MM_KT_INT, MM_KF_INHERIT, 0, 3, 0, 0, NULL, NULL, NULL,                         \
     "ZeRO stage of this module; unset: train.zero", F(parallel.m.zero), 0},                                 \
    {"parallel." #m ".recompute", MM_KT_ENUM, MM_KF_INHERIT, 0, 0, 0, 0, mm_recompute_names, NULL, NULL,     \
     "activation recomputation of this module; unset: train.recompute", F(parallel.m.recompute), 0},        \
    {"parallel." #m ".sp", MM_KT_BOOL, 0, 0, 0, 0, 0, NULL, "false", NULL,                                   \
     "sequence parallelism of this module (the LLM also takes train.sequence_parallel)", F(parallel.m.sp),   \
     0},                                                                                                     \
    {"parallel." #m ".layers_per_stage", MM_KT_INT_LIST, 0, NONNEG, 0, 0, NULL, "[]", NULL,                  \
     "layers of each pipeline stage, e.g. [2, 3, 3, 2]; []: an even split",                                  \
     F(parallel.m.lay.layers_per_stage), offsetof(mm_scenario, parallel.m.lay.n_layers_per_stage)},          \
    {"parallel." #m ".embedding_in_split", MM_KT_BOOL, 0, 0, 0, 0, 0, NULL, "false", NULL,                   \
     "the embedding counts as one layer in the pipeline split (Megatron-LM's "                              \
     "--account-for-embedding-in-pipeline-split): the first chunk of stage 0 holds one layer fewer",         \
     F(parallel.m.lay.embedding_in_split), 0},                                                               \
    {"parallel." #m ".loss_in_split", MM_KT_BOOL, 0, 0, 0, 0, 0, NULL, "false", NULL,                        \
     "the loss counts as one layer in the pipeline split (Megatron-LM's "                                   \
     "--account-for-loss-in-pipeline-split): the last chunk of the last stage holds one layer fewer",       \
     F(parallel.m.lay.loss_in_split), 0}

const mm_key mm_keys[] = {
    {"model", MM_KT_MODEL, MM_KF_REQUIRED, 0, 0, 0, 0, NULL, NULL, "models/llava-ov-qwen2.5-7b.yaml",
     "model config: the path of an HF config.json (LLM or LLaVA/InternVL) or of an mmsim model YAML, or "
     "that config's keys inline (a mapping)", F(model), 0},
    {"cluster", MM_KT_SECTION, 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NOFIELD, 0},
    {"cluster.topology", MM_KT_STR, MM_KF_REQUIRED, 0, 0, 0, 0, NULL, NULL, "topologies/dgx-h100.yaml",
     "topology file: GPUs, links and switches of one node and the fabric", F(topology), 0},
    {"cluster.nodes", MM_KT_INT, 0, POS, 0, 0, NULL, "1", "2", "nodes of the topology", F(nodes), 0},
    {"train", MM_KT_SECTION, 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NOFIELD, 0},
    {"train.global_batch", MM_KT_I64, MM_KF_DERIVED, INT64_C(1), INT64_MAX, 0, 0, NULL, NULL, "64",
     "samples per iteration, a multiple of micro_batch x dp; unset: micro_batch x parallel.llm.dp",
     F(train.global_batch), 0},
    {"train.micro_batch", MM_KT_I64, 0, POS, 0, 0, NULL, "1", "1", "samples per micro-batch",
     F(train.micro_batch), 0},
    {"train.seq_len", MM_KT_I64, 0, INT64_C(1), INT64_MAX, 0, 0, NULL, "4096", "4096",
     "max LLM tokens per sample (text + visual) or packed sequence", F(train.seq_len), 0},
    {"train.precision", MM_KT_ENUM, 0, 0, 0, 0, 0, mm_precision_names, "bf16", "bf16",
     "compute precision (fp8 needs a GPU with an FP8 peak)", F(train.precision), 0},
    {"train.recompute", MM_KT_ENUM, 0, 0, 0, 0, 0, mm_recompute_names, "none", "selective",
     "activation recomputation (selective: Megatron's attention core)", F(train.recompute), 0},
    {"train.sequence_parallel", MM_KT_BOOL, 0, 0, 0, 0, 0, NULL, "false", "false",
     "Megatron sequence parallelism of the LLM (all-gather/reduce-scatter instead of all-reduce)",
     F(train.sequence_parallel), 0},
    {"train.zero", MM_KT_INT, 0, 0, 3, 0, 0, NULL, "0", "1",
     "ZeRO stage: 0, 1 (distributed optimizer), 2 (+ gradients), 3 (+ weights, per-layer gathers)",
     F(train.zero), 0},
    {"train.schedule", MM_KT_ENUM, 0, 0, 0, 0, 0, mm_schedule_names, "1f1b", "1f1b",
     "pipeline schedule (interleaved needs vpp > 1, zb-v vpp 2); one train.framework's profile lists (its "
     "schedules)", F(train.schedule), 0},
    {"train.overlap_grad_reduce", MM_KT_ENUM, 0, 0, 0, 0, 0, mm_train_overlap_names, "auto", "auto",
     "ZeRO 0-2: reduce gradient buckets during the backward (Megatron's --overlap-grad-reduce, DeepSpeed's "
     "overlap_comm); false: after it, or blocking each backward where the profile's grad_sync reduces every "
     "micro-batch; ZeRO-3: false runs the gathers and reduce-scatters on the compute stream (DeepSpeed "
     "overlap_comm false; refused where the profile's overlap.zero3_blocking is false); auto: the "
     "train.framework profile's `overlap.grad_reduce`",
     F(train.overlap_grad_reduce), 0},
    {"train.overlap_param_gather", MM_KT_ENUM, 0, 0, 0, 0, 0, mm_train_overlap_names, "auto", "auto",
     "ZeRO 1-2: overlap the distributed optimizer's parameter all-gather with the forward; auto: the "
     "profile's `overlap.param_gather`",
     F(train.overlap_param_gather), 0},
    {"train.tp_comm_overlap", MM_KT_BOOL, 0, 0, 0, 0, 0, NULL, "false", "false",
     "TP traffic on a side stream, concurrent with the layer's compute", F(train.tp_comm_overlap), 0},
    {"train.coexec", MM_KT_ENUM, 0, 0, 0, 0, 0, mm_coexec_names, "none", NULL,
     "micro-batch co-execution: none, or dhelix (DHelix, arXiv 2411.15871: micro-batches 2k and 2k+1 run "
     "each pass as two interleaved strands, one's TP/CP/EP traffic beside the other's compute; two "
     "micro-batches' activations in flight per pair)",
     F(train.coexec), 0},
    {"train.encoder_schedule", MM_KT_ENUM, 0, 0, 0, 0, 0, mm_enc_schedule_names, "serial", NULL,
     "where a colocated encoder's passes run: serial (every forward before the LLM's, every backward after) "
     "or bubbles (Optimus, arXiv 2408.03505: each micro-batch's encoder kernels, split over its LLM replica's "
     "pipeline ranks, fill those GPUs' idle time, forward before the LLM forward that takes it, backward after "
     "the LLM backward that gives its gradient)",
     F(train.encoder_schedule), 0},
    {"train.memory_reserve_gib", MM_KT_DOUBLE, 0, 0, 0, 0.0, 1e6, NULL, "0", "0",
     "HBM held back from the OOM verdict on top of the modeled reserve (the framework's memory section: allocator, CUDA context, NCCL, workspaces)",
     F(train.memory_reserve_gib), 0},
    {"train.cp_comm", MM_KT_ENUM, 0, 0, 0, 0, 0, mm_cp_comm_names, "ring", NULL,
     "context-parallel attention: ring (KV exchange) or ulysses (all-to-all)", F(train.cp_comm), 0},
    {"train.cuda_graphs", MM_KT_ENUM, 0, 0, 0, 0, 0, mm_cuda_graphs_names, "none", NULL,
     "CUDA graphs: none (every kernel launched by the host), layer (each layer's pass replayed as one graph: "
     "Megatron-Core --enable-cuda-graph), full (the whole forward-backward as one graph: Megatron-Core "
     "--cuda-graph-scope full_iteration); refused where train.framework's profile has no such scope",
     F(train.cuda_graphs), 0},
    {"train.attention", MM_KT_ENUM, 0, 0, 0, 0, 0, mm_attention_names, "auto", NULL,
     "attention kernel: auto (train.framework's for the GPU), flash (the topology's table), unfused "
     "(batched GEMMs + Megatron's fused softmax + dropout), flash1, flash2, flash3, cudnn, unfused-eager "
     "(PyTorch eager ops: a separate causal-mask add and torch.softmax)",
     F(train.attention), 0},
    {"train.framework", MM_KT_STR, 0, 0, 0, 0, 0, NULL, "megatron-core", NULL,
     "how the framework runs a layer (frameworks/: megatron-core, megatron-local, hf-deepspeed, fsdp; "
     "or a profile file)",
     F(train.framework), 0},
    {"train.pass_times", MM_KT_STR, 0, 0, 0, 0, 0, NULL, "\"\"", NULL,
     "CSV of measured per-stage F/B/W/p2p times replacing the cost model; \"\": none",
     F(train.pass_times), 0},
    {"train.frozen", MM_KT_NAME_LIST, 0, 0, 0, 0, 0, NULL, "[]", "[]",
     "modules without weight gradients or optimizer: vision, projector, audio, audio_projector, llm "
     "(input gradients only where a trainable module lies upstream)",
     F(train.frozen), offsetof(mm_scenario, train.n_frozen)},
    {"train.padding", MM_KT_ENUM, 0, 0, 0, 0, 0, mm_train_padding_names, "auto", "auto",
     "LLM sequences: auto (the train.framework profile's `padding`, or its `padding_pipelined` when "
     "the LLM is pipelined, pp > 1), none (varlen), longest (each micro-batch to its "
     "longest sample), max_length (to train.pad_to); packed batching stays varlen",
     F(train.padding), 0},
    {"train.pad_to", MM_KT_I64, 0, INT64_C(0), INT64_MAX, 0, 0, NULL, "0", NULL,
     "max_length padding: the length every sample is padded to (Megatron-Core's decoder sequence "
     "length); 0: train.seq_len.  Refused with train.padding none or longest",
     F(train.pad_to), 0},
    {"train.fp8_recipe", MM_KT_ENUM, 0, 0, 0, 0, 0, mm_fp8_recipe_names, "delayed", NULL,
     "FP8 scaling recipe of Transformer Engine (train.precision fp8 only): delayed (amax history), current "
     "(per-tensor amax of the tensor itself), mxfp8 (1x32 E8M0 block scales; Blackwell only), blockwise "
     "(1x128 / 128x128 fp32 block scales; Hopper and later)",
     F(train.fp8_recipe), 0},
    {"train.fp8_param_gather", MM_KT_BOOL, 0, 0, 0, 0, 0, NULL, "false", NULL,
     "FP8 primary weights (Megatron-Core --fp8-param-gather): no 16-bit weight copy, the DP parameter "
     "all-gather in 1 byte per FP8 weight (train.precision fp8 only)",
     F(train.fp8_param_gather), 0},
    {"train.fp8_grads", MM_KT_BOOL, 0, 0, 0, 0, 0, NULL, "false", NULL,
     "FP8-LM level O1 (MS-AMP): FP8 weight gradients of the FP8 GEMMs' weights, reduced over DP in 8 bits "
     "(train.precision fp8 only)",
     F(train.fp8_grads), 0},
    {"train.fp8_optimizer", MM_KT_BOOL, 0, 0, 0, 0, 0, NULL, "false", NULL,
     "FP8-LM level O2 (MS-AMP): Adam's first moment in FP8, second moment and master weights in FP16 for "
     "the FP8 GEMMs' weights (train.precision fp8 only)",
     F(train.fp8_optimizer), 0},
    {"train.grad_reduce", MM_KT_ENUM, 0, 0, 0, 0, 0, mm_train_grad_reduce_names, "auto", NULL,
     "the element of the gradient buffer and its DP reduce: auto (the train.framework profile's "
     "`grad_reduce` for the precision: Megatron-LM's fp32 under bf16), fp32, bf16 (Megatron-LM's "
     "--grad-reduce-in-bf16; Megatron-Bridge's grad_reduce_in_fp32 False)",
     F(train.grad_reduce), 0},
    {"train.grad_accum_fusion", MM_KT_BOOL, 0, 0, 0, 0, 0, NULL, "true", NULL,
     "weight-gradient accumulation fused into the wgrad GEMM (Megatron-LM's default, apex "
     "fused_weight_gradient_mlp_cuda); false (--no-gradient-accumulation-fusion): the GEMM writes a 16-bit "
     "gradient and a kernel adds it to the main gradient every micro-batch (MS-AMP's add_to_fp8 under "
     "train.fp8_grads)",
     F(train.grad_accum_fusion), 0},
    /* A training run's periodic work (cost/runcost.h): off (0) by default, so
     * that the per-iteration figures stay the step's; Megatron-LM's defaults
     * are --log-interval 100, --eval-interval 1000, --eval-iters 100, no
     * --save-interval (NVIDIA/Megatron-LM megatron/training/arguments.py,
     * _add_logging_args, _add_validation_args, _add_checkpointing_args). */
    {"train.train_iters", MM_KT_INT, 0, NONNEG, 0, 0, NULL, "0", NULL,
     "iterations of the whole training run (Megatron-LM --train-iters) for the run total "
     "(run_total_s: iterations times the step plus the saves, evaluations and logging syncs below); 0: no total",
     F(train.train_iters), 0},
    {"train.log_interval", MM_KT_INT, 0, NONNEG, 0, 0, NULL, "0", NULL,
     "iterations between loss reports (Megatron-LM --log-interval, default 100): each reads the loss on the "
     "host (.item()), a device-to-host sync; 0: not modeled",
     F(train.log_interval), 0},
    {"train.save_interval", MM_KT_INT, 0, NONNEG, 0, 0, NULL, "0", NULL,
     "iterations between checkpoint saves (Megatron-LM --save-interval): each rank writes its weights and "
     "optimizer state at train.save_gb_s; 0: no saves",
     F(train.save_interval), 0},
    {"train.save_gb_s", MM_KT_DOUBLE, 0, 0, 0, 0.0, 1e6, NULL, "0", NULL,
     "write bandwidth of the checkpoint storage per node, GB/s (10^9 bytes); required with train.save_interval",
     F(train.save_gb_s), 0},
    {"train.eval_interval", MM_KT_INT, 0, NONNEG, 0, 0, NULL, "0", NULL,
     "iterations between evaluations (Megatron-LM --eval-interval, default 1000); 0: none",
     F(train.eval_interval), 0},
    {"train.eval_iters", MM_KT_INT, 0, NONNEG, 0, 0, NULL, "100", NULL,
     "forward-only iterations of one evaluation (Megatron-LM --eval-iters, default 100)",
     F(train.eval_iters), 0},
    {"train.outer_sync", MM_KT_SECTION, MM_KF_FLOW, 0, 0, 0, 0, NULL, NULL, NULL,
     "training across the topology's sites (its sites: section; cluster.nodes and parallel.* are one site's): "
     "how the sites synchronise over the WAN; null: one site, no WAN (a topology with sites refuses it)",
     F(train.outer_sync.present), 0},
    {"train.outer_sync.algorithm", MM_KT_ENUM, 0, 0, 0, 0, 0, mm_outer_sync_names, "diloco", NULL,
     "allreduce: the gradients all-reduced across sites after every step (data parallelism over the WAN); "
     "diloco: H local steps, then the pseudo-gradient (the H steps' change of the weights) all-reduced across "
     "sites (DiLoCo; DiLoCoX, arXiv 2506.21263); atom: ATOM (arXiv 2403.10504), every GPU of a peer (site) "
     "trains a whole copy of the model swapped group by group from host memory over PCIe, the peers' models "
     "averaged asynchronously every H steps behind the training",
     F(train.outer_sync.algorithm), 0},
    {"train.outer_sync.h", MM_KT_INT, 0, POS, 0, 0, NULL, "1", NULL,
     "inner steps between outer syncs (diloco, atom; allreduce syncs every step: 1)", F(train.outer_sync.h), 0},
    {"train.outer_sync.overlap", MM_KT_BOOL, 0, 0, 0, 0, 0, NULL, "false", NULL,
     "DiLoCoX's one-step-delay overlap (diloco): round k's sync runs during round k+1's H steps, and only "
     "what outlasts them is exposed, max(0, sync - H x step); false: each sync blocks the sites",
     F(train.outer_sync.overlap), 0},
    {"train.outer_sync.dtype", MM_KT_ENUM, 0, 0, 0, 0, 0, mm_outer_sync_dtype_names, "fp32", NULL,
     "the values the sync sends: fp32 (the outer optimizer's master copy) or bf16",
     F(train.outer_sync.dtype), 0},
    {"train.outer_sync.compress", MM_KT_ENUM, 0, 0, 0, 0, 0, mm_compressor_names, "none", NULL,
     "compressor of the synced fp32 values (comm.compress's table): compressed buffers all-gathered across "
     "sites, a compress kernel before and S - 1 decompressions after",
     F(train.outer_sync.compress), 0},
    {"train.outer_sync.compress_ratio", MM_KT_DOUBLE, 0, 0, 0, 0.0, 1e6, NULL, "0", NULL,
     "the compressor's ratio (input over compressed bytes) overriding the table's; 0: the table's",
     F(train.outer_sync.compress_ratio), 0},
    {"train.outer_sync.compress_gb_s", MM_KT_DOUBLE, 0, 0, 0, 0.0, 1e6, NULL, "0", NULL,
     "the compress kernel's throughput, GB/s of input; 0: the table's where its GPU is the topology's, else "
     "refused",
     F(train.outer_sync.compress_gb_s), 0},
    {"train.outer_sync.decompress_gb_s", MM_KT_DOUBLE, 0, 0, 0, 0.0, 1e6, NULL, "0", NULL,
     "the decompress kernel's throughput, GB/s of output; 0: the table's, else refused",
     F(train.outer_sync.decompress_gb_s), 0},
    {"train.outer_sync.state", MM_KT_ENUM, 0, 0, 0, 0, 0, mm_outer_sync_state_names, "host", NULL,
     "where diloco's outer optimizer state lives: host (not charged to the GPU, as OpenDiLoCo offloads it) or gpu "
     "(DiLoCoX's distributed outer optimizer: an fp32 copy of the weights and Nesterov momentum, and with the "
     "overlap the pseudo-gradient in flight, over the stage's DP ranks)",
     F(train.outer_sync.state), 0},
    {"data", MM_KT_SECTION, 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NOFIELD, 0},
    {"data.workers", MM_KT_INT, 0, INT64_C(-1), INT64_C(4096), 0, 0, NULL, "-1", NULL,
     "data-loader worker processes per GPU (PyTorch DataLoader num_workers): -1 the loader is not modeled "
     "(the step never waits for data); 0 loading in the training process, serially before each micro-batch; "
     "N > 0 N worker processes on the node's CPU cores (topology node.cpu_cores) loading ahead",
     F(data.workers), 0},
    {"data.prefetch", MM_KT_INT, 0, POS, 0, 0, NULL, "2", NULL,
     "batches each worker loads ahead (PyTorch DataLoader prefetch_factor, default 2); refused with "
     "data.workers 0 as PyTorch refuses it",
     F(data.prefetch), 0},
    {"data.image_megapixels", MM_KT_DOUBLE, 0, 0, 0, 0.0, 1e4, NULL, "0", NULL,
     "decoded size of each source image (JPEG); 0: the pixels of its tiles (a lower bound)",
     F(data.image_megapixels), 0},
    {"data.video_megapixels", MM_KT_DOUBLE, 0, 0, 0, 0.0, 1e4, NULL, "0", NULL,
     "decoded size of each video frame at the source resolution; 0: the encoder's input frame (a lower bound)",
     F(data.video_megapixels), 0},
    {"data.video_decoder", MM_KT_ENUM, 0, 0, 0, 0, 0, mm_video_decoder_names, "cpu", NULL,
     "video decoder: cpu (FFmpeg software decode in the loader workers, as decord) or nvdec (the GPU's "
     "NVDEC engines, topology gpu.nvdec)",
     F(data.video_decoder), 0},
    {"parallel", MM_KT_SECTION, 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NOFIELD, 0},
    LAYOUT(llm, MM_KF_ALWAYS, "the LLM's layout (tp x cp x pp x dp = its GPUs)", "4", "2", "1", "2", "1", "1"),
    LAYOUT(vision, 0, "the vision encoder's layout (cp, vpp, ep stay 1); absent: none", "1", "1", NULL, "16",
           NULL, NULL),
    LAYOUT(audio, 0, "the audio encoder's layout (cp, vpp, ep stay 1); absent: none", NULL, NULL, NULL, NULL,
           NULL, NULL),
    {"parallel.placement", MM_KT_ENUM, 0, 0, 0, 0, 0, mm_placement_names, "pipeline", "colocated",
     "where encoders run: own pipeline stages, sharded over the LLM's GPUs, own GPUs ahead, or the LLM's first stage",
     F(parallel.placement), 0},
    {"parallel.order", MM_KT_WORD, 0, 0, 0, 0, 0, NULL, "tp-cp-ep-dp-pp", NULL,
     "rank placement, fastest-varying first (Megatron-LM's default)", F(parallel.order), 0},
    {"parallel.projector", MM_KT_ENUM, 0, 0, 0, 0, 0, projector_sides, "encoder", NULL,
     "which side runs the projector: the encoder's, or the LLM's first stage", F(parallel.projector_on_llm), 0},
    {"workload", MM_KT_WORKLOAD, 0, 0, 0, 0, 0, NULL, "text", NULL,
     "`text` (every sample is seq_len text tokens), a mixture or trace file, or a fixed sample {kind: fixed, ...}",
     NOFIELD, 0},
    {"workload.kind", MM_KT_ENUM, 0, 0, 0, 0, 0, workload_kinds, NULL, "fixed",
     "a fixed sample: every sample has the shape below", NOFIELD, 0},
    {"workload.images", MM_KT_INT, 0, NONNEG, 0, 0, NULL, "0", "1", "images per sample", F(workload.images), 0},
    {"workload.tiles", MM_KT_INT, 0, POS, 0, 0, NULL, "1", "5", "tiles per image (anyres crops + base)",
     F(workload.tiles), 0},
    {"workload.text_tokens", MM_KT_I64, 0, INT64_C(0), INT64_MAX, 0, 0, NULL, "0", "300", "text tokens per sample",
     F(workload.text_tokens), 0},
    {"workload.audio_seconds", MM_KT_DOUBLE, 0, 0, 0, 0.0, 1e6, NULL, "0", NULL,
     "seconds of audio per sample (ceil(s/30) Whisper clips, 25 LLM tokens per second)",
     F(workload.audio_seconds), 0},
    {"batching", MM_KT_ENUM, 0, 0, 0, 0, 0, mm_batching_names, "sequential", "sequential",
     "micro-batch formation: as sampled, length-grouped, packed, DFLOP-balanced, or DP post-balanced",
     F(batching), 0},
    {"network", MM_KT_ENUM, 0, 0, 0, 0, 0, mm_network_names, "flow", "flow",
     "network model: flow (max-min link sharing) or analytic (alpha-beta, no contention)", F(network), 0},
    {"iterations", MM_KT_INT, 0, POS, 0, 0, NULL, "1", "2", "simulated iterations", F(iterations), 0},
    {"seed", MM_KT_U64, 0, INT64_C(0), INT64_MAX, 0, 0, NULL, "1", "1",
     "random seed: workload draws, perturbation fractions, jitter", F(seed), 0},
    {"perturb", MM_KT_PERTURB, 0, 0, 0, 0, 0, NULL, "[]", NULL,
     "what-if perturbations: a list of {kind: slow_gpu | jitter | hbm | nic | rail | switch | link | "
     "node_group | stall, ...}",
     F(perturb), 0},
    {"moe", MM_KT_SECTION, 0, 0, 0, 0, 0, NULL, NULL, NULL,
     "mixture-of-experts routing and dispatch (Megatron-Core's); ignored by a dense model", NOFIELD, 0},
    {"moe.routing", MM_KT_ENUM, 0, 0, 0, 0, 0, mm_moe_routing_names, "aux_loss", NULL,
     "how the router spreads each layer's tokens: balanced (every expert exactly its mean), aux_loss (expert "
     "popularity ~ Dirichlet(routing_param) per layer, tokens drawn from it; with the aux-loss kernels), skewed "
     "(Zipf popularity, exponent routing_param, no balancing loss); drawn from the seed",
     F(moe.routing), 0},
    {"moe.routing_param", MM_KT_DOUBLE, 0, 0, 0, 0.0, 1e9, NULL, "0", NULL,
     "aux_loss: Dirichlet concentration (larger = more even; 0: 16); skewed: Zipf exponent (0: 0.5)",
     F(moe.routing_param), 0},
    {"moe.capacity_factor", MM_KT_DOUBLE, 0, 0, 0, 0.0, 1e6, NULL, "0", NULL,
     "expert capacity = ceil(tokens x k / experts x factor) per source rank, extra tokens dropped "
     "(--moe-expert-capacity-factor); 0: dropless",
     F(moe.capacity_factor), 0},
    {"moe.drop_policy", MM_KT_ENUM, 0, 0, 0, 0, 0, mm_moe_drop_names, "probs", NULL,
     "which tokens a full expert drops (--moe-token-drop-policy); the same number either way",
     F(moe.drop_policy), 0},
    {"moe.pad_to_capacity", MM_KT_BOOL, 0, 0, 0, 0, 0, NULL, "false", NULL,
     "every expert gets exactly its capacity of rows (--moe-pad-expert-input-to-capacity; needs capacity_factor)",
     F(moe.pad_to_capacity), 0},
    {"moe.dispatcher", MM_KT_ENUM, 0, 0, 0, 0, 0, mm_moe_dispatcher_names, "alltoall", NULL,
     "token dispatcher (--moe-token-dispatcher-type): alltoall, or allgather (ep 1 only)",
     F(moe.dispatcher), 0},
    {"moe.grouped_gemm", MM_KT_BOOL, 0, 0, 0, 0, 0, NULL, "true", NULL,
     "experts as one grouped GEMM per projection (--moe-grouped-gemm); false: one GEMM after another "
     "(SequentialMLP)",
     F(moe.grouped_gemm), 0},
    {"moe.expert_tp", MM_KT_INT, 0, NONNEG, 0, 0, NULL, "0", NULL,
     "the experts' tensor-parallel degree (--expert-tensor-parallel-size): must be what parallel.llm.ep's fold "
     "gives, tp / (ep / gcd(ep, dp)) (MoE parallel folding); 0: that",
     F(moe.expert_tp), 0},
    {"zero", MM_KT_SECTION, 0, 0, 0, 0, 0, NULL, NULL, NULL,
     "DeepSpeed's ZeRO-3 settings (zero_optimization.stage3_*), in parameters; -1: the train.framework profile's "
     "zero3 values (hf-deepspeed: DeepSpeed's defaults); read under ZeRO-3 by a profile that gathers module by "
     "module (zero3.gather: module), refused elsewhere",
     NOFIELD, 0},
    {"zero.prefetch_bucket_size", MM_KT_DOUBLE, 0, 0, 0, -1.0, 1e15, NULL, "-1", NULL,
     "parameters fetched ahead of the module computing (stage3_prefetch_bucket_size; DeepSpeed's default 5e7); "
     "0: no prefetch, each gather waits for its module",
     F(zero.prefetch_bucket_size), 0},
    {"zero.max_live_parameters", MM_KT_DOUBLE, 0, 0, 0, -1.0, 1e15, NULL, "-1", NULL,
     "parameters gathered at once, bounding the prefetch (stage3_max_live_parameters; default 1e9)",
     F(zero.max_live_parameters), 0},
    {"zero.param_persistence_threshold", MM_KT_DOUBLE, 0, 0, 0, -1.0, 1e15, NULL, "-1", NULL,
     "a parameter of at most this many elements stays gathered and a module of only such is never gathered "
     "(stage3_param_persistence_threshold; default 1e5: the norms)",
     F(zero.param_persistence_threshold), 0},
    {"zero.max_reuse_distance", MM_KT_DOUBLE, 0, 0, 0, -1.0, 1e15, NULL, "-1", NULL,
     "a gathered parameter used again within this many parameters is kept (stage3_max_reuse_distance; default "
     "1e9): under full recompute, which modules the backward gathers again after the recomputed forward",
     F(zero.max_reuse_distance), 0},
    {"comm", MM_KT_SECTION, 0, 0, 0, 0, 0, NULL, NULL, NULL, "communication options", NOFIELD, 0},
    {"comm.compress", MM_KT_SECTION, MM_KF_FLOW, 0, 0, 0, 0, NULL, NULL, NULL,
     "GPU compression of DP gradients, PP activations and TP all-reduces (hw/compress.c's table); null: none",
     F(compress.present), 0},
    {"comm.compress.dp", MM_KT_ENUM, 0, 0, 0, 0, 0, mm_compressor_names, "none", NULL,
     "compressor of the DP gradient reduction: a lossy one turns the all-reduce into an all-gather of "
     "compressed buffers, each rank decompressing the others' (ZeRO 0, reduced after the backward)",
     F(compress.dp), 0},
    {"comm.compress.pp", MM_KT_ENUM, 0, 0, 0, 0, 0, mm_compressor_names, "none", NULL,
     "compressor of the pipeline sends (activations and their gradients)", F(compress.pp), 0},
    {"comm.compress.tp", MM_KT_ENUM, 0, 0, 0, 0, 0, mm_compressor_names, "none", NULL,
     "compressor of the LLM's TP all-reduces: a lossy one turns each into a compress kernel, an all-gather of "
     "compressed buffers and the decompression of the tp - 1 others' (blocking TP, no sequence parallelism)",
     F(compress.tp), 0},
    {"comm.compress.dp_ratio", MM_KT_DOUBLE, 0, 0, 0, 0.0, 1e6, NULL, "0", NULL,
     "the DP compressor's ratio (input over compressed bytes) overriding the table's; 0: the table's",
     F(compress.dp_ratio), 0},
    {"comm.compress.pp_ratio", MM_KT_DOUBLE, 0, 0, 0, 0.0, 1e6, NULL, "0", NULL,
     "the PP compressor's ratio overriding the table's; 0: the table's", F(compress.pp_ratio), 0},
    {"comm.compress.tp_ratio", MM_KT_DOUBLE, 0, 0, 0, 0.0, 1e6, NULL, "0", NULL,
     "the TP compressor's ratio overriding the table's; 0: the table's", F(compress.tp_ratio), 0},
    {"comm.compress.compress_gb_s", MM_KT_DOUBLE, 0, 0, 0, 0.0, 1e6, NULL, "0", NULL,
     "the compress kernel's throughput, GB/s of input, overriding the table's; 0: the table's where its GPU is "
     "the topology's, else refused",
     F(compress.compress_gb_s), 0},
    {"comm.compress.decompress_gb_s", MM_KT_DOUBLE, 0, 0, 0, 0.0, 1e6, NULL, "0", NULL,
     "the decompress kernel's throughput, GB/s of output, overriding the table's; 0: as compress_gb_s",
     F(compress.decompress_gb_s), 0},
};

const size_t mm_n_keys = sizeof mm_keys / sizeof mm_keys[0];

const mm_key *mm_key_find(const char *name)
{
    for (size_t i = 0; i < mm_n_keys; i++)
        if (!strcmp(mm_keys[i].name, name))
            return &mm_keys[i];
    return NULL;
}

size_t mm_key_parent_len(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot ? (size_t)(dot - name) : 0;
}

const char *mm_key_leaf(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot ? dot + 1 : name;
}

const mm_key *mm_key_parent(const mm_key *k)
{
    size_t n = mm_key_parent_len(k->name);
    if (n == 0)
        return NULL;
    for (size_t i = 0; i < mm_n_keys; i++)
        if (strlen(mm_keys[i].name) == n && !strncmp(mm_keys[i].name, k->name, n))
            return &mm_keys[i];
    return NULL;
}

static void range_text(char *buf, size_t len, const char *type, int64_t min, int64_t max, int64_t top)
{
    if (max >= top)
        snprintf(buf, len, "%s >= %lld", type, (long long)min);
    else
        snprintf(buf, len, "%s %lld..%lld", type, (long long)min, (long long)max);
}

void mm_key_type_text(const mm_key *k, char *buf, size_t len)
{
    switch (k->type) {
    case MM_KT_SECTION:
        snprintf(buf, len, "mapping");
        break;
    case MM_KT_STR:
        snprintf(buf, len, "path");
        break;
    case MM_KT_MODEL:
        snprintf(buf, len, "path, or mapping (the config inline)");
        break;
    case MM_KT_WORD:
        snprintf(buf, len, "word");
        break;
    case MM_KT_INT:
        range_text(buf, len, "int", k->min, k->max, INT_MAX);
        break;
    case MM_KT_I64:
    case MM_KT_U64:
        range_text(buf, len, "int", k->min, k->max, INT_MAX);
        break;
    case MM_KT_DOUBLE:
        snprintf(buf, len, "number %g..%g", k->dmin, k->dmax);
        break;
    case MM_KT_BOOL:
        snprintf(buf, len, "bool");
        break;
    case MM_KT_ENUM: {
        size_t n = (size_t)snprintf(buf, len, "one of ");
        for (int i = 0; k->choices[i] && n < len; i++)
            n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? " | " : "", k->choices[i]);
        break;
    }
    case MM_KT_INT_LIST:
        snprintf(buf, len, "list of int >= %lld", (long long)k->min);
        break;
    case MM_KT_NAME_LIST:
        snprintf(buf, len, "list of names");
        break;
    case MM_KT_WORKLOAD:
        snprintf(buf, len, "text | file | mapping");
        break;
    case MM_KT_PERTURB:
        snprintf(buf, len, "list of mappings");
        break;
    }
}
