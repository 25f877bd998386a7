/* net.c - the analytic (alpha-beta, no contention) network model, group
 * shapes, and algorithm choice.
 *
 * Bandwidth terms (B = effective bytes/s, S = nccl-tests' message size):
 *   intra-node link  Bi = nvlink_bw x nvlink_eff (the node's ring busbw;
 *                    on a direct mesh a ring gets phi(m)/(G-1) of it, one
 *                    ring per stride coprime with the m members);
 *   out of a node    Bo = k x min(NIC x net_eff, PCIe x pcie_eff), k the
 *                    rings (channels) = NICs serving the members;
 *   ring     f S / min(Bi, Bo)         f = 2(n-1)/n, (n-1)/n, 1
 *   tree     max(2 (m-1)/m S / Bi, D S / (2k NIC)), D the most edges of
 *            a node over both trees (4 for N >= 4: internal in one tree,
 *            leaf in the other), each edge moving S/2k per channel each way
 *   hier     2 (m-1)/m S / Bi + 2 (N-1)/N S / Bo   (phases in sequence)
 *   nvls     S (1 + 1/n) / (nvlink_bw x nvls_eff)
 *   collnet  max(intra, S / (k NIC x sharp_eff)), intra = the nvls term
 *            over the m GPUs of a node with NVLS, else 2 (m-1)/m S / Bi
 *   alltoall max(intra, inter, spine) per-link volumes over their rates.
 * Latency terms: see mm_net_latency.  Known limits: one protocol (NCCL's
 * Simple bandwidth with a per-step alpha; no LL/LL128 switch), so mid-size
 * messages are a little pessimistic; hier phases are not pipelined.
 * Not for: contention between concurrent flows (the flow model, coll.c and
 * flow.c), reading the topology (cluster.c). */
#include "hw/net.h"
#include "util/misc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const mm_coll_names[] = {"allreduce", "allgather", "reducescatter",
                                     "alltoall", "broadcast", "sendrecv", NULL};
const char *const mm_coll_algo_names[] = {"auto", "ring", "tree", "hier", "nvls", "collnet", NULL};

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

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

void mm_group_sort_into(const int *gpus, int n, int *out)
{
    memcpy(out, gpus, (size_t)n * sizeof *out);
    int sorted = 1; /* groups the builder makes mostly come in order */
    for (int i = 1; i < n && sorted; i++)
        sorted = out[i - 1] <= out[i];
    if (!sorted)
        qsort(out, (size_t)n, sizeof *out, cmp_int);
}

int *mm_group_sorted(const int *gpus, int n)
{
    int *s = malloc(((size_t)n + 1) * sizeof *s);
    if (!s)
        return NULL;
    mm_group_sort_into(gpus, n, s);
    return s;
}

void mm_group_shape_of(const mm_cluster *c, const int *g, int n, mm_group_shape *s)
{
    memset(s, 0, sizeof *s);
    s->n = n;
    s->min_per_node = n;
    s->channels = c->nics_per_node;
    int i = 0, prev_group = -1;
    while (i < n) {
        int node = mm_cluster_node_of(c, g[i]), j = i, nics = 0, last_nic = -1;
        for (; j < n && mm_cluster_node_of(c, g[j]) == node; j++) {
            int k = mm_cluster_nic_of(c, g[j]);
            if (k != last_nic)
                nics++, last_nic = k;
        }
        int m = j - i, grp = node / c->nodes_per_leaf;
        s->nodes++;
        if (m > s->max_per_node)
            s->max_per_node = m;
        if (m < s->min_per_node)
            s->min_per_node = m;
        if (nics < s->channels)
            s->channels = nics;
        /* sorted ids: nodes, hence leaf groups, never decrease */
        if (grp != prev_group)
            s->leaf_groups++;
        prev_group = grp;
        i = j;
    }
    /* a ring over the nodes crosses between leaf groups at each change
     * and once more to close */
    s->crossings = s->leaf_groups > 1 ? s->leaf_groups : 0;
    if (s->leaf_groups < 1)
        s->leaf_groups = 1;
    if (s->channels < 1)
        s->channels = 1;
    if (n == 2 && s->nodes == 2)
        s->p2p_spine = mm_cluster_leaf_of(c, mm_cluster_node_of(c, g[0]), mm_cluster_nic_of(c, g[0])) !=
                       mm_cluster_leaf_of(c, mm_cluster_node_of(c, g[1]), mm_cluster_nic_of(c, g[1]));
}

