/* llm.h - a decoder-only LLM: its shape, read from a Hugging Face config.json,
 * and what it costs: parameter counts, FLOPs, and the per-op list (FLOPs and
 * bytes of each kernel of one layer on one tensor-parallel rank) that the
 * compute model times.
 *
 * FLOP conventions are Megatron-LM's (design.md section 5): matmuls only,
 * 2 FLOPs per multiply-accumulate, attention counted dense (no causal
 * halving), backward = 2x forward.  For a GPT (MHA, ffn = 4h, learned
 * positions, biases, LayerNorm) the totals reduce to Korthikanti et al.'s
 * 72*B*s*l*h^2*(1 + s/6h + V/12lh) and, with full recomputation, to
 * Narayanan et al.'s 96*B*s*l*h^2*(1 + s/6h + V/16lh) (SC'21, arXiv
 * 2104.04473, Sec. 5.1).
 *
 * Mixtral-style MoE layers are covered here (router + top-k experts).
 * Not for: vision/audio encoders or projectors (mllm.h), memory accounting (the memory model), time (sim/hw), or
 * deciding whether a layout is legal (sim/parallel checks that tp divides
 * the heads; the op list here divides shapes by tp as real numbers). */
#ifndef MM_LLM_H
#define MM_LLM_H

#include <stdbool.h>
#include <stdint.h>

#include "model/moe.h"
#include "util/err.h"

struct mm_node;
struct mm_doc;

/* Most blocks a cross-attention pattern describes (64 per word). */
#define MM_LLM_CROSS_WORDS 4
#define MM_LLM_CROSS_MAX (64 * MM_LLM_CROSS_WORDS)

/* Which family of config.json keys a model was read from. */
typedef enum mm_llm_style {
    MM_LLM_GPT2,  /* n_embd, n_layer, n_head, n_positions, n_inner */
    MM_LLM_LLAMA, /* hidden_size, num_hidden_layers, ... (llama, mistral, qwen2, ...) */
    MM_LLM_NEOX,  /* model_type gpt_neox: Llama-like keys, GPT-like blocks */
    MM_LLM_MLA,   /* DeepSeek-V2/V3: multi-head latent attention, fine-grained MoE */
    MM_LLM_MPT    /* model_type mpt: d_model, n_heads, n_layers, expansion_ratio */
} mm_llm_style;

