/* cluster.c - reading a topology YAML file into an mm_cluster.
 * Units in the file are the ones vendors print (TFLOP/s, GB, GB/s, Gbit/s,
 * microseconds); they are converted to SI here and nowhere else. */
#include "hw/cluster.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util/doc.h"

static const char *const top_keys[] = {"name", "gpu", "node", "fabric", "nodes", "source", NULL};
static const char *const gpu_keys[] = {"name", "peak_tflops", "hbm_gb", "hbm_gb_s",
                                       "gemm_efficiency", "attention_efficiency",
                                       "memory_efficiency", "kernel_overhead_us", NULL};
static const char *const peak_keys[] = {"bf16", "fp16", "fp8", NULL};
static const char *const node_keys[] = {"gpus", "nvlink_gb_s", "nvlink_allreduce_busbw_gb_s",
                                        "nvlink_latency_us", "nics", "nic_gbit_s", NULL};
static const char *const fabric_keys[] = {"allreduce_busbw_gb_s", "latency_us", NULL};

/* A required positive number. */
static int need_pos(const mm_doc *d, struct fy_node *map, const char *key,
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

static int need_map(const mm_doc *d, struct fy_node *parent, const char *key,
                    const char *const *allowed, struct fy_node **out, mm_err *err)
{
    *out = mm_node_get(parent, key);
    if (!*out)
        return mm_err_set(err, MM_EINPUT, d->path, mm_node_line(parent), key,
                          "missing required section");
    return mm_node_check_keys(d, *out, key, allowed, err);
}

static int load_gpu(const mm_doc *d, struct fy_node *g, mm_gpu_spec *gpu, mm_err *err)
{
    int rc;
    bool found;
    if ((rc = mm_node_str(d, g, "name", "gpu.name", gpu->name, sizeof gpu->name, &found, err)))
        return rc;
    struct fy_node *pk = mm_node_get(g, "peak_tflops");
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
    return 0;
}

int mm_cluster_load(const char *path, int nodes, mm_cluster *c, mm_err *err)
{
    memset(c, 0, sizeof *c);
    mm_doc d;
    int rc = mm_doc_load_file(&d, path, err);
    if (rc)
        return rc;
    struct fy_node *root = mm_doc_root(&d), *g, *n, *f;
    bool found;
    double nvl, nvl_bus, nvl_lat, nic_gbit, net_bus, net_lat;
    int64_t gpn = 0, nics = 0, file_nodes = 1;
    if ((rc = mm_node_check_keys(&d, root, "", top_keys, err)) ||
        (rc = mm_node_str(&d, root, "name", "name", c->name, sizeof c->name, &found, err)) ||
        (rc = mm_node_int(&d, root, "nodes", "nodes", 1, 1 << 20, &file_nodes, &found, err)) ||
        (rc = need_map(&d, root, "gpu", gpu_keys, &g, err)) ||
        (rc = load_gpu(&d, g, &c->gpu, err)) ||
        (rc = need_map(&d, root, "node", node_keys, &n, err)) ||
        (rc = mm_node_int(&d, n, "gpus", "node.gpus", 1, 4096, &gpn, &found, err)) ||
        (rc = need_pos(&d, n, "nvlink_gb_s", "node.nvlink_gb_s", &nvl, err)) ||
        (rc = need_pos(&d, n, "nvlink_allreduce_busbw_gb_s", "node.nvlink_allreduce_busbw_gb_s", &nvl_bus, err)) ||
        (rc = need_pos(&d, n, "nvlink_latency_us", "node.nvlink_latency_us", &nvl_lat, err)) ||
        (rc = mm_node_int(&d, n, "nics", "node.nics", 1, 4096, &nics, &found, err)) ||
        (rc = need_pos(&d, n, "nic_gbit_s", "node.nic_gbit_s", &nic_gbit, err)) ||
        (rc = need_map(&d, root, "fabric", fabric_keys, &f, err)) ||
        (rc = need_pos(&d, f, "allreduce_busbw_gb_s", "fabric.allreduce_busbw_gb_s", &net_bus, err)) ||
        (rc = need_pos(&d, f, "latency_us", "fabric.latency_us", &net_lat, err)))
        goto out;
    if (gpn == 0 || nics == 0) {
        rc = mm_err_set(err, MM_EINPUT, d.path, mm_node_line(n), gpn ? "node.nics" : "node.gpus",
                        "missing required key");
        goto out;
    }
    snprintf(c->source, sizeof c->source, "%s", path);
    c->nodes = nodes > 0 ? nodes : (int)file_nodes;
    c->gpus_per_node = (int)gpn;
    c->nvlink_bw = nvl * 1e9;
    c->nvlink_eff = nvl_bus / nvl;
    c->nvlink_latency_s = nvl_lat * 1e-6;
    c->nics_per_node = (int)nics;
    c->nic_bw = nic_gbit * 1e9 / 8.0;
    c->net_eff = net_bus * 1e9 / (c->nic_bw * (double)nics);
    c->net_latency_s = net_lat * 1e-6;
    if (c->nvlink_eff > 1.0 || c->net_eff > 1.0) {
        rc = mm_err_set(err, MM_EINPUT, d.path, mm_node_line(c->nvlink_eff > 1.0 ? n : f),
                        c->nvlink_eff > 1.0 ? "node.nvlink_allreduce_busbw_gb_s"
                                            : "fabric.allreduce_busbw_gb_s",
                        "bus bandwidth exceeds the line rate it runs over");
        goto out;
    }
out:
    mm_doc_free(&d);
    return rc;
}
