/* cluster.h - GPUs and the cluster they form, as read from the YAML files in topologies/.
 *
 * One GPU kind, N identical nodes of G GPUs joined by an NVSwitch, a direct
 * NVLink mesh or PCIe switches only; NICs (NIC i serves the GPUs
 * [i*G/nics, (i+1)*G/nics)) on PCIe switches; a scale-out fabric that is
 * rail-optimized or a plain leaf/spine fat-tree, with nodes per leaf, an
 * oversubscription ratio and a per-hop latency.  Every rate carries its
 * source in the YAML file.  Not for: the link-level graph or routing
 * (topo.h builds those from this), per-op timing (compute.h) or collective
 * timing (net.h, coll.h). */
#ifndef MM_CLUSTER_H
#define MM_CLUSTER_H

#include <stdint.h>

#include "hw/efficiency.h"
#include "hw/perturb.h"
#include "util/err.h"

/* Numeric formats with their own tensor-core peak. Order matches the
 * scenario's train.precision names. */
typedef enum { MM_DTYPE_BF16, MM_DTYPE_FP16, MM_DTYPE_FP8, MM_DTYPE_COUNT } mm_dtype;

/* The compute slowdown under overlapped communication when a topology does
 * not state gpu.overlap_slowdown: 18.9 % on average (40 % at most) over GPT
 * and LLaMA layers on 4 A100s, H100s, MI250s and MI210s, against the same
 * kernels alone (Lee et al., "Characterizing Compute-Communication Overlap
 * in GPU-Accelerated Distributed Deep Learning: Performance and Power
 * Implications", arXiv 2507.03114, 2025, abstract).  The paper's abstract
 * gives the average over the four GPUs only. */
#define MM_OVERLAP_SLOWDOWN_DEFAULT 0.189

/* FP8 GEMM throughput relative to BF16 over a GEMM table of 16-bit shapes
 * when a topology does not state gpu.fp8_gemm_speedup: maximum achievable
 * matmul on H100 SXM, FP8 1402.6 vs BF16 794.5 TFLOP/s (stas00/ml-engineering
 * MAMF table @ 744d01e1). */
#define MM_FP8_GEMM_SPEEDUP_DEFAULT (1402.6 / 794.5)

typedef struct mm_gpu_spec {
    char name[64];
    double peak_flops[MM_DTYPE_COUNT]; /* dense tensor-core FLOP/s */
    double hbm_bytes;                  /* capacity */
    double hbm_bw;                     /* bytes/s */
    /* Efficiency factors of the foundation's roofline, each from a public
     * microbenchmark named in the YAML file (the kernel tables below
     * replace them where they have the shape). */
    double gemm_eff;      /* achieved / peak for large GEMMs (MAMF) */
    double attn_eff;      /* flash-attention achieved / peak */
    double mem_eff;       /* achieved / peak HBM bandwidth, fused kernels */
    double kernel_overhead_s; /* fixed cost per kernel launch */
    int nvdec;                /* NVDEC video decode engines (gpu.nvdec); 0: none given */
    /* Elements per second torch's dropout kernels draw their masks at
     * (Philox, integer-bound: gpu.dropout_gelems_s); 0 when the file does
     * not state it, and dropout is then timed by its bytes alone. */
    double dropout_elems_s;
    /* Fraction of HBM peak that TorchScript-fused elementwise kernels
     * reach (gpu.jit_memory_efficiency; ops a framework profile marks
     * jit); 0 when the file does not state it, and they are then timed by
     * the memory table as any fused kernel. */
    double jit_mem_eff;
    double compute_capability; /* CUDA sm version (8.0, 9.0); 0: not stated */
    /* A compute op runs 1 + this times longer while communication on
     * another stream of its rank overlaps it (NCCL's kernels take SMs and
     * HBM bandwidth): gpu.overlap_slowdown in [0, 1], default
     * MM_OVERLAP_SLOWDOWN_DEFAULT. */
    double overlap_slowdown;
    /* An FP8 GEMM runs this many times the BF16 GEMM table's rate (at most
     * the FP8 peak): gpu.fp8_gemm_speedup, the GPU's measured FP8 / BF16
     * maximum achievable matmul, default MM_FP8_GEMM_SPEEDUP_DEFAULT. */
    double fp8_gemm_speedup;
    /* The SM clock a training run holds under sustained load over the
     * clock the compute tables (or efficiency factors) were measured at:
     * gpu.sustained_clock_ratio in [0.1, 1], default 1.  Work bound by the
     * SM clock (tensor-core GEMMs, attention, dropout's Philox draws) runs
     * at this times the tables' rate; HBM-bound kernels do not move.  A
     * table taken in isolated short runs sees the boost clock an idle GPU
     * reaches; back-to-back kernels at the board power limit run at a lower
     * one (docs/topology.md, "Sustained clocks"). */
    double sustained_clock_ratio;
    /* Shape-dependent throughput tables (gpu.kernels in the topology file);
     * where one is absent the single factor above is used.  Owned (their
     * values are on the heap): freed by mm_cluster_free, never copied. */
    mm_kernel_tables kernels;
} mm_gpu_spec;