typedef struct mm_llm {
    char name[128];       /* file stem ("llama-2-7b"), or as the caller set it */
    char source[256];     /* file it was loaded from; "" when built in code */
    char model_type[64];  /* config.json model_type ("llama", "gpt2", ...); may be "" */
    mm_llm_style style;
    int64_t hidden;       /* h: residual stream width */
    int64_t layers;       /* l: transformer blocks */
    int64_t heads;        /* a: query heads */
    int64_t kv_heads;     /* g: key/value heads (= heads for MHA, < heads for GQA) */
    int64_t head_dim;     /* d: usually hidden/heads; heads*head_dim may differ from hidden */
    int64_t ffn;          /* f: MLP inner width (one of the two up matrices when gated) */
    int64_t vocab;        /* V: rows of the embedding and of the LM head */
    int64_t max_pos;      /* max positions; rows of the position table when learned_pos;
                           * 0 when the config does not state it */
    bool gated_mlp;       /* SwiGLU/GeGLU: gate, up and down matrices (3 instead of 2) */
    bool tied;            /* LM head shares the token-embedding matrix */
    bool learned_pos;     /* learned absolute position table (GPT-2 wpe) */
    bool rope;            /* rotary position embedding applied to q and k */
    bool qkv_bias;        /* biases on the Q, K, V projections (GPT-2, NeoX, Qwen2) */
    bool out_bias;        /* bias on the attention output projection (GPT-2, NeoX) */
    bool mlp_bias;        /* biases on the MLP matrices (GPT-2, NeoX) */
    bool rmsnorm;         /* RMSNorm (weight only); false: LayerNorm (weight + bias) */
    /* Mixture of experts (Mixtral: num_local_experts, num_experts_per_tok).
     * experts = 0: a dense MLP.  Each expert is an MLP of width ffn; a
     * router (h x experts, no bias) picks experts_per_tok of them per token. */
    int64_t experts;
    int64_t experts_per_tok;
    /* How the router spreads tokens over the experts, capacity (token
     * dropping), the token dispatcher and grouped or sequential expert
     * GEMMs (moe.h).  Not config.json keys: the scenario's moe section
     * sets them; zeroed = dropless, balanced, all-to-all, grouped. */
    mm_moe_cfg moe;
    /* The expert group (mm_mem_ep_fold): ep_share DP replicas, whose tokens
     * its experts serve, times ep_tp of each replica's TP ranks, which hold
     * different experts (Megatron-Core's MoE parallel folding: the experts'
     * TP degree is tp / ep_tp).  A GPU holds experts / (ep_share x ep_tp) of
     * them, each tp / ep_tp ways split.  Not config.json keys: 0 or 1 = no
     * EP. */
    int ep_share, ep_tp;
    /* Fine-grained MoE (DeepSeek-V2/V3, Qwen2/3-MoE).  moe_ffn: width of one
     * routed expert (= ffn for Mixtral); shared_ffn: total width of the
     * always-on shared expert(s) (DeepSeek n_shared_experts x
     * moe_intermediate_size, Qwen2-MoE shared_expert_intermediate_size), 0
     * none; shared_gate: Qwen2-MoE's sigmoid gate Linear(h, 1) on it;
     * router_bias: DeepSeek-V3's e_score_correction_bias (one per expert).
     * Which layers are MoE: layer i >= first_dense with
     * (i + moe_offset) % moe_every == 0 (DeepSeek: offset 0, Qwen: 1). */
    int64_t moe_ffn, shared_ffn;
    bool shared_gate, router_bias;
    int64_t first_dense, moe_every, moe_offset;
    /* Multi-head latent attention (DeepSeek-V2/V3), when kv_lora > 0:
     * q_lora (0: a plain q projection), kv_lora, per-head qk_nope + qk_rope
     * query/key width and v_dim value width. */
    int64_t q_lora, kv_lora, qk_nope, qk_rope, v_dim;
    /* DeepSeek-V3 multi-token-prediction modules (num_nextn_predict_layers):
     * counted and reported apart, not in mm_llm_params. */
    int64_t mtp_layers;
    bool sandwich_norm;  /* Gemma 2/3: post-attention and post-MLP norms as well (4 per layer) */
    bool qk_norm;        /* Qwen3, Gemma 3: a norm over head_dim on q and k (2d weights) */
    bool qk_norm_full;   /* with qk_norm: weights for every head apart, (a + g) d of them
                          * (OLMo 2's norms over the whole q/k projection, Cohere's and
                          * StableLM's per-head norms) */
    bool qk_norm_bias;   /* with qk_norm: LayerNorms with bias (Phi-2's qk_layernorm) */
    bool parallel_block; /* Phi-2, Cohere, StableLM use_parallel_residual: attention and
                          * MLP read the same normed input and add to the residual
                          * together; one norm per block */
    bool norm_no_bias;   /* LayerNorm without bias (Cohere, MPT no_bias): h weights */
    bool head_bias;      /* a bias on the LM head (Phi-2, Phi-4's lm_head_bias) */
    bool attn_sinks;     /* gpt-oss: one learned sink logit per head and block */
    /* Sliding-window attention: window tokens on the layers the pattern
     * selects: layer i slides when bit (i mod window_period) of window_mask
     * is set (Mistral: period 1, mask 1; Gemma 2: period 2, mask 01b;
     * Gemma 3: period 6, the first five); window 0: none. */
    int64_t window;
    int window_period;
    uint64_t window_mask;
    /* Llama 4's chunked attention (attention_chunk_size): the selected
     * layers attend within fixed chunks of `window` tokens (a query sees
     * the keys of its own chunk only) instead of a sliding window. */
    bool chunked;
    /* Mllama (Llama 3.2 Vision, transformers' MllamaTextModel): the blocks
     * whose bit is set in cross_mask are MllamaCrossAttentionDecoderLayer:
     * q from the text tokens, k and v from cross_tokens image states per
     * sequence (the projected vision output), q_norm and k_norm over
     * head_dim, two tanh gates, the block's gated MLP; no self-attention.
     * The image is not part of the self-attention sequence.  embed_extra:
     * rows the token embedding holds beyond vocab (Mllama: vocab + 8). */
    uint64_t cross_mask[MM_LLM_CROSS_WORDS];
    int64_t cross_tokens;  /* image states of one image (Mllama: 4 tiles x 1025) */
    double cross_images;   /* images per sequence the cross blocks attend (mean over a
                            * micro-batch; the reader sets 1): keys per query are
                            * cross_images x cross_tokens */
    int64_t embed_extra;
    double attn_softcap, final_softcap; /* Gemma 2 tanh soft-capping; 0: none */
    /* Index of the first block this struct describes: 0 for a model, the
     * stage's first block for mm_llm_stage_view. */
    int64_t layer0;
} mm_llm;