/* Strides 1..m-1 coprime with m: rings a direct mesh of m GPUs can run on
 * disjoint links (Euler's phi). */
static int coprime_strides(int m)
{
    int k = 0;
    for (int s = 1; s < m; s++)
        k += mm_gcd(s, m) == 1;
    return k > 0 ? k : 1;
}

static double b_intra(const mm_cluster *c, int m)
{
    double b = c->nvlink_bw * c->nvlink_eff;
    if (c->intra == MM_INTRA_NVLINK_MESH && c->gpus_per_node > 1)
        b = b * coprime_strides(m) / (c->gpus_per_node - 1);
    return b;
}

static double b_nic(const mm_cluster *c)
{
    /* with node groups a ring across nodes runs at the slowest NIC's pace */
    double nic = (c->n_groups ? mm_cluster_nic_bw_min(c) : c->nic_bw) * c->net_eff;
    if (c->pcie_bw > 0)
        nic = fmin(nic, c->pcie_bw * c->pcie_eff);
    return nic;
}

/* Bandwidth of a ring (or tree) through every member: intra and out. */
static double b_ring(const mm_cluster *c, const mm_group_shape *s)
{
    if (s->nodes == 1)
        return b_intra(c, s->n);
    double b = s->channels * b_nic(c);
    if (s->max_per_node > 1)
        b = fmin(b, b_intra(c, s->max_per_node));
    return b;
}

int mm_coll_algo_check(const mm_cluster *c, mm_coll_kind kind, mm_coll_algo algo,
                       const mm_group_shape *s, char *why, size_t len)
{
    const char *msg = NULL;
    if (kind == MM_COLL_SENDRECV || kind == MM_COLL_ALLTOALL) {
        if (algo != MM_ALGO_RING && algo != MM_ALGO_AUTO)
            msg = "send/recv and all-to-all have one algorithm (direct transfers); use auto";
    } else if (algo == MM_ALGO_TREE || algo == MM_ALGO_HIER) {
        if (kind != MM_COLL_ALLREDUCE)
            msg = "tree and hier implement all-reduce only (as in NCCL)";
    } else if (algo == MM_ALGO_NVLS) {
        if (kind != MM_COLL_ALLREDUCE)
            msg = "nvls implements all-reduce only here";
        else if (!c->nvls)
            msg = "the topology's switch cannot reduce (node.nvls is false)";
        else if (s->nodes > 1)
            msg = "nvls needs a group inside one node (NVLS across nodes is not modeled)";
        else if (s->n < 2)
            msg = "nvls needs two GPUs or more";
    } else if (algo == MM_ALGO_COLLNET) {
        /* all-reduce only: SHARP's reduce-scatter / all-gather (with NCCL
         * 2.20 or later, NVIDIA SHARP Rev 3.5.2 LTS release notes) are not
         * modeled */
        if (kind != MM_COLL_ALLREDUCE)
            msg = "collnet implements all-reduce only here (SHARP reduce-scatter / all-gather are not modeled)";
        else if (!c->sharp)
            msg = "the fabric's switches cannot reduce (fabric.sharp is false)";
        else if (s->nodes < 2)
            msg = "collnet needs a group across two nodes or more";
    }
    if (msg && why)
        snprintf(why, len, "%s", msg);
    return msg ? -1 : 0;
}

mm_coll_algo mm_coll_auto(const mm_cluster *c, mm_coll_kind kind, const mm_group_shape *s,
                          double bytes)
{
    return mm_coll_auto_except(c, kind, s, bytes, 0);
}

