/* topo.c - building the link graph of topo.h and routing over it.
 * Links are numbered arithmetically (node * per_node + offset + index), so
 * a path is computed in O(1) without searching.  Not for: anything that
 * depends on traffic (flow.c, coll.c). */
#include "hw/topo.h"

#include <stdbool.h>
#include <stdlib.h>

int mm_topo_nic_gpu(const mm_cluster *c, int nic)
{
    /* nic_of(g) = g * nics / G; the smallest g with nic_of(g) == nic. */
    int G = c->gpus_per_node, K = c->nics_per_node;
    return (nic * G + K - 1) / K;
}

static int pcie_switch_of_gpu(const mm_cluster *c, int local)
{
    return local * c->pcie_switches / c->gpus_per_node;
}

static int pcie_switch_of_nic(const mm_cluster *c, int nic)
{
    return nic * c->pcie_switches / c->nics_per_node;
}

static void set(mm_topo *t, int l, double cap, double lat)
{
    t->cap[l] = cap;
    t->lat[l] = lat;
}

/* One link under one perturbation entry. */
static void touch(mm_topo *t, int l, const mm_perturb_entry *e)
{
    if (e->factor > 0)
        t->cap[l] *= e->factor;
    t->lat[l] += e->latency_s;
    t->xlat[l] += e->latency_s;
    if (e->latency_s > 0)
        t->any_xlat = 1;
    if (e->failed) {
        t->dead[l] = 1;
        t->cap[l] = 0;
        t->any_dead = 1;
    }
}

/* Both directions of the cable between leaf l and spine s. */
static void touch_uplink(mm_topo *t, int l, int s, const mm_perturb_entry *e)
{
    int up = t->o_fabric + 2 * (l * t->c->spines + s);
    touch(t, up, e);
    touch(t, up + 1, e);
}

static void touch_nic(mm_topo *t, int node, int k, const mm_perturb_entry *e)
{
    int b = node * t->per_node;
    touch(t, b + t->o_nt + k, e);
    touch(t, b + t->o_nr + k, e);
}

static bool listed(const int *ids, int n, int v)
{
    for (int i = 0; i < n; i++)
        if (ids[i] == v)
            return true;
    return false;
}

/* Network perturbations: nic, rail, switch, link (perturb.h). */
static void perturb_links(mm_topo *t, const mm_perturb_entry *e)
{
    const mm_cluster *c = t->c;
    int K = c->nics_per_node, S = c->spines;
    switch (e->kind) {
    case MM_PT_NIC:
        for (int node = 0; node < c->nodes; node++)
            for (int k = 0; k < K; k++)
                if ((!e->n_nodes || listed(e->nodes, e->n_nodes, node)) && (!e->n_nics || listed(e->nics, e->n_nics, k)))
                    touch_nic(t, node, k, e);
        break;
    case MM_PT_RAIL:
        for (int node = 0; node < c->nodes; node++)
            for (int k = 0; k < K; k++)
                if (listed(e->nics, e->n_nics, k))
                    touch_nic(t, node, k, e);
        if (c->fabric == MM_FABRIC_RAIL)
            for (int l = 0; l < t->leaves; l++)
                if (listed(e->nics, e->n_nics, l % K))
                    for (int s = 0; s < S; s++)
                        touch_uplink(t, l, s, e);
        break;
    case MM_PT_SWITCH:
        for (int l = 0; l < t->leaves; l++)
            for (int s = 0; s < S; s++)
                if (listed(e->leaves, e->n_leaves, l) || listed(e->spines, e->n_spines, s))
                    touch_uplink(t, l, s, e);
        /* a leaf also terminates the NIC cables plugged into it */
        for (int node = 0; node < c->nodes && e->n_leaves; node++)
            for (int k = 0; k < K; k++)
                if (listed(e->leaves, e->n_leaves, mm_cluster_leaf_of(c, node, k)))
                    touch_nic(t, node, k, e);
        break;
    case MM_PT_LINK:
        if (e->n_leaves > 0 && e->n_spines > 0 && e->leaves[0] < t->leaves && e->spines[0] < S)
            touch_uplink(t, e->leaves[0], e->spines[0], e);
        break;
    default:
        break;
    }
}