/* Reads a Hugging Face config.json of a decoder-only LLM (llm_read.c: the
 * model types of docs/models.md; absent keys take the transformers class
 * defaults of hf.c; unknown types, activations and unmodeled keys are
 * refused by name).  Missing or mistyped keys,
 * non-positive sizes, heads not dividing hidden (without head_dim) and
 * kv heads not dividing heads give MM_EINPUT naming file, line and key.
 * Returns 0 or a negative mm_status. */
int mm_llm_load(const char *path, mm_llm *m, mm_err *err);

/* Same from a mapping node of an already parsed document (a config embedded
 * in a larger YAML file); `prefix` (may be "" or NULL) is prepended to the
 * keys named in errors, e.g. "llm" gives "llm.hidden_size".  Clears *m
 * first, so name and source are left empty for the caller to fill. */
int mm_llm_from_node(const struct mm_doc *doc, struct mm_node *map,
                     const char *prefix, mm_llm *m, mm_err *err);

/* Same with the model family forced to `type` (its class's defaults and
 * keys), whatever the mapping's model_type says: Qwen2-VL's flat LLM keys
 * are read as "qwen2_vl_text". */
int mm_llm_from_node_typed(const struct mm_doc *doc, struct mm_node *map, const char *prefix,
                           const char *type, mm_llm *m, mm_err *err);

/* Refuses an "architectures" entry mmsim does not model (MM_EINPUT). */
int mm_llm_check_architectures(const struct mm_doc *doc, struct mm_node *map, const char *prefix,
                               mm_err *err);

/* A Megatron-LM GPT as in Narayanan et al. SC'21 Table 1: MHA, ffn = 4h,
 * GeLU, LayerNorm, biases, learned positions (seq rows), tied embeddings. */
void mm_llm_init_gpt(mm_llm *m, int64_t hidden, int64_t layers, int64_t heads,
                     int64_t vocab, int64_t seq);

/* Checks the invariants the cost functions rely on (sizes positive, kv heads
 * divide heads, a position table has rows).  MM_EINPUT naming m->source. */
int mm_llm_validate(const mm_llm *m, mm_err *err);

/* ---- parameters (counts of scalars) ---- */

/* Everything: layers, embeddings (counted once when tied), position table,
 * final norm, LM head. */
int64_t mm_llm_params(const mm_llm *m);
/* One transformer block: attention and MLP weights and biases, two norms. */
int64_t mm_llm_layer_params(const mm_llm *m);
/* Parameter tensors (nn.Parameters, as an eager optimizer loops over
 * them) of one block of a dense model: q, k, v, o and the MLP's matrices,
 * their biases, the norms' weights (and biases), q/k norms, attention
 * sinks; -1 where not modeled (MoE, latent attention, blocks that differ). */
int64_t mm_llm_block_tensors(const mm_llm *m);
/* The same for the embedding (token table, learned positions; first stage)
 * or the final norm and LM head (last stage). */
int64_t mm_llm_edge_tensors(const mm_llm *m, bool first, bool last);
/* Token embedding plus learned position table (when there is one). */
int64_t mm_llm_embedding_params(const mm_llm *m);
/* The experts' MLPs of one MoE block (what expert parallelism splits);
 * 0 for a dense model.  The router stays with the block. */
int64_t mm_llm_layer_expert_params(const mm_llm *m);
/* Untied LM head matrix, 0 when tied (the embedding is reused), plus its
 * bias where it has one (Phi-2). */
