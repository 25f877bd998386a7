/* loader.h - what the data pipeline costs per sample: the CPU seconds a
 * loader worker spends turning one stored sample into tensors (JPEG
 * decode, resize into tiles, video frame decode, tokenisation), the
 * seconds the GPU's NVDEC engines spend on its video frames, and the bytes
 * of the tensors copied host to device over PCIe.  Every rate is a
 * published single-core (or single-engine) figure, cited in loader.c.
 * The executor (exec/dataload.h) runs these against the step.
 * Not for: queueing the loader against the step (exec/dataload.c), or
 * checking the data keys (scenario/check.c). */
#ifndef MM_COST_LOADER_H
#define MM_COST_LOADER_H

#include <stdbool.h>

#include "scenario/sim.h"

typedef struct mm_loader_cost {
    double cpu_s;     /* one loader worker's CPU seconds (one core) */
    double dev_s;     /* NVDEC seconds (data.video_decoder: nvdec) */
    double h2d_bytes; /* tensors copied host to device */
} mm_loader_cost;

/* Adds one sample's cost to *c.  tokenize: its text is tokenised in the
 * loader (a workload's samples: conversations formatted and tokenised on
 * the fly, as LLaVA's and Megatron-Energon's task encoders do); false for
 * `workload: text` (Megatron's GPTDataset reads pre-tokenised tokens). */
void mm_sim_loader_sample(const mm_sim *sim, const mm_sample *s, bool tokenize, mm_loader_cost *c);

/* Every sample without a workload file: the fixed sample (returns true: it
 * is tokenised in the loader), or train.seq_len pre-tokenised text tokens
 * (false), as mm_sim_check_workload sized them (a model without an
 * encoder: text). */
bool mm_sim_loader_fixed_sample(const mm_sim *sim, mm_sample *s);

/* One core's seconds to decode `images` JPEGs of `mpx` megapixels in
 * all: each image's fixed cost (headers, Huffman tables, buffers) plus
 * its pixels, the rates file's jpeg_decode_fixed_s and jpeg_decode_mpx_s
 * (both from one benchmark's two sizes). */
double mm_loader_jpeg_decode_s(const mm_loader_rates *r, double images, double mpx);

/* The training process's seconds to receive `bytes` through a worker's
 * result pipe (pipe_recv_bytes_s): what a batch of numpy arrays costs the
 * one process that takes every worker's batches (PyTorch's DataLoader
 * pickles what is not a tensor into its result queue's pipe; tensors
 * cross in shared memory, a handle through the pipe, and are not
 * charged).  The queue's recv_s (exec/dataload.h). */
double mm_loader_pipe_recv_s(const mm_loader_rates *r, double bytes);

/* One micro-batch's loading, the mean over those DP replica 0 loads in
 * iteration 0 (the samples r, r + dp, ... of the iteration's draw, as the
 * run prices them; without a workload file micro_batch fixed samples):
 * *c, or -code when the draw fails.  The --breakdown's figure. */
int mm_sim_loader_micro_batch(const mm_sim *sim, mm_loader_cost *c, mm_err *err);

/* Seconds to copy `bytes` host to device on one GPU's PCIe link (pinned
 * memory, the topology's node.pcie_gb_s at its DMA efficiency). */
double mm_sim_loader_h2d_s(const mm_sim *sim, double bytes);

/* How much slower each worker runs when the node's CPU cores are shared:
 * each GPU's training process keeps one core, its `workers` workers share
 * the rest of its cores_per_gpu = node.cpu_cores / GPUs per node:
 * max(1, workers / max(1, cores_per_gpu - 1)).  1 for workers <= 0. */
double mm_sim_loader_slowdown(const mm_sim *sim, int workers);

/* Seconds per iteration the step waits for its loader in the steady state
 * (the batches prefetched before the first step long spent): `workers`
 * workers deliver a GPU's iteration every max(cpu_s x slowdown / workers,
 * dev_s) seconds (one core's CPU seconds for the iteration's samples,
 * shared cores as mm_sim_loader_slowdown says; the GPU's NVDEC seconds in
 * series) while the step takes step_s without waiting for them; the
 * excess, or 0 when the loader keeps ahead.  With no workers the training
 * process loads them itself between steps: cpu_s + dev_s, all exposed.
 * The one figure behind data_shortfall_s (the run's, exec/loadrun.h; the
 * planner's pre-score, plan/estimate.c) and `mmsim run`'s "the loader is
 * the bottleneck". */
double mm_sim_loader_short_s(const mm_sim *sim, int workers, double cpu_s, double dev_s, double step_s);

#endif