int mm_topo_build(mm_topo *t, const mm_cluster *c, mm_err *err)
{
    int G = c->gpus_per_node, K = c->nics_per_node, S = c->pcie_switches;
    int o = 0;
    t->c = c;
    t->o_up = o, o += c->intra == MM_INTRA_NVSWITCH ? G : 0;
    t->o_down = o, o += c->intra == MM_INTRA_NVSWITCH ? G : 0;
    t->o_mesh = o, o += c->intra == MM_INTRA_NVLINK_MESH ? G * G : 0;
    t->o_pgu = o, o += G;
    t->o_pgd = o, o += G;
    t->o_pnt = o, o += K;
    t->o_pnr = o, o += K;
    t->o_psu = o, o += S;
    t->o_psd = o, o += S;
    t->o_nt = o, o += K;
    t->o_nr = o, o += K;
    t->per_node = o;
    int groups = (c->nodes + c->nodes_per_leaf - 1) / c->nodes_per_leaf;
    t->leaves = groups * (c->fabric == MM_FABRIC_RAIL ? K : 1);
    t->o_fabric = c->nodes * o;
    t->n_links = t->o_fabric + 2 * t->leaves * c->spines;
    t->cap = malloc((size_t)t->n_links * sizeof *t->cap);
    t->lat = malloc((size_t)t->n_links * sizeof *t->lat);
    t->xlat = calloc((size_t)t->n_links + 1, sizeof *t->xlat);
    t->dead = calloc((size_t)t->n_links + 1, 1);
    t->any_dead = t->any_xlat = 0;
    if (!t->cap || !t->lat || !t->xlat || !t->dead) {
        mm_topo_free(t);
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory for the link graph");
    }
    double nvl = c->nvlink_bw * c->nvlink_eff, a_in = c->nvlink_latency_s / 2;
    /* PCIe: GPU rings over PCIe on a PCIe-only node are calibrated by its
     * ring busbw; DMA to a NIC by pcie_eff.  Unmodeled PCIe (pcie_bw 0)
     * becomes links that never limit. */
    double pcie = c->pcie_bw > 0 ? c->pcie_bw * c->pcie_eff : 1e18;
    double nic = c->nic_bw * c->net_eff, a_net = c->net_latency_s / 2;
    double down_ports = (double)c->nodes_per_leaf * (c->fabric == MM_FABRIC_RAIL ? 1 : K);
    double up = down_ports * nic / (c->oversub * c->spines);
    for (int node = 0; node < c->nodes; node++) {
        int b = node * o;
        for (int g = 0; g < G; g++) {
            if (c->intra == MM_INTRA_NVSWITCH) {
                set(t, b + t->o_up + g, nvl, a_in);
                set(t, b + t->o_down + g, nvl, a_in);
            }
            if (c->intra == MM_INTRA_NVLINK_MESH)
                for (int h = 0; h < G; h++)
                    set(t, b + t->o_mesh + g * G + h, G > 1 ? nvl / (G - 1) : nvl, 2 * a_in);
            /* On a PCIe-only node the GPU's PCIe link carries the GPU-to-GPU
             * hop latency (nvlink_latency holds the PCIe figures there). */
            double pl = c->intra == MM_INTRA_PCIE ? a_in : 0;
            set(t, b + t->o_pgu + g, pcie, pl);
            set(t, b + t->o_pgd + g, pcie, pl);
        }
        /* a node group's NICs: its line rate at the fabric's calibrated efficiency */
        double nic_n = mm_cluster_node_nic_bw(c, node) * c->net_eff;
        for (int k = 0; k < K; k++) {
            set(t, b + t->o_pnt + k, pcie, 0);
            set(t, b + t->o_pnr + k, pcie, 0);
            set(t, b + t->o_nt + k, nic_n, a_net);
            set(t, b + t->o_nr + k, nic_n, a_net);
        }
        for (int s = 0; s < S; s++) {
            set(t, b + t->o_psu + s, pcie, 0);
            set(t, b + t->o_psd + s, pcie, 0);
        }
    }
    for (int i = t->o_fabric; i < t->n_links; i++)
        set(t, i, up, c->hop_latency_s);
    for (int i = 0; i < c->pt.n; i++)
        perturb_links(t, &c->pt.e[i]);
    return 0;
}

void mm_topo_free(mm_topo *t)
{
    free(t->cap);
    free(t->lat);
    free(t->xlat);
    free(t->dead);
    t->cap = t->lat = t->xlat = NULL;
    t->dead = NULL;
}

