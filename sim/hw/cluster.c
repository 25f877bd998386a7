/* cluster.c - reading a topology YAML file into an mm_cluster.
 * Units in the file are the ones vendors print (TFLOP/s, GB, GB/s, Gbit/s,
 * microseconds); they are converted to SI here and nowhere else.
 * Not for: routes and links (topo.c), collective times (net.c, coll.c),
 * parsing the kernel-table CSV files it names (efficiency.c). */
#include "hw/cluster.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util/doc.h"
#include "util/limits.h"

static const char *const top_keys[] = {"name", "gpu", "node", "fabric", "nodes", "source",
                                       "node_groups", "nccl_version", "sites", NULL};
static const char *const site_keys[] = {"count", "wan_gbps", "wan_latency_ms", NULL};
static const char *const group_keys[] = {"name", "first", "count", "nic_gbit_s", "gpu", NULL};
static const char *const group_gpu_keys[] = {"name", "peak_tflops", "hbm_gb", "hbm_gb_s", NULL};
static const char *const gpu_keys[] = {"name", "peak_tflops", "hbm_gb", "hbm_gb_s",
                                       "gemm_efficiency", "attention_efficiency",
                                       "memory_efficiency", "kernel_overhead_us", "kernels",
                                       "compute_capability", "dropout_gelems_s", "jit_memory_efficiency",
                                       "overlap_slowdown", "fp8_gemm_speedup", "nvdec",
                                       "sustained_clock_ratio", NULL};
/* Tables first (index i below), then attention_is. */
static const char *const kernel_keys[] = {"gemm", "attention", "memory", "flash1", "flash2", "flash3", "cudnn",
                                          "attention_is", NULL};
static const char *const peak_keys[] = {"bf16", "fp16", "fp8", NULL};
static const char *const node_keys[] = {"gpus", "interconnect", "nvlink_gb_s", "nccl_protocols",
                                        "nvlink_allreduce_busbw_gb_s", "nvlink_latency_us",
                                        "nvls", "nvls_allreduce_busbw_gb_s", "nvls_latency_us",
                                        "pcie_gb_s",
                                        "pcie_efficiency", "pcie_switches",
                                        "pcie_allreduce_busbw_gb_s", "pcie_latency_us", "nics",
                                        "nic_gbit_s", "p2p_sendrecv", "p2p_channels",
                                        "p2p_channels_per_peer", "p2p_latency_us", "cpu_cores", NULL};
static const char *const fabric_keys[] = {"allreduce_busbw_gb_s", "latency_us", "kind",
                                          "nodes_per_leaf", "oversubscription", "spines",
                                          "hop_latency_us", "p2p_sendrecv", "p2p_channels_per_peer",
                                          "p2p_channel_gb_s", "sharp", "sharp_efficiency", "sharp_latency_us",
                                          "sharp_trees", NULL};
static const char *const intra_names[] = {"nvswitch", "nvlink-mesh", "pcie", NULL};
static const char *const fabric_names[] = {"rail", "fat-tree", NULL};

/* DMA through a PCIe switch reaches 88 % of the line rate: nvbandwidth
 * host-to-device 55.43 GB/s of 63 on PCIe Gen5 x16 on an 8x H200 node
 * (stas00/ml-engineering network/README.md, PCIe section, @ 744d01e1).
 * Used when a topology file gives pcie_gb_s without pcie_efficiency. */
#define MM_PCIE_DMA_EFF 0.88

/* A required positive number. */
static int need_pos(const mm_doc *d, mm_node *map, const char *key,
                    const char *path, double *out, mm_err *err)
{
    bool found = false;
    int rc = mm_node_double(d, map, key, path, 1e-12, 1e30, out, &found, err);
    if (rc)
        return rc;
    if (!found)
        return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(map), path,
                          "missing required key");
    return 0;
}

static int need_map(const mm_doc *d, mm_node *parent, const char *key,
                    const char *const *allowed, mm_node **out, mm_err *err)
{
    *out = mm_node_get(parent, key);
    if (!*out)
        return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(parent), key,
                          "missing required section");
    return mm_node_check_keys(d, *out, key, allowed, err);
}

/* A data file named by `key` in mapping `map`, relative to the topology
 * file's folder (or absolute); *found false when the key is absent. */
static int data_path(const mm_doc *d, mm_node *map, const char *key, const char *path_key, char *out,
                     size_t len, bool *found, mm_err *err)
{
    char rel[512];
    int rc = mm_node_str(d, map, key, path_key, rel, sizeof rel, found, err);
    if (rc || !*found)
        return rc;
    const char *dir_end = strrchr(d->path, '/');
    if (rel[0] == '/' || !dir_end)
        snprintf(out, len, "%s", rel);
    else
        snprintf(out, len, "%.*s/%s", (int)(dir_end - d->path), d->path, rel);
    return 0;
}