/* A group of nodes that differs from the file's base node (`node_groups:`
 * in the topology file): other NICs, or another GPU.  A group's GPU keeps
 * only the scalars: kernel times are the base GPU's scaled by the peak
 * ratio (compute-bound kernels) and the HBM bandwidth ratio (memory-bound
 * kernels), see perturb.h. */
#define MM_NODE_GROUPS_MAX 8
typedef struct mm_node_group {
    char name[32];
    int first, count;       /* nodes [first, first + count) */
    double nic_bw;          /* bytes/s per NIC per direction */
    bool has_gpu;
    char gpu_name[64];
    double peak_flops[MM_DTYPE_COUNT];
    double hbm_bytes, hbm_bw;
} mm_node_group;

/* How the GPUs of a node reach each other. */
typedef enum { MM_INTRA_NVSWITCH, MM_INTRA_NVLINK_MESH, MM_INTRA_PCIE } mm_intra_kind;
/* Scale-out fabric: rail-optimized (leaf r of a group of nodes takes NIC r
 * of each) or a plain fat-tree (every NIC of a node into the same leaf). */
typedef enum { MM_FABRIC_RAIL, MM_FABRIC_FAT_TREE } mm_fabric_kind;

typedef struct mm_cluster {
    char name[64];
    char source[256];     /* the YAML file */
    mm_gpu_spec gpu;
    int nodes;
    int gpus_per_node;
    /* The intra-node GPU-to-GPU path: NVLink, or PCIe when intra is
     * MM_INTRA_PCIE (then these are the PCIe figures). */
    int intra;            /* mm_intra_kind */
    double nvlink_bw;     /* bytes/s per GPU per direction */
    double nvlink_eff;    /* NCCL ring busbw / nvlink_bw, node all-reduce */
    double nvlink_latency_s; /* per ring step inside a node */
    int nvls;             /* the switch can reduce (NVLink SHARP) */
    double nvls_eff;      /* NVLS all-reduce: achieved per-GPU link rate / nvlink_bw */
    double nvls_latency_s; /* fixed latency of an NVLS all-reduce */
    /* node.nccl_protocols: a ring inside one node takes the time NCCL's own
     * tuning model gives its fastest protocol (LL, LL128, Simple) for the
     * message (mm_net_nccl_proto_extra); false: one protocol, Simple's
     * bandwidth with nvlink_latency_s per step */
    int nccl_protocols;
    double pcie_bw;       /* GPU or NIC <-> PCIe switch, per direction; 0: not modeled */
    double pcie_eff;      /* achieved / pcie_bw for DMA through the switch */
    int pcie_switches;    /* per node; GPUs and NICs spread evenly over them */
    int cpu_cores;        /* host CPU cores per node (node.cpu_cores); 0: not given */
    int nics_per_node;
    double nic_bw;        /* bytes/s per NIC per direction */
    double net_eff;       /* NCCL busbw / NIC line rate, multi-node all-reduce */
    double net_latency_s; /* per ring step across nodes under one leaf */
    /* In-network reduction in the InfiniBand switches (SHARP; NCCL's
     * CollNet): fabric.sharp and its keys, cluster.c. */
    int sharp;              /* the fabric's switches reduce */
    double sharp_eff;       /* a SHARP stream's rate / NIC line rate */
    double sharp_latency_s; /* fixed latency of the in-network step */
    int sharp_trees;        /* concurrent reduction trees one NIC's link carries */
    int fabric;           /* mm_fabric_kind */
    int nodes_per_leaf;
    double oversub;       /* leaf down:up bandwidth ratio, >= 1 */
    int spines;           /* uplinks per leaf, one per spine switch */
    double hop_latency_s; /* per extra switch hop (leaf -> spine -> leaf) */
    int n_groups;         /* node groups that differ from the base node */
    mm_node_group groups[MM_NODE_GROUPS_MAX];
    mm_perturb pt;        /* what-if perturbations (perturb.h); pt.n == 0: none */
    /* Sites joined by a wide-area link (`sites:` in the file; wan.h): the
     * file's cluster (and cluster.nodes) is one site, and `sites` identical
     * copies of it train together, each reaching the others through its
     * own WAN uplink of wan_bw bytes/s per direction and wan_latency_s one
     * way.  sites == 0: one cluster, no WAN (every existing file). */
    int sites;
    double wan_bw;
    double wan_latency_s;
    /* NCCL send/recv bandwidth by message size, as a fraction of the line
     * rate per direction: inside a node (of nvlink_bw) and across nodes (of
     * nic_bw).  Absent: send/recv runs at the all-reduce efficiency. */
    bool has_p2p_intra, has_p2p_inter;
    mm_mem_table p2p_intra, p2p_inter;
    /* NCCL's p2p channel arithmetic (net.c, mm_net_p2p_channels), given
     * with each curve: the node's p2p channels (NCCL p2pnChannels) and
     * channels per peer inside a node and across nodes; the cross-node
     * per-channel rate; the fixed time of one send/recv (launch and
     * handshake, nccl-tests' small-message time).  0: no curve.
     * p2p_net_per_peer is fabric.p2p_channels_per_peer when the file gives
     * it (an override); else 0, and NCCL's rule of nccl_version gives the
     * count per communicator (mm_nccl_net_channels_per_peer). */
    int p2p_channels, p2p_per_peer, p2p_net_per_peer;
    /* The NCCL version the file's measurements were taken with, major x
     * 100 + minor (2.19 -> 219; top-level nccl_version); 0: not stated. */
    int nccl_version;
    double p2p_net_channel_bw; /* bytes/s */
    double p2p_latency_s;
} mm_cluster;

