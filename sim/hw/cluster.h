/* cluster.h - GPUs and the cluster they form, as read from the YAML files in topologies/.
 *
 * This is the foundation's description: one GPU kind, N identical nodes of G
 * GPUs joined by NVLink/NVSwitch, and NICs into a non-blocking scale-out
 * fabric.  Every rate carries its source in the YAML file.  Not for: the
 * link-level graph or routing (the network issue adds those); not for
 * per-op timing (compute.h) or collective timing (net.h). */
#ifndef MM_CLUSTER_H
#define MM_CLUSTER_H

#include <stdint.h>

#include "util/err.h"

/* Numeric formats with their own tensor-core peak. Order matches the
 * scenario's train.precision names. */
typedef enum { MM_DTYPE_BF16, MM_DTYPE_FP16, MM_DTYPE_FP8, MM_DTYPE_COUNT } mm_dtype;

typedef struct mm_gpu_spec {
    char name[64];
    double peak_flops[MM_DTYPE_COUNT]; /* dense tensor-core FLOP/s */
    double hbm_bytes;                  /* capacity */
    double hbm_bw;                     /* bytes/s */
    /* Efficiency factors of the foundation's roofline, each from a public
     * microbenchmark named in the YAML file (issue 4 replaces them with
     * shape-dependent tables). */
    double gemm_eff;      /* achieved / peak for large GEMMs (MAMF) */
    double attn_eff;      /* flash-attention achieved / peak */
    double mem_eff;       /* achieved / peak HBM bandwidth, fused kernels */
    double kernel_overhead_s; /* fixed cost per kernel launch */
} mm_gpu_spec;

typedef struct mm_cluster {
    char name[64];
    char source[256];     /* the YAML file */
    mm_gpu_spec gpu;
    int nodes;
    int gpus_per_node;
    double nvlink_bw;     /* bytes/s per GPU per direction */
    double nvlink_eff;    /* NCCL busbw / nvlink_bw, 8-GPU all-reduce */
    double nvlink_latency_s; /* per ring step inside a node */
    int nics_per_node;
    double nic_bw;        /* bytes/s per NIC per direction */
    double net_eff;       /* NCCL busbw / NIC line rate, multi-node all-reduce */
    double net_latency_s; /* per ring step across nodes */
} mm_cluster;

/* Reads a topology file; `nodes` overrides the file's node count when > 0.
 * Errors name the file, line and key. */
int mm_cluster_load(const char *path, int nodes, mm_cluster *c, mm_err *err);

static inline int mm_cluster_gpus(const mm_cluster *c)
{
    return c->nodes * c->gpus_per_node;
}

static inline int mm_cluster_node_of(const mm_cluster *c, int gpu)
{
    return gpu / c->gpus_per_node;
}

#endif