/* gpu.kernels: {gemm: F, attention: F, memory: F, flash1 / flash2 / flash3 /
 * cudnn: F, attention_is: IMPL}, each F a CSV path relative to the topology
 * file's folder (or absolute).  Any may be left out. */
static int load_kernels(const mm_doc *d, mm_node *g, mm_kernel_tables *kt, mm_err *err)
{
    memset(kt, 0, sizeof *kt);
    mm_node *k = mm_node_get(g, "kernels");
    if (!k)
        return 0;
    int rc = mm_node_check_keys(d, k, "gpu.kernels", kernel_keys, err);
    if (rc)
        return rc;
    for (int i = 0; i < 7; i++) {
        char key[64], path[1024];
        bool found = false;
        snprintf(key, sizeof key, "gpu.kernels.%s", kernel_keys[i]);
        if ((rc = data_path(d, k, kernel_keys[i], key, path, sizeof path, &found, err)))
            return rc;
        if (!found)
            continue;
        rc = i == 0 ? mm_gemm_table_load(path, &kt->gemm, err)
             : i == 1 ? mm_attn_table_load(path, &kt->attn, err)
             : i == 2 ? mm_mem_table_load(path, &kt->mem, err)
                      : mm_attn_table_load(path, &kt->impl[i - 3], err);
        if (rc)
            return rc;
        if (i == 0)
            kt->has_gemm = true;
        else if (i == 1)
            kt->has_attn = true;
        else if (i == 2)
            kt->has_mem = true;
        else
            kt->has_impl[i - 3] = true;
    }
    /* what the generic table measures: one of the named kernels */
    static const char *const named[] = {"flash1", "flash2", "flash3", "cudnn", NULL};
    int is = -1;
    bool found = false;
    if ((rc = mm_node_enum(d, k, "attention_is", "gpu.kernels.attention_is", named, &is, &found, err)))
        return rc;
    kt->attn_is = found ? (mm_attn_impl)(MM_ATTN_IMPL_FLASH1 + is) : MM_ATTN_IMPL_FLASH;
    return 0;
}

/* node.p2p_sendrecv / fabric.p2p_sendrecv: a CSV of bytes,efficiency,source,
 * the nccl-tests sendrecv_perf bandwidth at that message size as a fraction
 * of the link's line rate per direction (efficiency.h's memory-table
 * format and interpolation).  A curve comes with NCCL's channel counts
 * (net.c turns the curve into a per-channel rate and a link ceiling):
 * node.p2p_channels, node.p2p_channels_per_peer, node.p2p_latency_us;
 * fabric.p2p_channels_per_peer, fabric.p2p_channel_gb_s. */
static int load_p2p(const mm_doc *d, mm_node *map, const char *sec, mm_mem_table *t, bool *has,
                    mm_err *err)
{
    char key[64], path[1024];
    snprintf(key, sizeof key, "%s.p2p_sendrecv", sec);
    *has = false;
    int rc = data_path(d, map, "p2p_sendrecv", key, path, sizeof path, has, err);
    if (rc || !*has)
        return rc;
    return mm_mem_table_load(path, t, err);
}