const char *const mm_redop_names[] = {"sum", "prod", "max", "min", "avg", "mulsum", NULL};

const mm_coll_dtype mm_coll_dtypes[] = {
    {"int8", 1},  {"uint8", 1},  {"int32", 4},    {"uint32", 4},  {"int64", 8},  {"uint64", 8},
    {"half", 2},  {"float", 4},  {"double", 8},   {"bfloat16", 2}, {"f8e4m3", 1}, {"f8e5m2", 1},
    {NULL, 0}};

bool mm_coll_nvls_supports(mm_redop op, const mm_coll_dtype *type)
{
    const char *t = type->name;
    bool wide_int = !strcmp(t, "int32") || !strcmp(t, "uint32") || !strcmp(t, "int64") || !strcmp(t, "uint64");
    bool half = !strcmp(t, "half") || !strcmp(t, "bfloat16");
    if (wide_int || half)
        return op == MM_REDOP_SUM || op == MM_REDOP_MIN || op == MM_REDOP_MAX;
    if (!strcmp(t, "float") || !strcmp(t, "double"))
        return op == MM_REDOP_SUM;
    return false;
}

mm_coll_algo mm_coll_auto_except(const mm_cluster *c, mm_coll_kind kind, const mm_group_shape *s,
                                 double bytes, unsigned except)
{
    if (kind != MM_COLL_ALLREDUCE)
        return MM_ALGO_RING;
    mm_coll_algo best = MM_ALGO_RING;
    double bt = mm_net_analytic_shape_time(c, kind, MM_ALGO_RING, s, bytes);
    for (int a = MM_ALGO_TREE; a < MM_ALGO_COUNT; a++) {
        /* NCCL runs trees across nodes only, and hier needs both levels */
        if (a == MM_ALGO_TREE && s->nodes < 2)
            continue;
        if (a == MM_ALGO_HIER && (s->nodes < 2 || s->max_per_node < 2))
            continue;
        /* a reduction NVLS has no kernel for runs no NVLS inside the node
         * either; CollNet without it is not offered then */
        if (a == MM_ALGO_COLLNET && ((except >> MM_ALGO_NVLS) & 1u) && c->nvls)
            continue;
        if ((except >> a) & 1u)
            continue;
        if (mm_coll_algo_check(c, kind, (mm_coll_algo)a, s, NULL, 0))
            continue;
        double t = mm_net_analytic_shape_time(c, kind, (mm_coll_algo)a, s, bytes);
        if (t < bt)
            bt = t, best = (mm_coll_algo)a;
    }
    return best;
}

/* In-order binary tree over 0..N-1 (labels 1..N; a label's parent is the
 * neighbour at the distance of its lowest set bit that has the next bit
 * set; labels past N climb until they fall inside). */
static int btree_parent(int r, int N)
{
    int x = r + 1, top = 1;
    while (top * 2 <= N)
        top *= 2;
    if (x == top)
        return -1;
    int b = x & -x;
    int p = (x & (2 * b)) ? x - b : x + b;
    while (p > N) {
        int bp = p & -p;
        p = (p & (2 * bp)) ? p - bp : p + bp;
    }
    return p - 1;
}

int mm_dtree_parent(int t, int r, int N)
{
    if (t == 0)
        return btree_parent(r, N);
    int p = btree_parent(N - 1 - r, N);
    return p < 0 ? -1 : N - 1 - p;
}

/* The most tree edges any node has, over both trees (net.h): each edge
 * carries the tree's data once each way (reduce up, broadcast down).  In
 * closed form, because the pre-score asks it for every candidate's
 * collectives: walking the two trees costs O(N) and an allocation per call.
 * The walk over mm_dtree_parent gives the same for every N (test_net
 * checks N = 1..4096; it was also checked to 6,000, around every power of
 * two to 2^21 and at random N to 10^6): 0 for one node, 2 for two, 5 for
 * five, 4 for three and every even N >= 4, 6 for every odd N >= 7. */
