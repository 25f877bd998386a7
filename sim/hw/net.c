/* net.c - the analytic (alpha-beta, no contention) collective model.
 *
 * Bandwidth: a group inside one node runs at the node's measured NVLink
 * all-reduce busbw; a group spanning nodes is limited by the NICs that serve
 * its members on each node (NCCL runs one ring per NIC, "rail"), at the
 * measured multi-node busbw per NIC, and by NVLink.  Latency: one alpha per
 * ring step, NVLink alpha for the steps inside a node and the fabric's alpha
 * for the steps that cross nodes.  Known limit: no tree or NVLS algorithms
 * and no small-message protocol switch; the network issue adds them. */
#include "hw/net.h"

#include <math.h>

const char *const mm_coll_names[] = {"allreduce", "allgather", "reducescatter",
                                     "alltoall", "broadcast", "sendrecv", NULL};

double mm_coll_bus_factor(mm_coll_kind kind, int n)
{
    if (n < 2)
        return 1.0;
    switch (kind) {
    case MM_COLL_ALLREDUCE:
        return 2.0 * (n - 1) / n;
    case MM_COLL_ALLGATHER:
    case MM_COLL_REDUCESCATTER:
    case MM_COLL_ALLTOALL:
        return (double)(n - 1) / n;
    default:
        return 1.0;
    }
}

/* Distinct nodes in the group and the largest number of members on one. */
static void group_shape(const mm_cluster *c, const int *gpus, int n, int *nodes, int *per_node)
{
    /* Groups are small relative to the cluster in the foundation; O(n^2)
     * keeps this allocation-free.  Sorted groups would make it O(n). */
    int distinct = 0, most = 0;
    for (int i = 0; i < n; i++) {
        int node = mm_cluster_node_of(c, gpus[i]), seen = 0, count = 0;
        for (int j = 0; j < n; j++) {
            int nj = mm_cluster_node_of(c, gpus[j]);
            if (nj == node) {
                count++;
                if (j < i)
                    seen = 1;
            }
        }
        if (!seen)
            distinct++;
        if (count > most)
            most = count;
    }
    *nodes = distinct;
    *per_node = most;
}

double mm_net_analytic_time(const mm_cluster *c, mm_coll_kind kind,
                            const int *gpus, int n, double bytes)
{
    if (n < 2 || bytes <= 0)
        return 0.0;
    int nodes, per_node;
    group_shape(c, gpus, n, &nodes, &per_node);
    double nvl_bw = c->nvlink_bw * c->nvlink_eff;
    double bw = nvl_bw;
    if (nodes > 1) {
        /* NICs serving the members on the busiest node; at least one. */
        double nics = (double)c->nics_per_node * per_node / c->gpus_per_node;
        if (nics < 1.0)
            nics = 1.0;
        bw = fmin(nvl_bw, nics * c->nic_bw * c->net_eff);
    }
    if (kind == MM_COLL_SENDRECV) {
        double lat = nodes > 1 ? c->net_latency_s : c->nvlink_latency_s;
        double link = nodes > 1 ? c->nic_bw * c->net_eff : nvl_bw;
        return lat + bytes / link;
    }
    /* Ring steps: 2(n-1) for all-reduce, n-1 for the others. */
    double steps = kind == MM_COLL_ALLREDUCE ? 2.0 * (n - 1) : (double)(n - 1);
    double cross = nodes > 1 ? (double)nodes / n : 0.0; /* share of hops crossing nodes */
    double alpha = cross * c->net_latency_s + (1.0 - cross) * c->nvlink_latency_s;
    return steps * alpha + bytes * mm_coll_bus_factor(kind, n) / bw;
}