static int load_gpu(const mm_doc *d, mm_node *g, mm_gpu_spec *gpu, mm_err *err)
{
    int rc;
    bool found;
    if ((rc = mm_node_str(d, g, "name", "gpu.name", gpu->name, sizeof gpu->name, &found, err)))
        return rc;
    mm_node *pk = mm_node_get(g, "peak_tflops");
    if (!pk)
        return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(g), "gpu.peak_tflops",
                          "missing required key");
    if ((rc = mm_node_check_keys(d, pk, "gpu.peak_tflops", peak_keys, err)))
        return rc;
    for (int i = 0; i < MM_DTYPE_COUNT; i++) {
        char path[64];
        snprintf(path, sizeof path, "gpu.peak_tflops.%s", peak_keys[i]);
        double v = NAN;
        if ((rc = mm_node_double(d, pk, peak_keys[i], path, 1e-6, 1e9, &v, &found, err)))
            return rc;
        gpu->peak_flops[i] = found ? v * 1e12 : NAN; /* NAN: dtype unsupported */
    }
    double hbm_gb, hbm_gbs, launch_us;
    if ((rc = need_pos(d, g, "hbm_gb", "gpu.hbm_gb", &hbm_gb, err)) ||
        (rc = need_pos(d, g, "hbm_gb_s", "gpu.hbm_gb_s", &hbm_gbs, err)) ||
        (rc = need_pos(d, g, "gemm_efficiency", "gpu.gemm_efficiency", &gpu->gemm_eff, err)) ||
        (rc = need_pos(d, g, "attention_efficiency", "gpu.attention_efficiency", &gpu->attn_eff, err)) ||
        (rc = need_pos(d, g, "memory_efficiency", "gpu.memory_efficiency", &gpu->mem_eff, err)) ||
        (rc = need_pos(d, g, "kernel_overhead_us", "gpu.kernel_overhead_us", &launch_us, err)))
        return rc;
    const char *effk[] = {"gemm_efficiency", "attention_efficiency", "memory_efficiency"};
    const double effv[] = {gpu->gemm_eff, gpu->attn_eff, gpu->mem_eff};
    for (int i = 0; i < 3; i++)
        if (effv[i] > 1.0) {
            char path[64];
            snprintf(path, sizeof path, "gpu.%s", effk[i]);
            return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(mm_node_get(g, effk[i])), path,
                              "an efficiency is a fraction in (0, 1], got %g", effv[i]);
        }
    gpu->hbm_bytes = hbm_gb * 1e9;
    gpu->hbm_bw = hbm_gbs * 1e9;
    gpu->kernel_overhead_s = launch_us * 1e-6;
    /* NVDEC video decoder engines (the data loader's video decoder:
     * nvdec, cost/loader.h); absent: 0 */
    int64_t nvdec = 0;
    if ((rc = mm_node_int(d, g, "nvdec", "gpu.nvdec", 0, 64, &nvdec, &found, err)))
        return rc;
    gpu->nvdec = (int)nvdec;
    /* CUDA compute capability (8.0 A100, 9.0 H100/H200): frameworks pick
     * kernels by it (the frameworks/ profiles); 0 when unstated */
    gpu->compute_capability = 0;
    if ((rc = mm_node_double(d, g, "compute_capability", "gpu.compute_capability", 1.0, 100.0,
                             &gpu->compute_capability, &found, err)))
        return rc;
    double gel = 0;
    if ((rc = mm_node_double(d, g, "dropout_gelems_s", "gpu.dropout_gelems_s", 1e-3, 1e6, &gel, &found, err)))
        return rc;
    gpu->dropout_elems_s = found ? gel * 1e9 : 0.0;
    double jit = 0;
    if ((rc = mm_node_double(d, g, "jit_memory_efficiency", "gpu.jit_memory_efficiency", 0.01, 1.0, &jit, &found,
                             err)))
        return rc;
    gpu->jit_mem_eff = found ? jit : 0.0;
    gpu->overlap_slowdown = MM_OVERLAP_SLOWDOWN_DEFAULT;
    if ((rc = mm_node_double(d, g, "overlap_slowdown", "gpu.overlap_slowdown", 0.0, 1.0, &gpu->overlap_slowdown,
                             &found, err)))
        return rc;
    /* FP8 over BF16 GEMM rate: only where the GPU has an FP8 peak (an FP8
     * GEMM on a GPU without one runs at BF16, compute.h) */
    gpu->fp8_gemm_speedup = MM_FP8_GEMM_SPEEDUP_DEFAULT;
    if ((rc = mm_node_double(d, g, "fp8_gemm_speedup", "gpu.fp8_gemm_speedup", 0.1, 8.0, &gpu->fp8_gemm_speedup,
                             &found, err)))
        return rc;
    if (found && !(gpu->peak_flops[MM_DTYPE_FP8] > 0))
        return mm_err_set(err, MM_EINPUT, d->path, mm_node_key_line(g, "fp8_gemm_speedup"), "gpu.fp8_gemm_speedup",
                          "only with gpu.peak_tflops.fp8");
    /* sustained over measured SM clock (cluster.h); 1: the tables as measured */
    gpu->sustained_clock_ratio = 1.0;
    if ((rc = mm_node_double(d, g, "sustained_clock_ratio", "gpu.sustained_clock_ratio", 0.1, 1.0,
                             &gpu->sustained_clock_ratio, &found, err)))
        return rc;
    return load_kernels(d, g, &gpu->kernels, err);
}

/* A key that must not appear, or appears with a value that conflicts with
 * another: MM_EINPUT at the key's line. */
static int bad_key(const mm_doc *d, mm_node *map, const char *key, const char *path,
                   const char *msg, mm_err *err)
{
    int line = mm_node_key_line(map, key);
    return mm_err_set(err, MM_EINPUT, d->path, line ? line : mm_node_line(map), path, "%s", msg);
}

/* A channel count that a p2p curve needs (`curve`: the section has one;
 * `derived`: the count may be left to nccl_version's rule instead): NCCL
 * rounds p2p channel counts to powers of two (ncclTopoComputeP2pChannels),
 * so others are refused. */
static int p2p_int(const mm_doc *d, mm_node *map, const char *key, const char *path, bool curve,
                   bool derived, int64_t *out, mm_err *err)
{
    bool found = false;
    int rc = mm_node_int(d, map, key, path, 1, 64, out, &found, err);
    if (rc)
        return rc;
    if (curve && !found && !derived)
        return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(map), path,
                          "missing: a p2p_sendrecv curve needs NCCL's channel counts%s (docs/topology.md)",
                          strcmp(path, "fabric.p2p_channels_per_peer") ? "" : ", or a top-level nccl_version");
    if (!curve && found)
        return bad_key(d, map, key, path, "only with a p2p_sendrecv curve in the same section", err);
    if (found && (*out & (*out - 1)))
        return bad_key(d, map, key, path, "NCCL rounds p2p channel counts to powers of two", err);
    return 0;
}

