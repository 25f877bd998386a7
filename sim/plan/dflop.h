/* dflop.h - DFLOP's profiler tables from simulated costs (`mmsim profile
 * --format dflop DIR`), so that DFLOP's own optimizer
 * (data_aware_optimizer.py) can plan a cluster that is not there.
 *
 * DFLOP (BDAI-Research/DFLOP, commit 60e86d85, prof_engine.py and
 * scripts/run_{thr,mem}_*.sh) profiles the vision module (encoder and
 * projector) and the LLM, each cut to a few layers, on 1, 2, 4 and 8 GPUs
 * of tensor parallelism, and writes, in its result_dir:
 *
 *   thr_{mllm}_{vision}_{vsize}.csv   batch_size,model_time,fwd_times,
 *        bwd_times,num_layers,tp_size: images 1..64 (powers of 2) of one
 *        tile each, 16 layers; milliseconds of one training step's forward
 *        (with the loss) and backward;
 *   thr_{mllm}_{llm}_{lsize}.csv      seq_len,model_time,fwd_times,
 *        bwd_times,num_layers,tp_size: one sequence of 1024..8192 tokens,
 *        4 layers, embedding and LM head with its loss included;
 *   thr_{mllm}_{llm}_{lsize}_skip_attn.csv  the same with the attention
 *        core skipped (the optimizer takes attention's time as the
 *        difference);
 *   mem_{mllm}_{vision}_{vsize}.csv   batch_size,model_mem,fwd_peak,
 *        model_state_peak,num_layers,tp_size: 2 images, 4 and 8 layers;
 *   mem_{mllm}_{llm}_{lsize}.csv      batch_size,seq_len,model_mem,
 *        fwd_peak,model_state_peak,num_layers,tp_size: one sequence of
 *        1024 tokens, 3 and 4 layers;
 *
 * memory in GiB (2^30 bytes): model_mem what stays allocated after the
 * optimizer step (weights and optimizer states; zero_grad frees the
 * gradients), fwd_peak how far the forward raises the peak (activations
 * and the transient working set), model_state_peak the step's peak.  A TP
 * degree that does not divide the module's heads gets no rows (DFLOP's
 * profiler returns without writing); a throughput list ends at its first
 * batch that does not fit (DFLOP's profiler stops at the out-of-memory
 * error).  Rows are in DFLOP's order: TP, then layers, then batch.
 *
 * Every number comes from the cost bridge on a layout of the scenario with
 * that TP, one pipeline stage, one micro-batch and no ZeRO (DFLOP's
 * profiler wraps the module in DistributedDataParallel over one replica):
 * the LLM's stage times (mm_sim_stage_times) and the attention kernels'
 * share of them (mm_sim_get_breakdown), the encoder's per-micro-batch cost
 * (mm_sim_enc_mb_cost), and the memory by kind mm_sim_stage_memory sums
 * (mm_sim_llm_stage_rank, mm_sim_enc_rank_memory).  The scenario's GPU,
 * topology, framework, precision and recompute mode are kept.
 *
 * Beside them DFLOP's data analysis, {mllm}_{vision}_{llm}.pkl, which its
 * optimizer reads too: a pickled dict
 * {"image_batch": [...], "llm_input_seq": [...]} of 10000 samples, each
 * sample's encoder inputs (DFLOP: len(batch["images"]), the image crops and
 * video frames its collator concatenates) and LLM sequence length (DFLOP:
 * new_position_ids.shape[1]), which DFLOP draws from the user's dataset
 * (prof_engine.py run_data_analysis) and we from the scenario's workload
 * (seed: the scenario's), as `mmsim run` draws it: tiles + frames, and
 * text + visual tokens capped at train.seq_len.  A text workload has no
 * images: no pickle then (DFLOP's data mode can still make one from the
 * dataset, on CPU).
 * Refused by name: a model without a vision encoder or without an LLM, an
 * MoE LLM (DFLOP's optimizer prices a dense one: prof_utils.py,
 * llm_module_flops).
 * In the plan room for the reason emit.h gives: it writes what the cost
 * bridge resolved, for another tool's planner. */
#ifndef MM_PLAN_DFLOP_H
#define MM_PLAN_DFLOP_H

#include <stdbool.h>

#include "util/err.h"