int mm_dtree_max_degree(int N)
{
    if (N < 2)
        return 0;
    if (N == 2)
        return 2;
    if (N == 5)
        return 5;
    return N == 3 || N % 2 == 0 ? 4 : 6;
}

/* Alphas: ai per NVLink (or PCIe) hop, an per hop across nodes under one
 * leaf, an + 2 hop_latency through a spine.  A pipelined ring pays its
 * traversal latency once per pass: steps x the mean hop alpha over the
 * ring (Thakur et al.'s (p-1) alpha with alpha averaged over levels). */
double mm_net_latency(const mm_cluster *c, mm_coll_kind kind, mm_coll_algo algo,
                      const mm_group_shape *s)
{
    int n = s->n, N = s->nodes, m = s->max_per_node;
    if (n < 2)
        return 0;
    double ai = c->nvlink_latency_s, an = c->net_latency_s, spine = 2 * c->hop_latency_s;
    double an_far = an + (s->leaf_groups > 1 ? spine : 0);
    if (kind == MM_COLL_SENDRECV)
        return N > 1 ? an + (s->p2p_spine ? spine : 0) : ai;
    int inter = N > 1 ? N : 0;
    double mix = ((n - inter) * ai + inter * an + s->crossings * spine) / n;
    switch (algo) {
    case MM_ALGO_TREE:
        if (N < 2)
            return 2.0 * (n - 1) * ai;
        return 2.0 * (ceil(log2((double)N)) * an_far + (m - 1) * ai);
    case MM_ALGO_HIER:
        if (N < 2 || m < 2)
            break;
        return 2.0 * (m - 1) * ai + 2.0 * (N - 1) * an_far;
    case MM_ALGO_NVLS:
        return c->nvls_latency_s;
    case MM_ALGO_COLLNET:
        /* the switches' step, after the node's own (NVLS, or a chain) */
        if (N < 2)
            break;
        return c->sharp_latency_s + (m < 2 ? 0 : c->nvls ? c->nvls_latency_s : 2.0 * (m - 1) * ai);
    default:
        break;
    }
    double steps = kind == MM_COLL_ALLREDUCE ? 2.0 * (n - 1) : (double)(n - 1);
    return steps * mix;
}

double mm_net_nccl_proto_extra(const mm_cluster *c, mm_coll_kind kind, mm_coll_algo algo, const mm_group_shape *s,
                               double S)
{
    int n = s->n;
    if (!c->nccl_protocols || s->nodes != 1 || n < 2 || !(S > 0) || (algo != MM_ALGO_RING && algo != MM_ALGO_AUTO) ||
        (kind != MM_COLL_ALLREDUCE && kind != MM_COLL_ALLGATHER && kind != MM_COLL_REDUCESCATTER))
        return 0.0;
    /* NVIDIA/nccl v2.18.6-1 src/graph/tuning.cc, ring, {LL, LL128, Simple}:
     * baseLat (us), hwLat of an NVLink (PCI) step (us) */
    static const double base[3] = {6.6, 14.0, 8.4};
    static const double hw_nvl[3] = {0.6, 1.9, 3.4}, hw_pci[3] = {1.0, 2.5, 5.7};
    const double *hw = c->intra == MM_INTRA_PCIE ? hw_pci : hw_nvl;
    bool ar = kind == MM_COLL_ALLREDUCE;
    double steps = ar ? 2.0 * (n - 1) : (double)(n - 1);
    double B = b_ring(c, s), f = mm_coll_bus_factor(kind, n);
    /* LL: min(llMaxBw 87.7 GB/s (Ampere and Hopper, one node), busBw / 4
     * for an all-reduce, / 3 otherwise); LL128: busBw x 0.92 (ppn >= 2) */
    double bw[3] = {fmin(87.7e9, B / (ar ? 4.0 : 3.0)), 0.92 * B, B};
    double best = INFINITY;
    for (int p = 0; p < 3; p++)
        best = fmin(best, (base[p] + steps * hw[p]) * 1e-6 + f * S / bw[p]);
    double now = mm_net_latency(c, kind, algo, s) + f * S / B;
    return best > now ? best - now : 0.0;
}