/* nccl_version: "MAJOR.MINOR" (or MAJOR.MINOR.PATCH), the NCCL the
 * file's measurements ran; its channel rule per network peer is modeled
 * for 2.8 to 2.29 (net.c, mm_nccl_net_channels_per_peer).  c->nccl_version
 * 0 when absent. */
static int load_nccl_version(const mm_doc *d, mm_node *root, mm_cluster *c, mm_err *err)
{
    char v[32];
    bool found = false;
    int rc = mm_node_str(d, root, "nccl_version", "nccl_version", v, sizeof v, &found, err);
    if (rc || !found)
        return rc;
    int major = 0, minor = -1, patch = 0, used = 0;
    int k = sscanf(v, "%d.%d%n.%d%n", &major, &minor, &used, &patch, &used);
    if (k < 2 || v[used] != '\0' || major != 2 || minor < 8 || minor > 29 || patch < 0)
        return bad_key(d, root, "nccl_version", "nccl_version",
                       "an NCCL version from 2.8 to 2.29, as \"2.19\" (the channel rules modeled, docs/topology.md)",
                       err);
    c->nccl_version = major * 100 + minor;
    return 0;
}

static int load_p2p_channels(const mm_doc *d, mm_node *n, mm_node *f, mm_cluster *c, mm_err *err)
{
    int64_t ch = 0, pp = 0, np = 0;
    double lat = 0, nbw = 0;
    bool found = false;
    int rc;
    if ((rc = p2p_int(d, n, "p2p_channels", "node.p2p_channels", c->has_p2p_intra, false, &ch, err)) ||
        (rc = p2p_int(d, n, "p2p_channels_per_peer", "node.p2p_channels_per_peer", c->has_p2p_intra, false, &pp,
                      err)) ||
        (rc = p2p_int(d, f, "p2p_channels_per_peer", "fabric.p2p_channels_per_peer", c->has_p2p_inter,
                      c->nccl_version > 0, &np, err)))
        return rc;
    if (c->has_p2p_intra) {
        if ((rc = need_pos(d, n, "p2p_latency_us", "node.p2p_latency_us", &lat, err)))
            return rc;
    } else if (mm_node_get(n, "p2p_latency_us")) {
        return bad_key(d, n, "p2p_latency_us", "node.p2p_latency_us", "only with node.p2p_sendrecv", err);
    }
    if ((rc = mm_node_double(d, f, "p2p_channel_gb_s", "fabric.p2p_channel_gb_s", 1e-3, 1e6, &nbw, &found, err)))
        return rc;
    if (found != c->has_p2p_inter)
        return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(f), "fabric.p2p_channel_gb_s",
                          found ? "only with fabric.p2p_sendrecv" : "missing: fabric.p2p_sendrecv needs it");
    c->p2p_channels = (int)ch, c->p2p_per_peer = (int)pp, c->p2p_net_per_peer = (int)np;
    c->p2p_latency_s = lat * 1e-6;
    c->p2p_net_channel_bw = nbw * 1e9;
    return 0;
}

/* The GPU-to-GPU link inside a node, KIND_gb_s (line rate),
 * KIND_allreduce_busbw_gb_s (measured all-reduce bus bandwidth, at most the
 * line rate) and KIND_latency_us, for KIND nvlink or pcie. */
static int read_gpu_link(const mm_doc *d, mm_node *n, const char *kind, double *bw, double *bus,
                         double *lat, mm_err *err)
{
    char key[3][48], path[3][64];
    static const char *const suffix[] = {"gb_s", "allreduce_busbw_gb_s", "latency_us"};
    double *out[] = {bw, bus, lat};
    for (int i = 0; i < 3; i++) {
        snprintf(key[i], sizeof key[i], "%s_%s", kind, suffix[i]);
        snprintf(path[i], sizeof path[i], "node.%s", key[i]);
        int rc = need_pos(d, n, key[i], path[i], out[i], err);
        if (rc)
            return rc;
    }
    if (*bus > *bw)
        return bad_key(d, n, key[1], path[1], "bus bandwidth exceeds the line rate it runs over", err);
    return 0;
}

/* NVLS (an NVSwitch that reduces): its bus bandwidth and latency, given
 * only with nvls: true; bw: the NVLink line rate (GB/s).  A part of
 * load_node. */