int64_t mm_llm_head_params(const mm_llm *m);
/* The norm after the last block (h, or 2h for LayerNorm). */
int64_t mm_llm_final_norm_params(const mm_llm *m);

/* Layer i (0-based) has an MoE MLP / sliding-window attention. */
bool mm_llm_layer_is_moe(const mm_llm *m, int64_t i);
bool mm_llm_layer_is_sliding(const mm_llm *m, int64_t i);
/* Layer i is a cross-attention block (Mllama); its parameters are
 * q (h x a d), k and v (h x g d each), o (a d x h), q_norm and k_norm (d
 * each), the two gates (1 each), two norms and the MLP. */
bool mm_llm_layer_is_cross(const mm_llm *m, int64_t i);
/* Cross-attention blocks among the (view's) blocks. */
int64_t mm_llm_cross_layers(const mm_llm *m);
/* Share of the (view's) blocks with sliding-window attention, 0 to 1. */
double mm_llm_sliding_fraction(const mm_llm *m);
/* Mean keys per query of a window block over a sample of s tokens:
 * min(s, window) for a sliding window; (floor(s/c) c^2 + (s mod c)^2) / s
 * for chunks of c = window (Llama 4); s without a window. */
double mm_llm_window_keys(const mm_llm *m, double s);
/* Exact parameters of block i.  mm_llm_layer_params is their mean over the
 * model's blocks (rounded), so l x it is the blocks' total for uniform
 * models; models whose blocks differ (DeepSeek's dense first layers) are
 * summed exactly by mm_llm_params. */
int64_t mm_llm_layer_params_at(const mm_llm *m, int64_t i);
/* Parameters a token passes through: routed experts counted experts_per_tok
 * times instead of all of them (the router and shared experts count in
 * full); = mm_llm_params for a dense model. */
int64_t mm_llm_active_params(const mm_llm *m);
/* DeepSeek-V3's MTP modules (each: two norms, the 2h -> h projection, one
 * MoE block, the shared head's norm; embedding and head shared): not part
 * of mm_llm_params.  0 without. */
int64_t mm_llm_mtp_params(const mm_llm *m);
/* The routing profile of one MoE layer over `tokens` tokens per TP group
 * (model/moe.h), on the busiest GPU of the expert group: ep_share x ep_tp
 * source GPUs of tokens / ep_tp tokens each, experts / (ep_share x ep_tp)
 * of them per GPU.  The one profile the layer's kernels, the activation
 * memory and the EP all-to-all use.  Returns 0, or -1 (dense model, no
 * memory). */
int mm_llm_moe_profile(const mm_llm *m, double tokens, mm_moe_load *out);

/* Layers with an MoE MLP (what expert parallelism splits). */
int64_t mm_llm_moe_layers(const mm_llm *m);
/* The blocks [first, first + n) as a model of their own: its mean block
 * (mm_llm_layer_params, the FLOPs and op lists) is that stage's, so a
 * pipeline stage of DeepSeek's dense first blocks or of Gemma 2's sliding
 * and global blocks is costed as it is.  Embedding, head and vocab are the
 * model's; only the block functions make sense on a view. */
mm_llm mm_llm_stage_view(const mm_llm *m, int64_t first, int64_t n);
/* Every block of the same kind (all dense or all MoE, all sliding or all
 * global): then any stage's mean block is the model's. */
bool mm_llm_blocks_uniform(const mm_llm *m);

/* ---- FLOPs (Megatron convention; b sequences of s tokens) ---- */

/* One block forward: QKV 2bsh(a+2g)d, scores+values 4bs^2*a*d,
 * output 2bs*a*d*h, MLP 2bshf*(gated ? 3 : 2).  For models whose blocks
 * differ (dense and MoE blocks, sliding and global attention) this and the
 * op lists below describe the MEAN block, so l x it is the model's total
 * exactly; each kind's share weights its ops. */
double mm_llm_layer_fwd_flops(const mm_llm *m, double b, double s);
/* The attention score/value part alone, 4bs^2*a*d (what selective
 * recomputation executes again). */