/* All-to-all bandwidth term: the most loaded link class. */
static double alltoall_bw_time(const mm_cluster *c, const mm_group_shape *s, double S)
{
    int n = s->n, m = s->max_per_node, N = s->nodes;
    double per = S / n, t = 0;
    if (m > 1) {
        double bi = c->nvlink_bw * c->nvlink_eff;
        if (c->intra == MM_INTRA_NVLINK_MESH)
            t = per / (bi / (c->gpus_per_node > 1 ? c->gpus_per_node - 1 : 1));
        else if (c->intra == MM_INTRA_PCIE) {
            /* a PCIe switch uplink carries q members' traffic to the m - q
             * members behind other switches */
            double q = fmin((double)m, (double)(c->gpus_per_node / c->pcie_switches));
            t = fmax((m - 1) * per, q * (m - q) * per) / bi;
        } else
            t = (m - 1) * per / bi;
    }
    if (N > 1) {
        double bo = s->channels * b_nic(c);
        t = fmax(t, (double)m * (n - m) * per / bo);
        if (s->leaf_groups > 1) {
            /* the busiest leaf group's uplinks; ECMP assumed even */
            double a = fmin((double)c->nodes_per_leaf, (double)N); /* nodes per group */
            double leaves = c->fabric == MM_FABRIC_RAIL ? s->channels : 1;
            double down_ports = (double)c->nodes_per_leaf * (c->fabric == MM_FABRIC_RAIL ? 1 : c->nics_per_node);
            double up = down_ports * c->nic_bw * c->net_eff / c->oversub; /* per leaf, all spines */
            double bytes = a * (N - a) * m * m * per / leaves;
            t = fmax(t, bytes / up);
        }
    }
    return t;
}

/* Channels per network peer, as NVIDIA/nccl's src/graph/paths.cc sets them
 * (ncclTopoGetNchannels, remote-rank branch, then ncclTopoComputeP2pChannels
 * or, from 2.29, ncclTopoComputeP2pChannelsPerPeer), read at the tags named:
 *   2.8-2.11  (v2.8.4-1 .. v2.11.4-1): 1;
 *   2.12-2.19 (v2.12.10-1 .. v2.19.4-1): NCCL_NCHANNELS_PER_NET_PEER, 2 by
 *             default;
 *   2.20-2.28 (v2.20.3-1 .. v2.28.9-1): the parameter defaults to "auto":
 *             2, halved while 2 x ranks > 4 x p2pnChannels ("avoid
 *             overloading channels with 8+ operations"), at least the NICs
 *             needed to match the GPU's own bandwidth (getLocalNetCountByBw
 *             in src/graph/topo.cc);
 *   2.29      (v2.29.2-1, v2.29.7-1): n NICs, as above, and at least one
 *             channel per NCCL_P2P_PER_CHANNEL_NET_BW = 14 GB/s of their
 *             bandwidth: max(n, ceil(n x NIC GB/s / 14)); across nodes then
 *             halved while per_peer x ceil(ranks / 8) > p2pnChannels
 *             (NCCL_MAX_DEV_WORK_P2P_PER_BATCH = 8, src/include/device.h).
 * Every version then takes the minimum over all peers (NVLink peers have
 * more) and rounds it up to a power of two, at most p2pnChannels.  2.30
 * counts peers differently (p2pMaxPeers) and is not modeled.  The NCCL
 * bandwidth of a NIC is its line rate (400 Gb/s: 50 GB/s). */
static int pow2_up(int v)
{
    int p = 1;
    while (p < v)
        p <<= 1;
    return p;
}