static int load_nvls(const mm_doc *d, mm_node *n, mm_cluster *c, int intra, bool nvls, int64_t gpn, double bw,
                     mm_err *err)
{
    int rc;
    if (nvls) {
        double nb;
        if (intra != MM_INTRA_NVSWITCH)
            return bad_key(d, n, "nvls", "node.nvls", "only an NVSwitch can reduce (NVLS)", err);
        double nl;
        if ((rc = need_pos(d, n, "nvls_allreduce_busbw_gb_s", "node.nvls_allreduce_busbw_gb_s", &nb, err)) ||
            (rc = need_pos(d, n, "nvls_latency_us", "node.nvls_latency_us", &nl, err)))
            return rc;
        c->nvls_latency_s = nl * 1e-6;
        /* NVLS moves S (1 + 1/G) per GPU link direction for an all-reduce of
         * S (push every shard to the switch for reduction, multicast the
         * reduced shard back): achieved link rate = algbw (1 + 1/G), with
         * algbw = busbw / (2(G-1)/G) as nccl-tests reports NVLS. */
        double g = (double)gpn;
        c->nvls_eff = nb / (2.0 * (g - 1) / g) * (1.0 + 1.0 / g) / bw;
        if (gpn < 2 || c->nvls_eff > 1.0)
            return bad_key(d, n, "nvls_allreduce_busbw_gb_s", "node.nvls_allreduce_busbw_gb_s",
                           "NVLS bus bandwidth implies more than the NVLink line rate", err);
        c->nvls = 1;
    } else if (mm_node_get(n, "nvls_allreduce_busbw_gb_s") || mm_node_get(n, "nvls_latency_us")) {
        const char *k = mm_node_get(n, "nvls_latency_us") ? "nvls_latency_us" : "nvls_allreduce_busbw_gb_s";
        char path[64];
        snprintf(path, sizeof path, "node.%s", k);
        return bad_key(d, n, k, path, "given without nvls: true", err);
    }
    return 0;
}

/* The node section: GPUs, how they are joined, PCIe, NICs. */
static int load_node(const mm_doc *d, mm_node *n, mm_cluster *c, mm_err *err)
{
    int rc, intra = MM_INTRA_NVSWITCH;
    bool found, nvls = false;
    int64_t gpn = 0, nics = 0, sw = 0;
    double nic_gbit;
    if ((rc = mm_node_int(d, n, "gpus", "node.gpus", 1, 4096, &gpn, &found, err)) ||
        (rc = mm_node_enum(d, n, "interconnect", "node.interconnect", intra_names, &intra, &found, err)) ||
        (rc = mm_node_int(d, n, "nics", "node.nics", 1, 4096, &nics, &found, err)) ||
        (rc = need_pos(d, n, "nic_gbit_s", "node.nic_gbit_s", &nic_gbit, err)) ||
        (rc = mm_node_bool(d, n, "nvls", "node.nvls", &nvls, &found, err)))
        return rc;
    if (gpn == 0 || nics == 0)
        return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(n), gpn ? "node.nics" : "node.gpus",
                          "missing required key");
    c->gpus_per_node = (int)gpn;
    c->nics_per_node = (int)nics;
    c->nic_bw = nic_gbit * 1e9 / 8.0;
    c->intra = intra;
    double bw, bus, lat;
    if (intra == MM_INTRA_PCIE) {
        static const char *const nvl[] = {"nvlink_gb_s", "nvlink_allreduce_busbw_gb_s",
                                          "nvlink_latency_us", "nvls_allreduce_busbw_gb_s", NULL};
        for (int i = 0; nvl[i]; i++)
            if (mm_node_get(n, nvl[i])) {
                char path[64];
                snprintf(path, sizeof path, "node.%s", nvl[i]);
                return bad_key(d, n, nvl[i], path, "a node with interconnect: pcie has no NVLink", err);
            }
        if (nvls)
            return bad_key(d, n, "nvls", "node.nvls", "only an NVSwitch can reduce (NVLS)", err);
        if ((rc = read_gpu_link(d, n, "pcie", &bw, &bus, &lat, err)))
            return rc;
        c->pcie_bw = c->nvlink_bw = bw * 1e9;
        c->pcie_eff = c->nvlink_eff = bus / bw;
        c->nvlink_latency_s = lat * 1e-6;
    } else {
        if (mm_node_get(n, "pcie_allreduce_busbw_gb_s") || mm_node_get(n, "pcie_latency_us")) {
            const char *k = mm_node_get(n, "pcie_latency_us") ? "pcie_latency_us" : "pcie_allreduce_busbw_gb_s";
            char path[64];
            snprintf(path, sizeof path, "node.%s", k);
            return bad_key(d, n, k, path, "only a node with interconnect: pcie has GPU rings over PCIe", err);
        }
        if ((rc = read_gpu_link(d, n, "nvlink", &bw, &bus, &lat, err)))
            return rc;
        c->nvlink_bw = bw * 1e9;
        c->nvlink_eff = bus / bw;
        c->nvlink_latency_s = lat * 1e-6;
        double pbw = 0;
        c->pcie_eff = MM_PCIE_DMA_EFF;
        if ((rc = mm_node_double(d, n, "pcie_gb_s", "node.pcie_gb_s", 1e-6, 1e9, &pbw, &found, err)) ||
            (rc = mm_node_double(d, n, "pcie_efficiency", "node.pcie_efficiency", 1e-6, 1.0,
                                 &c->pcie_eff, &found, err)))
            return rc;
        c->pcie_bw = pbw * 1e9;
    }
    if ((rc = load_nvls(d, n, c, intra, nvls, gpn, bw, err)))
        return rc;
    sw = c->nics_per_node < c->gpus_per_node ? c->nics_per_node : c->gpus_per_node;
    if ((rc = mm_node_int(d, n, "pcie_switches", "node.pcie_switches", 1, gpn, &sw, &found, err)))
        return rc;
    c->pcie_switches = (int)sw;
    /* the host CPU cores of a node (the data loader's, cost/loader.h);
     * absent: 0, and a scenario that models the loader is refused */
    int64_t cores = 0;
    if ((rc = mm_node_int(d, n, "cpu_cores", "node.cpu_cores", 1, 1 << 20, &cores, &found, err)))
        return rc;
    c->cpu_cores = (int)cores;
    bool protos = false;
    if ((rc = mm_node_bool(d, n, "nccl_protocols", "node.nccl_protocols", &protos, &found, err)))
        return rc;
    c->nccl_protocols = protos;
    if (c->nics_per_node > c->gpus_per_node)
        return bad_key(d, n, "nics", "node.nics", "more NICs than GPUs is not modeled", err);
    return 0;
}

