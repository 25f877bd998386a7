/* topo.h - the cluster as a graph of directed links, and routes over it.
 *
 * Built from an mm_cluster (cluster.h).  Every link has a capacity in
 * bytes/s and a latency in seconds.  Capacities are *effective*: the line
 * rate times the protocol efficiency NCCL reaches on that link class in the
 * nccl-tests microbenchmarks the topology file cites (NVLink: ring busbw /
 * line rate; NIC: multi-node busbw / NIC line rate; PCIe: DMA efficiency).
 * Latencies are split so that a path's sum is the per-hop alpha of the
 * analytic model: an NVLink hop is two links of nvlink_latency/2, a hop
 * across nodes is NIC tx + rx of net_latency/2 each, a detour through a
 * spine adds two links of hop_latency.
 *
 * Links per node: GPU <-> NVSwitch (up, down), or one link per ordered GPU
 * pair (direct NVLink mesh); GPU <-> PCIe switch; PCIe switch <-> NIC;
 * PCIe switch <-> host root (only used when GPUs talk over PCIe); NIC <->
 * leaf.  Fabric: leaf <-> spine uplinks, `spines` per leaf.  Routing is
 * deterministic: rail-aligned between NICs of the same index, through a
 * spine chosen by the destination NIC (D-mod-k, as InfiniBand's fat-tree
 * routing does) when the two NICs hang off different leaves.
 * Perturbations (perturb.h, the cluster's pt) scale capacities, add
 * latency (kept apart in xlat, which the flow model charges per step) and
 * fail leaf-spine links; a route whose D-mod-k spine is cut on either side
 * takes the next spine that is live on both, as a subnet manager re-routes
 * around a dead port.  Node groups give their nodes' NIC links their own
 * rate.  Not for:
 * bandwidth sharing (flow.h) or collective algorithms (coll.h). */
#ifndef MM_TOPO_H
#define MM_TOPO_H

#include "hw/cluster.h"

#define MM_TOPO_MAX_PATH 16

typedef struct mm_topo {
    const mm_cluster *c;
    int n_links;
    double *cap;     /* bytes/s */
    double *lat;     /* seconds (extra latency of perturbations included) */
    double *xlat;    /* seconds of lat added by perturbations */
    unsigned char *dead; /* failed links (capacity 0, never routed over) */
    int any_dead, any_xlat;
    int per_node;    /* links per node, laid out from node * per_node */
    int o_up, o_down, o_mesh, o_pgu, o_pgd, o_pnt, o_pnr, o_psu, o_psd, o_nt, o_nr;
    int o_fabric, leaves;
} mm_topo;

/* Builds the link graph.  -MM_EINTERNAL when out of memory. */
int mm_topo_build(mm_topo *t, const mm_cluster *c, mm_err *err);
void mm_topo_free(mm_topo *t);

/* The links from GPU src to GPU dst (global ids), written to links[] (at
 * most MM_TOPO_MAX_PATH); returns their count.  Across nodes the transfer
 * leaves through NIC `rail_out` of src's node and enters through NIC
 * `rail_in` of dst's node; a GPU that the NIC does not serve reaches it
 * over NVLink through the GPU the NIC serves (NCCL's PXN), or over PCIe on
 * a PCIe-only node.  Inside a node the rails are ignored. */
int mm_topo_path(const mm_topo *t, int src, int dst, int rail_out, int rail_in, int *links);

/* The fabric links (leaf up to a spine, spine down to a leaf) of a route
 * from node ns's NIC rail_out to node nd's NIC rail_in, the part of
 * mm_topo_path between the two nodes' own links: 0 or 2 written. */
int mm_topo_fabric_path(const mm_topo *t, int ns, int nd, int rail_out, int rail_in, int *links);

/* Sum of the latencies of a path. */
double mm_topo_path_latency(const mm_topo *t, const int *links, int n);

/* The first GPU (local index) the NIC serves: NCCL's proxy for PXN. */
int mm_topo_nic_gpu(const mm_cluster *c, int nic);

#endif