int mm_nccl_net_channels_per_peer(int version, int nics, double nic_gb_s, double gpu_gb_s, int ranks, int nodes,
                                  int p2p_channels)
{
    if (version < 208 || version > 229 || p2p_channels < 1)
        return 0;
    if (nics < 1)
        nics = 1;
    int used = 1; /* NICs until their sum reaches the GPU's own bandwidth */
    while (used < nics && used * nic_gb_s < gpu_gb_s)
        used++;
    int n;
    if (version < 212)
        n = 1;
    else if (version < 220)
        n = 2;
    else if (version < 229) {
        n = 2;
        while (n * ranks > 4 * p2p_channels && n > 1)
            n /= 2;
        if (used > n)
            n = used;
    } else {
        int by_bw = ((int)(used * nic_gb_s) + 13) / 14; /* divUp((int)netBw, 14) */
        n = used > by_bw ? used : by_bw;
    }
    n = pow2_up(n);
    if (n > p2p_channels)
        n = p2p_channels;
    if (version >= 229 && nodes > 1)
        while (n * ((ranks + 7) / 8) > p2p_channels && n > 1)
            n /= 2;
    return n;
}

/* The network peer's channels for a communicator: the file's override, or
 * the rule of its NCCL version; 0 when neither is stated. */
static int net_per_peer(const mm_cluster *c, int ranks, int nodes)
{
    if (c->p2p_net_per_peer > 0)
        return c->p2p_net_per_peer;
    if (!c->nccl_version || c->gpus_per_node < 1)
        return 0;
    int nics = c->nics_per_node / c->gpus_per_node;
    return mm_nccl_net_channels_per_peer(c->nccl_version, nics, c->nic_bw * 1e-9, c->pcie_bw * 1e-9, ranks, nodes,
                                         c->p2p_channels);
}
/* ---- send/recv: NCCL's p2p channels ------------------------------------
 *
 * NCCL moves a send on a few channels (one CTA each), not on every link at
 * the all-reduce's rate.  How many, by NCCL 2.18-2.19's
 * scheduleP2pTasksToPlan (src/enqueue.cc) and ncclTopoComputeP2pChannels
 * (src/graph/paths.cc), the versions the Zero Bubble runs used:
 *   per_peer  node.p2p_channels_per_peer (nextPow2 of 2 x the NVLinks of a
 *             GPU pair, at most p2pnChannels); in a communicator that
 *             spans nodes the minimum over all peers, so the network
 *             peer's (fabric.p2p_channels_per_peer, or the rule of the
 *             file's nccl_version: mm_nccl_net_channels_per_peer above)
 *             for the NVLink hops too;
 *   one node  nmin = per_peer halved while nmin x ranks > p2pnChannels,
 *             nmax = per_peer halved while nmax x ranks > 4 p2pnChannels,
 *             step NCCL_P2P_NVL_CHUNKSIZE (512 KiB), a part at most 32
 *             steps: nmin channels, doubled while a part exceeds that;
 *   nodes     step NCCL_P2P_NET_CHUNKSIZE (128 KiB), a part at most one
 *             step: per_peer channels;
 * the parts go round-robin on per_peer channels, so min(parts, per_peer).
 * A channel copies at a per-channel rate: inside a node the measured
 * curve's best bandwidth per channel over its rows (node.p2p_sendrecv was
 * taken on a communicator of one node's GPUs, nccl-tests -g G), across
 * nodes fabric.p2p_channel_gb_s; the link ceiling is the curve's best row.
 * Known limits: one per-channel rate for both step sizes; the LL protocol
 * of sends under 16 KiB per channel is not modeled (the fixed time
 * node.p2p_latency_us, nccl-tests' small-message time, covers them). */
#define P2P_NVL_STEP (512.0 * 1024) /* NCCL_P2P_NVL_CHUNKSIZE default, src/init.cc */

#define P2P_NET_STEP (128.0 * 1024) /* NCCL_P2P_NET_CHUNKSIZE default */