/* fabric.sharp: the switches reduce (SHARP).  A SHARP stream runs at the
 * NIC line rate times sharp_efficiency, by default the fabric's own ring
 * efficiency (the same NIC and protocol; set before this is called);
 * sharp_latency_us and sharp_trees are required with it (docs/topology.md
 * cites the values of topologies/dgx-h100-sharp.yaml). */
static int load_sharp(const mm_doc *d, mm_node *f, mm_cluster *c, mm_err *err)
{
    static const char *const dep[] = {"sharp_efficiency", "sharp_latency_us", "sharp_trees", NULL};
    bool sharp = false, found;
    int rc;
    if ((rc = mm_node_bool(d, f, "sharp", "fabric.sharp", &sharp, &found, err)))
        return rc;
    if (!sharp) {
        for (int i = 0; dep[i]; i++)
            if (mm_node_get(f, dep[i])) {
                char path[64];
                snprintf(path, sizeof path, "fabric.%s", dep[i]);
                return bad_key(d, f, dep[i], path, "given without sharp: true", err);
            }
        return 0;
    }
    double eff = c->net_eff, lat;
    int64_t trees;
    if ((rc = mm_node_double(d, f, "sharp_efficiency", "fabric.sharp_efficiency", 1e-3, 1.0, &eff, &found, err)) ||
        (rc = need_pos(d, f, "sharp_latency_us", "fabric.sharp_latency_us", &lat, err)) ||
        (rc = mm_node_int(d, f, "sharp_trees", "fabric.sharp_trees", 1, 1 << 20, &trees, &found, err)))
        return rc;
    if (!found)
        return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(f), "fabric.sharp_trees", "missing required key");
    c->sharp = 1;
    c->sharp_eff = eff;
    c->sharp_latency_s = lat * 1e-6;
    c->sharp_trees = (int)trees;
    return 0;
}

/* The fabric section: calibration, shape, latency.  Needs c->nodes. */
static int load_fabric(const mm_doc *d, mm_node *f, mm_cluster *c, mm_err *err)
{
    int rc, kind = MM_FABRIC_RAIL;
    bool found;
    double net_bus, net_lat, hop = 0, over = 1;
    int64_t npl = c->nodes, spines = 0;
    if ((rc = need_pos(d, f, "allreduce_busbw_gb_s", "fabric.allreduce_busbw_gb_s", &net_bus, err)) ||
        (rc = need_pos(d, f, "latency_us", "fabric.latency_us", &net_lat, err)) ||
        (rc = mm_node_enum(d, f, "kind", "fabric.kind", fabric_names, &kind, &found, err)) ||
        (rc = mm_node_int(d, f, "nodes_per_leaf", "fabric.nodes_per_leaf", 1, 1 << 20, &npl, &found, err)) ||
        (rc = mm_node_double(d, f, "oversubscription", "fabric.oversubscription", 1.0, 1e3, &over, &found, err)) ||
        (rc = mm_node_int(d, f, "spines", "fabric.spines", 1, 1 << 16, &spines, &found, err)) ||
        (rc = mm_node_double(d, f, "hop_latency_us", "fabric.hop_latency_us", 0, 1e6, &hop, &found, err)))
        return rc;
    c->net_eff = net_bus * 1e9 / (c->nic_bw * (double)c->nics_per_node);
    if (c->net_eff > 1.0)
        return bad_key(d, f, "allreduce_busbw_gb_s", "fabric.allreduce_busbw_gb_s",
                       "bus bandwidth exceeds the line rate it runs over", err);
    c->net_latency_s = net_lat * 1e-6;
    c->fabric = kind;
    c->nodes_per_leaf = (int)npl;
    c->oversub = over;
    /* One uplink per spine; by default as many as the leaf has ports down,
     * divided by the oversubscription (a two-level Clos of equal ports). */
    if (spines == 0) {
        double down = (double)npl * (kind == MM_FABRIC_RAIL ? 1 : c->nics_per_node);
        spines = (int64_t)ceil(down / over);
    }
    c->spines = (int)spines;
    c->hop_latency_s = hop * 1e-6;
    return load_sharp(d, f, c, err);
}