/* Reads a topology file; `nodes` overrides the file's node count when > 0.
 * Errors name the file, line and key.  `node_groups:` (optional) is a list
 * of {name, first, count, nic_gbit_s, gpu: {...}}: nodes [first,
 * first + count) get that NIC line rate and/or that GPU (the keys of the
 * top-level gpu section; tables are not read). */
int mm_cluster_load(const char *path, int nodes, mm_cluster *c, mm_err *err);
/* A loaded cluster owns its GPU's kernel tables (heap, to size: see
 * efficiency.h); mm_cluster_free frees them (the struct itself is the
 * caller's) and leaves it safe to free again.  On error mm_cluster_load
 * has freed them already.  Load into a cluster that holds nothing (it is
 * overwritten), and do not copy a loaded one by assignment: the copy
 * would share the tables, and both would free them; pass pointers. */
void mm_cluster_free(mm_cluster *c);

static inline int mm_cluster_gpus(const mm_cluster *c)
{
    return c->nodes * c->gpus_per_node;
}

static inline int mm_cluster_node_of(const mm_cluster *c, int gpu)
{
    return gpu / c->gpus_per_node;
}

/* The NIC (0 .. nics_per_node-1) that serves a GPU of its node. */
static inline int mm_cluster_nic_of(const mm_cluster *c, int gpu)
{
    return (gpu % c->gpus_per_node) * c->nics_per_node / c->gpus_per_node;
}

/* The leaf switch a node's NIC plugs into. */
static inline int mm_cluster_leaf_of(const mm_cluster *c, int node, int nic)
{
    int group = node / c->nodes_per_leaf;
    return c->fabric == MM_FABRIC_RAIL ? group * c->nics_per_node + nic : group;
}

#endif