int mm_net_p2p_channels(const mm_cluster *c, int ranks, int nodes, double S)
{
    int all = c->p2p_channels, per_peer = c->p2p_per_peer;
    if (all < 1 || per_peer < 1 || !(S > 0))
        return 1;
    int net = nodes > 1 ? net_per_peer(c, ranks, nodes) : 0;
    if (net > 0 && net < per_peer)
        per_peer = net;
    if (per_peer > all)
        per_peer = all;
    int nmin = per_peer, nmax = per_peer;
    double step = nodes > 1 ? P2P_NET_STEP : P2P_NVL_STEP;
    if (nodes <= 1) {
        while (nmin * ranks > all && nmin > 1)
            nmin /= 2;
        while (nmax * ranks > 4 * all && nmax > 1)
            nmax /= 2;
    }
    double min_part = step / 8, max_part = nodes > 1 ? step : 32 * step;
    int n = nmin;
    double part = fmax(min_part, ceil(S / nmin));
    while (part > max_part && n <= nmax / 2) {
        n *= 2;
        part = ceil(S / n);
    }
    part = ceil(part / min_part) * min_part; /* NCCL aligns parts up */
    double parts = ceil(S / part);
    return parts < per_peer ? (int)fmax(parts, 1) : per_peer;
}

/* The line rate of the path a pair uses (per direction). */
static double p2p_line(const mm_cluster *c, bool cross)
{
    if (cross)
        return c->nic_bw;
    double line = c->nvlink_bw;
    if (c->intra == MM_INTRA_NVLINK_MESH && c->gpus_per_node > 1)
        line /= c->gpus_per_node - 1;
    return line;
}

double mm_net_p2p_time(const mm_cluster *c, const mm_group_shape *s, double S)
{
    bool cross = s->nodes > 1;
    const mm_mem_table *t = cross ? (c->has_p2p_inter ? &c->p2p_inter : NULL)
                                  : (c->has_p2p_intra && c->intra != MM_INTRA_PCIE ? &c->p2p_intra : NULL);
    if (!t || t->n < 1)
        return NAN;
    double line = p2p_line(c, cross), cap = 0, beta = cross ? c->p2p_net_channel_bw : 0;
    for (int i = 0; i < t->n; i++) {
        double bw = t->eff[i] * line;
        cap = fmax(cap, bw);
        if (!cross) /* the curve's own communicator: one node's GPUs */
            beta = fmax(beta, bw / mm_net_p2p_channels(c, c->gpus_per_node, 1, t->bytes[i]));
    }
    int ranks = s->comm_ranks > 0 ? s->comm_ranks : 2;
    int nodes = s->comm_nodes > 0 ? s->comm_nodes : s->nodes;
    double bw = fmin(mm_net_p2p_channels(c, ranks, nodes, S) * beta, cap);
    double lat = c->p2p_latency_s + (cross ? mm_net_latency(c, MM_COLL_SENDRECV, MM_ALGO_RING, s) : 0);
    return lat + S / bw;
}

double mm_net_p2p_extra(const mm_cluster *c, const mm_group_shape *s, double S)
{
    if (s->n != 2 || !(S > 0))
        return 0;
    double measured = mm_net_p2p_time(c, s, S);
    if (isnan(measured))
        return 0;
    bool cross = s->nodes > 1;
    double wire = mm_net_latency(c, MM_COLL_SENDRECV, MM_ALGO_RING, s) +
                  S / (cross ? b_nic(c) : p2p_line(c, false) * c->nvlink_eff);
    return measured > wire ? measured - wire : 0;
}

double mm_net_p2p_pair_time(const mm_cluster *c, int src, int dst, double S, int comm_ranks, int comm_nodes)
{
    if (src == dst || !(S > 0))
        return 0;
    int g[2] = {src < dst ? src : dst, src < dst ? dst : src};
    mm_group_shape s;
    mm_group_shape_of(c, g, 2, &s);
    s.comm_ranks = comm_ranks, s.comm_nodes = comm_nodes;
    return mm_net_analytic_shape_time(c, MM_COLL_SENDRECV, MM_ALGO_RING, &s, S);
}