/* GPU-to-GPU links inside node `node` (local indices s != d). */
static int intra_path(const mm_topo *t, int node, int s, int d, int *out)
{
    const mm_cluster *c = t->c;
    int b = node * t->per_node, n = 0;
    switch (c->intra) {
    case MM_INTRA_NVSWITCH:
        out[n++] = b + t->o_up + s;
        out[n++] = b + t->o_down + d;
        break;
    case MM_INTRA_NVLINK_MESH:
        out[n++] = b + t->o_mesh + s * c->gpus_per_node + d;
        break;
    default: {
        int ss = pcie_switch_of_gpu(c, s), sd = pcie_switch_of_gpu(c, d);
        out[n++] = b + t->o_pgu + s;
        if (ss != sd) {
            out[n++] = b + t->o_psu + ss;
            out[n++] = b + t->o_psd + sd;
        }
        out[n++] = b + t->o_pgd + d;
    }
    }
    return n;
}

/* GPU (local) to its node's NIC `k`, outbound (rx = 0) or inbound. */
static int nic_path(const mm_topo *t, int node, int g, int k, int rx, int *out)
{
    const mm_cluster *c = t->c;
    int b = node * t->per_node, n = 0, tmp[8], m = 0;
    int via = g;
    if (c->intra != MM_INTRA_PCIE && mm_cluster_nic_of(c, g) != k) {
        via = mm_topo_nic_gpu(c, k); /* PXN through the GPU the NIC serves */
        m = rx ? intra_path(t, node, via, g, tmp) : intra_path(t, node, g, via, tmp);
    }
    int sg = pcie_switch_of_gpu(c, via), sn = pcie_switch_of_nic(c, k);
    if (!rx) {
        for (int i = 0; i < m; i++)
            out[n++] = tmp[i];
        out[n++] = b + t->o_pgu + via;
        if (sg != sn) {
            out[n++] = b + t->o_psu + sg;
            out[n++] = b + t->o_psd + sn;
        }
        out[n++] = b + t->o_pnt + k;
        out[n++] = b + t->o_nt + k;
    } else {
        out[n++] = b + t->o_nr + k;
        out[n++] = b + t->o_pnr + k;
        if (sg != sn) {
            out[n++] = b + t->o_psu + sn;
            out[n++] = b + t->o_psd + sg;
        }
        out[n++] = b + t->o_pgd + via;
        for (int i = 0; i < m; i++)
            out[n++] = tmp[i];
    }
    return n;
}

int mm_topo_fabric_path(const mm_topo *t, int ns, int nd, int rail_out, int rail_in, int *links)
{
    const mm_cluster *c = t->c;
    int ls = mm_cluster_leaf_of(c, ns, rail_out), ld = mm_cluster_leaf_of(c, nd, rail_in);
    if (ls == ld)
        return 0;
    /* Destination-based routing, D-mod-k: the spine is the destination
     * NIC's global index modulo the spines, as InfiniBand's fat-tree
     * routing engines program the switches (Zahavi, "D-Mod-K Routing
     * Providing Non-Blocking Traffic for Shift Permutations on Real Life
     * Fat Trees", 2010).  Deterministic, and balanced for the shift and
     * all-to-all patterns collectives make. */
    int sp = (int)(((int64_t)nd * c->nics_per_node + rail_in) % c->spines);
    /* around failed links: the next spine live on both sides */
    for (int i = 0; t->any_dead && i < c->spines; i++) {
        int s2 = (sp + i) % c->spines;
        if (!t->dead[t->o_fabric + 2 * (ls * c->spines + s2)] &&
            !t->dead[t->o_fabric + 2 * (ld * c->spines + s2) + 1]) {
            sp = s2;
            break;
        }
    }
    links[0] = t->o_fabric + 2 * (ls * c->spines + sp);
    links[1] = t->o_fabric + 2 * (ld * c->spines + sp) + 1;
    return 2;
}

int mm_topo_path(const mm_topo *t, int src, int dst, int rail_out, int rail_in, int *links)
{
    const mm_cluster *c = t->c;
    int G = c->gpus_per_node;
    int ns = src / G, nd = dst / G, s = src % G, d = dst % G;
    if (src == dst)
        return 0;
    if (ns == nd)
        return intra_path(t, ns, s, d, links);
    int n = nic_path(t, ns, s, rail_out, 0, links);
    n += mm_topo_fabric_path(t, ns, nd, rail_out, rail_in, links + n);
    n += nic_path(t, nd, d, rail_in, 1, links + n);
    return n;
}

double mm_topo_path_latency(const mm_topo *t, const int *links, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += t->lat[links[i]];
    return s;
}
