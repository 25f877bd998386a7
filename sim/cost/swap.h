/* swap.h - ATOM's model swapping (train.outer_sync.algorithm atom; Wu, Rao
 * and Chen, "ATOM: Asynchronous Training of Massive Models for Deep
 * Learning in a Decentralized Environment", arXiv 2403.10504): every GPU
 * of a peer (a site of the topology) trains a whole copy of the LLM whose
 * layers live in host memory and are streamed into GPU memory group by
 * group over the GPU's PCIe link, each group's load overlapped with the
 * previous group's compute on a second CUDA stream, the last forward group
 * kept for the backward's first.  What a step waits for the link, and how
 * many layers a group holds.
 * Not for: the memory those groups leave (memcost.c applies this plan to
 * the stage's states), the asynchronous averaging across peers
 * (outersync.h), or adding the wait to the run (exec/iterate.c). */
#ifndef MM_SWAP_H
#define MM_SWAP_H

#include <stdbool.h>

#include "model/memory.h"
#include "scenario/sim.h"

typedef struct mm_swap {
    bool on;            /* atom: the model is swapped */
    int layers;         /* L: the LLM's layers */
    int group_layers;   /* g: layers a group holds (the last group may hold fewer) */
    int groups;         /* n = ceil(L / g) */
    double layer_weight_bytes; /* one layer's share of the weights on the GPU (params / L x the
                                  memory model's weight bytes per parameter) */
    double layer_grad_bytes;   /* ... and of its gradients */
    double resident_bytes;     /* weights and gradients of the groups in flight:
                                  min(2 g, L) layers' */
    double link_bw;     /* bytes/s one GPU's swaps get, per direction */
    double load_s;      /* H2D of a whole group's weights: g x layer_weight_bytes / link_bw */
    double grads_out_s; /* D2H of a whole group's gradients */
    double compute_s;   /* the step's forward and backward passes, m (fwd + bwd) */
    double swap_step_s; /* the passes with the swaps (the recurrence in swap.c) */
    double exposed_s;   /* swap_step_s - compute_s: what a step waits for the link */
    /* The what-if ATOM is measured against: the same peers' GPUs as
     * pipelines across the sites (mm_sim_wan_pipeline) */
    double pp_hop_s;    /* one micro-batch's activations (or their gradients) over a site's uplink */
    double pp_step_s;   /* a step of the same tokens as pipelines across the sites */
} mm_swap;

/* The bytes per second one GPU's swaps get over PCIe, per direction: the
 * topology's PCIe rate at its DMA efficiency (node.pcie_gb_s,
 * pcie_efficiency), divided among the GPUs behind one PCIe switch when
 * they all swap at once (a switch reaches the host through one link of the
 * same width: DGX A100 user guide, system topology; a topology without
 * node.pcie_switches gives each GPU its own link). */
double mm_sim_swap_link_bw(const mm_sim *sim);

/* Plans the groups for a GPU whose memory model without swapping is *full
 * (the whole LLM on one GPU: mm_mem_rank's params, weights and grads give
 * the bytes per parameter) and that has room_bytes left for model states
 * after its activations and the runtime; fwd_s and bwd_s are one
 * micro-batch's whole-model passes, m the micro-batches a step runs (both
 * 0: the plan alone, no times).  Returns 0, or -1 when room_bytes holds no
 * two layers (the verdict is OOM). */
int mm_sim_swap(const mm_sim *sim, const mm_mem_rank *full, double room_bytes, double fwd_s, double bwd_s, int m,
                mm_swap *out);

/* The decentralised pipeline ATOM compares with (its abstract: "up to
 * 20x" over "state-of-the-art decentralized pipeline parallelism" on slow
 * networks): the S sites as the S stages of a pipeline, each of a site's
 * dp GPUs one lane of L / S layers per site, the lanes sharing the site's
 * uplink, running the tokens of the atom step (S m micro-batches a lane).
 * With f + b = (fwd_s + bwd_s) / S a stage's passes per micro-batch and x
 * = mm_wan_p2p_s(dp x b s h x 2 bytes) one micro-batch's 16-bit
 * activations of all lanes over an uplink (their gradients go back the
 * other way, full duplex), GPipe's and 1F1B's fill and drain plus the
 * slower of a stage and a link for every further micro-batch:
 *   T = S (f + b) + 2 (S - 1) x + (S m - 1) max(f + b, x)
 * (Huang et al., GPipe, arXiv 1811.06965: the (S - 1) / M bubble, the
 * link a resource of the pipeline as a stage is).  Fills out->pp_hop_s and
 * out->pp_step_s; the stages' memory is not checked. */
void mm_sim_wan_pipeline(const mm_sim *sim, double fwd_s, double bwd_s, int m, mm_swap *out);

#endif