double mm_net_collnet_intra_time(const mm_cluster *c, const mm_group_shape *s, double S)
{
    int m = s->max_per_node;
    if (m < 2)
        return 0;
    if (c->nvls)
        return S * (1.0 + 1.0 / m) / (c->nvlink_bw * c->nvls_eff);
    return 2.0 * (m - 1) / m * S / b_intra(c, m);
}

double mm_net_collnet_net_time(const mm_cluster *c, const mm_group_shape *s, double S)
{
    double nic = (c->n_groups ? mm_cluster_nic_bw_min(c) : c->nic_bw) * c->sharp_eff;
    if (c->pcie_bw > 0)
        nic = fmin(nic, c->pcie_bw * c->pcie_eff);
    return S / (s->channels * nic);
}

double mm_net_analytic_shape_time(const mm_cluster *c, mm_coll_kind kind, mm_coll_algo algo,
                                  const mm_group_shape *s, double S)
{
    int n = s->n, N = s->nodes, m = s->max_per_node;
    if (n < 2 || S <= 0)
        return 0.0;
    double lat = mm_net_latency(c, kind, algo, s), bw;
    switch (kind) {
    case MM_COLL_SENDRECV:
        if (N > 1)
            bw = S / b_nic(c);
        else if (c->intra == MM_INTRA_NVLINK_MESH && c->gpus_per_node > 1)
            bw = S / (c->nvlink_bw * c->nvlink_eff / (c->gpus_per_node - 1));
        else
            bw = S / (c->nvlink_bw * c->nvlink_eff);
        return lat + bw + mm_net_p2p_extra(c, s, S);
    case MM_COLL_ALLTOALL:
        return lat + alltoall_bw_time(c, s, S);
    default:
        break;
    }
    switch (algo) {
    case MM_ALGO_TREE:
        /* inside nodes a chain up and down: 2(m-1)/m S per GPU link; across
         * nodes S/2k per tree edge and channel, D edges on the busiest node */
        if (N == 1) { /* one chain: its middle GPUs send twice */
            bw = (n > 2 ? 2.0 : 1.0) * S / b_intra(c, n);
            break;
        }
        bw = mm_dtree_max_degree(N) * S / (2.0 * s->channels * b_nic(c));
        if (m > 1)
            bw = fmax(bw, 2.0 * (m - 1) / m * S / b_intra(c, m));
        break;
    case MM_ALGO_HIER:
        if (N < 2 || m < 2) {
            bw = mm_coll_bus_factor(kind, n) * S / b_ring(c, s);
            break;
        }
        bw = 2.0 * (m - 1) / m * S / b_intra(c, m) + 2.0 * (N - 1) / N * S / (s->channels * b_nic(c));
        break;
    case MM_ALGO_NVLS:
        bw = S * (1.0 + 1.0 / n) / (c->nvlink_bw * c->nvls_eff);
        break;
    case MM_ALGO_COLLNET:
        if (N < 2) {
            bw = mm_coll_bus_factor(kind, n) * S / b_ring(c, s);
            break;
        }
        bw = fmax(mm_net_collnet_intra_time(c, s, S), mm_net_collnet_net_time(c, s, S));
        break;
    default:
        bw = mm_coll_bus_factor(kind, n) * S / b_ring(c, s);
        lat += mm_net_nccl_proto_extra(c, kind, algo, s, S);
    }
    return lat + bw;
}

double mm_net_analytic_time(const mm_cluster *c, mm_coll_kind kind,
                            const int *gpus, int n, double bytes)
{
    if (n < 2 || bytes <= 0)
        return 0.0;
    int *g = mm_group_sorted(gpus, n);
    if (!g)
        return NAN;
    mm_group_shape s;
    mm_group_shape_of(c, g, n, &s);
    free(g);
    return mm_net_analytic_shape_time(c, kind, MM_ALGO_RING, &s, bytes);
}