double mm_llm_layer_attn_fwd_flops(const mm_llm *m, double b, double s);
/* Packed/varlen micro-batch: `tokens` in all, attention over samples of
 * lengths s_i costs sum_sq = sum s_i^2 (design.md section 4), not tokens^2.
 * With tokens = b*s and sum_sq = b*s^2 it equals mm_llm_layer_fwd_flops. */
double mm_llm_layer_fwd_flops_packed(const mm_llm *m, double tokens, double sum_sq);
/* The same for `seqs` sequences: a cross-attention block (Mllama) costs
 * q 2Tha d and o 2Tad h on the T text tokens, k and v 2Kh 2g d on the
 * K = seqs x c image states, and 4Tc a d for its core (c = cross_images x
 * cross_tokens keys per query), weighted by the cross blocks' share.
 * mm_llm_layer_fwd_flops_packed takes seqs = tokens^2 / sum_sq (the count
 * of equal sequences with that sum); b x s takes b. */
double mm_llm_layer_fwd_flops_seqs(const mm_llm *m, double tokens, double sum_sq, double seqs);
/* The attention cores alone of the same (self and cross). */
double mm_llm_layer_attn_fwd_flops_seqs(const mm_llm *m, double tokens, double sum_sq, double seqs);
/* LM head forward, 2bshV. */
double mm_llm_head_fwd_flops(const mm_llm *m, double b, double s);
/* Model FLOPs of one iteration over B sequences: 3*(l*layer + head). */
double mm_llm_model_flops(const mm_llm *m, double B, double s);

enum mm_recompute { MM_RECOMPUTE_NONE = 0, MM_RECOMPUTE_SELECTIVE = 1, MM_RECOMPUTE_FULL = 2 };
/* Hardware FLOPs: model FLOPs plus the recomputed forward (full: l more
 * block forwards; selective: l more attention score/value parts; the LM head
 * is never recomputed).  An unknown `recompute` gives NaN. */
double mm_llm_hw_flops(const mm_llm *m, double B, double s, int recompute);

/* ---- per-op costs for the compute model ---- */

typedef enum mm_op_kind {
    MM_OPK_GEMM, /* a matmul: flops = 2*m*n*k (times batch) */
    MM_OPK_ATTN, /* fused attention core (FlashAttention-like) */
    MM_OPK_MEM   /* memory-bound: norms, element-wise, lookups; flops = 0 */
} mm_op_kind;

typedef struct mm_op_cost {
    const char *name;  /* static string: "qkv", "attn", "fc1", ... */
    mm_op_kind kind;
    double flops;      /* Megatron convention: matmul FLOPs only, 0 for MEM ops */
    double bytes;      /* HBM traffic: inputs and weights read, outputs written */
    double m, n, k;    /* GEMM: C[m x n] = A[m x k] B[k x n].  ATTN: m = query
                        * length, n = key length (mean sample length when
                        * packed), k = head_dim.  MEM: 0 */
    double batch;      /* independent problems of that shape: 1 for GEMM,
                        * sequences x heads on this rank for ATTN, 0 for MEM */
    bool causal;       /* ATTN: causal mask (kernels skip about half the tiles;
                        * flops above still count it dense) */
    int pass;          /* mm_op_pass_kind: which pass this entry is (F for the
                        * lists below; mm_op_pass derives B and W) */
    bool weightless;   /* GEMM of two activations (the unfused attention
                        * core's Q K^T and P V): both gradient GEMMs are input
                        * gradients, so its "W" GEMM is timed into B */
    bool bwd_exact;    /* MEM: its backward moves bwd_bytes (counted from the
                        * kernel's code; 0: no backward kernel), not the
                        * generic twice the forward's */
    double bwd_bytes;
    double draws;      /* MEM: dropout mask elements its forward draws from
                        * the RNG (its backward reads the saved mask) */
    bool jit;          /* MEM: a TorchScript-fused kernel (the framework's
                        * profile, kernels.GROUP.jit), forward and backward
                        * timed at the GPU's rate for such kernels where the
                        * topology states one (gpu.jit_memory_efficiency) */
    /* GEMM of MoE experts (groups > 0): one GEMM per expert, group_n[i]
     * experts with group_m[i] rows each (m above is their mean, batch
     * their count), run as one grouped GEMM (TE's multi-stream grouped
     * GEMM) or one after another (sequential: Megatron's SequentialMLP). */
    int groups;
    bool sequential;
    double group_m[MM_MOE_BINS], group_n[MM_MOE_BINS];
    /* MEM: the experts of a grouped GEMM whose inputs this FP8 quantize
     * splits and quantizes one by one (0: one tensor) */
    int splits;
} mm_op_cost;