/* A node group's GPU: name, peaks, HBM (no efficiency factors or tables:
 * its kernel times scale the base GPU's, see cluster.h). */
static int load_group_gpu(const mm_doc *d, mm_node *g, const char *prefix, mm_node_group *ng,
                          mm_err *err)
{
    char path[96];
    int rc;
    bool found;
    snprintf(path, sizeof path, "%s.gpu", prefix);
    if ((rc = mm_node_check_keys(d, g, path, group_gpu_keys, err)))
        return rc;
    snprintf(path, sizeof path, "%s.gpu.name", prefix);
    if ((rc = mm_node_str(d, g, "name", path, ng->gpu_name, sizeof ng->gpu_name, &found, err)))
        return rc;
    mm_node *pk = mm_node_get(g, "peak_tflops");
    snprintf(path, sizeof path, "%s.gpu.peak_tflops", prefix);
    if (!pk)
        return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(g), path, "missing required key");
    if ((rc = mm_node_check_keys(d, pk, path, peak_keys, err)))
        return rc;
    for (int i = 0; i < MM_DTYPE_COUNT; i++) {
        char kp[128];
        snprintf(kp, sizeof kp, "%s.%s", path, peak_keys[i]);
        double v = NAN;
        if ((rc = mm_node_double(d, pk, peak_keys[i], kp, 1e-6, 1e9, &v, &found, err)))
            return rc;
        ng->peak_flops[i] = found ? v * 1e12 : NAN;
    }
    if (!(ng->peak_flops[MM_DTYPE_BF16] > 0))
        return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(pk), path, "a group's GPU needs a bf16 peak");
    double gb, gbs;
    snprintf(path, sizeof path, "%s.gpu.hbm_gb", prefix);
    if ((rc = need_pos(d, g, "hbm_gb", path, &gb, err)))
        return rc;
    snprintf(path, sizeof path, "%s.gpu.hbm_gb_s", prefix);
    if ((rc = need_pos(d, g, "hbm_gb_s", path, &gbs, err)))
        return rc;
    ng->hbm_bytes = gb * 1e9;
    ng->hbm_bw = gbs * 1e9;
    ng->has_gpu = true;
    return 0;
}

/* node_groups: [{name, first, count, nic_gbit_s, gpu}], after c->nodes is
 * known.  Groups may not overlap; each must change something. */
static int load_groups(const mm_doc *d, mm_node *root, mm_cluster *c, mm_err *err)
{
    mm_node *list = mm_node_get(root, "node_groups");
    if (!list || mm_node_is_null(list))
        return 0;
    if (!mm_node_is_sequence(list))
        return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(list), "node_groups",
                          "expected a list of {name, first, count, nic_gbit_s, gpu}");
    int it = 0;
    mm_node *g;
    while ((g = mm_node_item(list, it++))) {
        char prefix[48], path[96];
        int i = c->n_groups, rc;
        bool found;
        snprintf(prefix, sizeof prefix, "node_groups[%d]", i);
        if (i == MM_NODE_GROUPS_MAX)
            return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(g), prefix, "at most %d node groups",
                              MM_NODE_GROUPS_MAX);
        if ((rc = mm_node_check_keys(d, g, prefix, group_keys, err)))
            return rc;
        mm_node_group *ng = &c->groups[i];
        memset(ng, 0, sizeof *ng);
        snprintf(ng->name, sizeof ng->name, "group%d", i);
        int64_t first = -1, count = -1;
        double gbit = 0;
        snprintf(path, sizeof path, "%s.name", prefix);
        if ((rc = mm_node_str(d, g, "name", path, ng->name, sizeof ng->name, &found, err)))
            return rc;
        snprintf(path, sizeof path, "%s.first", prefix);
        if ((rc = mm_node_int(d, g, "first", path, 0, 1 << 20, &first, &found, err)))
            return rc;
        snprintf(path, sizeof path, "%s.count", prefix);
        if ((rc = mm_node_int(d, g, "count", path, 1, 1 << 20, &count, &found, err)))
            return rc;
        if (first < 0 || count < 0) {
            snprintf(path, sizeof path, "%s.%s", prefix, first < 0 ? "first" : "count");
            return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(g), path,
                              "missing required key (a node group is nodes [first, first + count))");
        }
        if (first + count > c->nodes) {
            snprintf(path, sizeof path, "%s.count", prefix);
            return bad_key(d, g, "count", path, "the group runs past the cluster's last node", err);
        }
        for (int j = 0; j < i; j++)
            if (first < c->groups[j].first + c->groups[j].count && c->groups[j].first < first + count) {
                snprintf(path, sizeof path, "%s.first", prefix);
                return bad_key(d, g, "first", path, "node groups overlap", err);
            }
        ng->first = (int)first;
        ng->count = (int)count;
        snprintf(path, sizeof path, "%s.nic_gbit_s", prefix);
        if ((rc = mm_node_double(d, g, "nic_gbit_s", path, 1e-6, 1e9, &gbit, &found, err)))
            return rc;
        ng->nic_bw = found ? gbit * 1e9 / 8.0 : c->nic_bw;
        mm_node *gg = mm_node_get(g, "gpu");
        if (gg && (rc = load_group_gpu(d, gg, prefix, ng, err)))
            return rc;
        if (!found && !gg)
            return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(g), prefix,
                              "a node group must change nic_gbit_s or gpu");
        c->n_groups++;
    }
    return 0;
}