/* DFLOP's grid (scripts/run_thr_vision.sh, run_thr_llm_full.sh,
 * run_mem_vision.sh, run_mem_llm.sh; prof_engine.py profile_vision and
 * profile_llm) */
enum {
    MM_DFLOP_N_TP = 4,        /* tensor parallelism 1, 2, 4, 8 */
    MM_DFLOP_N_IMAGES = 7,    /* vision throughput: 1, 2, ..., 64 images */
    MM_DFLOP_N_SEQ = 4,       /* LLM throughput: 1024, ..., 8192 tokens */
    MM_DFLOP_N_MEM_LAYERS = 2 /* memory: two depths (the optimizer fits a line) */
};
extern const int mm_dflop_tp[MM_DFLOP_N_TP];
extern const int mm_dflop_images[MM_DFLOP_N_IMAGES];
extern const int mm_dflop_seq[MM_DFLOP_N_SEQ];
extern const int mm_dflop_vision_mem_layers[MM_DFLOP_N_MEM_LAYERS];
extern const int mm_dflop_llm_mem_layers[MM_DFLOP_N_MEM_LAYERS];
#define MM_DFLOP_VISION_THR_LAYERS 16
#define MM_DFLOP_LLM_THR_LAYERS 4
#define MM_DFLOP_VISION_MEM_IMAGES 2
#define MM_DFLOP_LLM_MEM_SEQ 1024

/* One row of a throughput table: batch_size (images) or seq_len (tokens). */
typedef struct mm_dflop_thr {
    int key, num_layers, tp;
    double model_ms, fwd_ms, bwd_ms; /* model_ms = fwd_ms + bwd_ms */
} mm_dflop_thr;

/* One row of a memory table (seq_len 0 in the vision table). */
typedef struct mm_dflop_mem {
    int batch_size, seq_len, num_layers, tp;
    double model_mem, fwd_peak, model_state_peak; /* GiB */
} mm_dflop_mem;

typedef struct mm_dflop_profile {
    int n_vthr, n_lthr, n_vmem, n_lmem; /* n_lthr rows in lthr and lskip alike */
    mm_dflop_thr vthr[MM_DFLOP_N_TP * MM_DFLOP_N_IMAGES];
    mm_dflop_thr lthr[MM_DFLOP_N_TP * MM_DFLOP_N_SEQ];
    mm_dflop_thr lskip[MM_DFLOP_N_TP * MM_DFLOP_N_SEQ];
    mm_dflop_mem vmem[MM_DFLOP_N_TP * MM_DFLOP_N_MEM_LAYERS];
    mm_dflop_mem lmem[MM_DFLOP_N_TP * MM_DFLOP_N_MEM_LAYERS];
    int n_samples;          /* the data analysis: MM_DFLOP_SAMPLES, or 0 (no pickle) */
    int *image_batch;       /* per sample: encoder inputs (owned) */
    int *llm_input_seq;     /* per sample: LLM tokens (owned) */
} mm_dflop_profile;

/* DFLOP's data analysis draws this many samples (prof_engine.py
 * run_data_analysis: range(10000)). */
#define MM_DFLOP_SAMPLES 10000

/* The names DFLOP's files carry (its config's models.mllm, vision.name,
 * vision.size, llm.name, llm.size): letters, digits, '.', '-', '_'. */
typedef struct mm_dflop_names {
    const char *mllm, *vision, *vision_size, *llm, *llm_size;
} mm_dflop_names;

/* Fills *p from the scenario file (NULL: the built-in default) with its
 * --set overrides.  Returns 0 or -code (MM_EINPUT naming the file, line
 * and key); either way free it with mm_dflop_profile_free. */
int mm_dflop_profile_make(const char *scenario, const char *const *sets, int n_sets, mm_dflop_profile *p,
                          mm_err *err);

/* Frees what mm_dflop_profile_make allocated; safe on a zeroed profile. */
void mm_dflop_profile_free(mm_dflop_profile *p);

/* Checks the names (MM_EINPUT, key "--names"). */
int mm_dflop_names_check(const mm_dflop_names *n, mm_err *err);

/* Writes the five tables, and the pickle when p->n_samples > 0, into the
 * folder dir (made if missing), each
 * through a temporary file renamed over it when complete.  Returns 0 or
 * -code. */
int mm_dflop_profile_write(const mm_dflop_profile *p, const mm_dflop_names *n, const char *dir, mm_err *err);

#endif