/* The three passes zero-bubble schedules split a layer into (Qi et al.,
 * "Zero Bubble Pipeline Parallelism", ICLR 2024): forward, input gradient
 * and weight gradient. */
typedef enum mm_op_pass_kind { MM_OP_F = 0, MM_OP_B = 1, MM_OP_W = 2 } mm_op_pass_kind;

/* The op pass `p` runs for the forward op `f`:
 *   GEMM C = A W [m x n x k]: B computes dA = dC W^T (shape m x k x n), W
 *     computes dW = A^T dC (shape k x n x m); each has the forward's FLOPs
 *     and touches the same three matrices.
 *   ATTN: B is the whole attention backward, 2x forward FLOPs in Megatron's
 *     count (the kernel runs 2.5x, compute.h); W is empty (no weights).
 *   MEM: B moves twice the bytes (read the saved input and the output
 *     gradient, write the input gradient), or bwd_bytes where the op
 *     counts its backward exactly (bwd_exact); W is empty (norm weight
 *     gradients are reduced inside the same kernel).
 * A weightless GEMM's W GEMM (dB = A^T dC, B an activation) is an input
 * gradient: the caller counts it in B (fwcost.c), as Zero Bubble's
 * WeightGradStore defers only the Linear layers' weight gradients.
 * An empty op has kind MEM, flops 0 and bytes 0.  For a GPT layer the sums
 * give Zero Bubble's Table 1: F = sbh(24h + 4s), B = sbh(24h + 8s),
 * W = sbh*24h (Qi et al., ICLR 2024, Table 1). */
mm_op_cost mm_op_pass(const mm_op_cost *f, mm_op_pass_kind p);

/* Enough for every list below. */
#define MM_LLM_MAX_OPS 48

/* One transformer block FORWARD on ONE tensor-parallel rank of `tp`, with
 * Megatron's sharding (QKV and fc1 column-parallel, output projection and
 * fc2 row-parallel, heads split by tp).  Norms and residual adds see all
 * b*s tokens, or b*s/tp with sequence parallelism (sp).  Activations and
 * weights are dtype_bytes wide.  Communication is not listed (see
 * mm_llm_tp_allreduce_bytes).  Fills ops[0..n) and returns n, or -1 when
 * cap < n, or tp < 1 or dtype_bytes < 1.  Sum of flops over the list times
 * tp = mm_llm_layer_fwd_flops. */
int mm_llm_layer_ops(const mm_llm *m, double b, double s, int tp, bool sp,
                     int dtype_bytes, mm_op_cost *ops, int cap);
/* Same for a packed micro-batch (see mm_llm_layer_fwd_flops_packed);
 * `seqs` is the number of samples packed (for the attention batch). */
int mm_llm_layer_ops_packed(const mm_llm *m, double tokens, double sum_sq,
                            double seqs, int tp, bool sp, int dtype_bytes,
                            mm_op_cost *ops, int cap);
/* Embedding lookup (vocab-parallel over tp) and, for learned positions, the
 * position add: memory-bound. */
int mm_llm_embed_ops(const mm_llm *m, double b, double s, int tp, bool sp,
                     int dtype_bytes, mm_op_cost *ops, int cap);
/* Final norm, LM head GEMM (vocab split over tp) and vocab-parallel
 * cross-entropy (memory-bound). */
int mm_llm_head_ops(const mm_llm *m, double b, double s, int tp, bool sp,
                    int dtype_bytes, mm_op_cost *ops, int cap);

/* Bytes of one tensor-parallel all-reduce of the block's activations,
 * b*s*h*dtype_bytes.  Without sp a block does 2 in forward (after the output
 * projection and after fc2) and 2 in backward; with sp each becomes an
 * all-gather plus a reduce-scatter of the same total size. */
double mm_llm_tp_allreduce_bytes(const mm_llm *m, double b, double s, int dtype_bytes);

#endif