/* sites: {count, wan_gbps, wan_latency_ms}: `count` copies of the file's
 * cluster joined by a wide-area link (cluster.h).  All three required; a
 * single site is no WAN at all, so count is at least 2. */
static int load_sites(const mm_doc *d, mm_node *root, mm_cluster *c, mm_err *err)
{
    mm_node *s = mm_node_get(root, "sites");
    if (!s || mm_node_is_null(s))
        return 0;
    int rc;
    bool found;
    int64_t count = 0;
    double gbps, ms = -1;
    if ((rc = mm_node_check_keys(d, s, "sites", site_keys, err)) ||
        (rc = mm_node_int(d, s, "count", "sites.count", 2, 1 << 16, &count, &found, err)))
        return rc;
    if (!found)
        return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(s), "sites.count",
                          "missing required key (sites joined by the WAN, at least 2)");
    if ((rc = need_pos(d, s, "wan_gbps", "sites.wan_gbps", &gbps, err)) ||
        (rc = mm_node_double(d, s, "wan_latency_ms", "sites.wan_latency_ms", 0, 1e5, &ms, &found, err)))
        return rc;
    if (!found)
        return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(s), "sites.wan_latency_ms", "missing required key");
    c->sites = (int)count;
    c->wan_bw = gbps * 1e9 / 8.0;
    c->wan_latency_s = ms * 1e-3;
    return 0;
}

int mm_cluster_load(const char *path, int nodes, mm_cluster *c, mm_err *err)
{
    memset(c, 0, sizeof *c);
    mm_doc d;
    int rc = mm_doc_load_file(&d, path, err);
    if (rc)
        return rc;
    mm_node *root = mm_doc_root(&d), *g, *n, *f;
    bool found;
    int64_t file_nodes = 1;
    if ((rc = mm_node_check_keys(&d, root, "", top_keys, err)) ||
        (rc = mm_node_str(&d, root, "name", "name", c->name, sizeof c->name, &found, err)) ||
        (rc = mm_node_int(&d, root, "nodes", "nodes", 1, 1 << 20, &file_nodes, &found, err)) ||
        (rc = need_map(&d, root, "gpu", gpu_keys, &g, err)) ||
        (rc = load_gpu(&d, g, &c->gpu, err)) ||
        (rc = need_map(&d, root, "node", node_keys, &n, err)) ||
        (rc = load_node(&d, n, c, err)) ||
        (rc = need_map(&d, root, "fabric", fabric_keys, &f, err)))
        goto out;
    snprintf(c->source, sizeof c->source, "%s", path);
    c->nodes = nodes > 0 ? nodes : (int)file_nodes;
    if ((int64_t)c->nodes * c->gpus_per_node > MM_LIMIT_GPUS) { /* util/limits.h */
        rc = mm_err_set(err, MM_EINPUT, path, nodes > 0 ? 0 : mm_node_key_line(root, "nodes"),
                        "nodes", "%d nodes%s x %d GPUs = %lld GPUs, above the limit of %d GPUs "
                        "(docs/reliability.md)", c->nodes,
                        nodes > 0 ? " (as asked: cluster.nodes or --nodes)" : "",
                        c->gpus_per_node, (long long)c->nodes * c->gpus_per_node, MM_LIMIT_GPUS);
        goto out;
    }
    rc = load_fabric(&d, f, c, err);
    if (!rc)
        rc = load_groups(&d, root, c, err);
    if (!rc)
        rc = load_p2p(&d, n, "node", &c->p2p_intra, &c->has_p2p_intra, err);
    if (!rc)
        rc = load_p2p(&d, f, "fabric", &c->p2p_inter, &c->has_p2p_inter, err);
    if (!rc)
        rc = load_nccl_version(&d, root, c, err);
    if (!rc)
        rc = load_p2p_channels(&d, n, f, c, err);
    if (!rc)
        rc = load_sites(&d, root, c, err);
out:
    mm_doc_free(&d);
    if (rc)
        mm_cluster_free(c); /* the GPU's tables read before the error */
    return rc;
}

void mm_cluster_free(mm_cluster *c)
{
    if (c)
        mm_kernel_tables_free(&c->gpu.kernels);
}
