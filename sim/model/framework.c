/* framework.c - reading framework profiles (the frameworks/ folder) and
 * rewriting a layer's op list into the kernels that framework runs.
 * Every key of a profile is required: a profile states each choice with its
 * source instead of inheriting a silent default.
 * Not for: timing or memory (the run and memory layers use the result). */
#include "model/framework.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util/doc.h"

const char *const mm_fw_group_names[] = {"norm", "rope", "act", "residual", "cross_entropy", NULL};
const char *const mm_padding_names[] = {"none", "longest", "max_length", NULL};

static const char *const top_keys[] = {"name", "source", "attention", "kernels", "grad_reduce",
                                       "optimizer", "grad_bucket", "zero3", "padding",
                                       "padding_pipelined", "overlap", "grad_sync", "host",
                                       "loader", NULL};
static const char *const z3_keys[] = {"gather", "prefetch_mparams", "max_live_mparams", "keep_gathered_under_pp",
                                       NULL};
static const char *const z3_gather_names[] = {"layer", "module", NULL};
static const char *const attn_keys[] = {"default", "sm90", NULL};
static const char *const kernel_keys[] = {"norm", "rope", "act", "residual", "cross_entropy",
                                          "qkv_bias_separate", "layout_copies", "hidden_dropout", NULL};
static const char *const group_keys[] = {"kernels", "traffic", "bwd_traffic", "jit", NULL};
static const char *const copy_keys[] = {"fused", "unfused", "split_qkv", NULL};
static const char *const reduce_keys[] = {"bf16", "fp16", "fp8", NULL}; /* = train.precision names */
static const char *const dtype_names[] = {"fp32", "bf16", "fp16", NULL};
static const int dtype_size[] = {4, 2, 2};
static const char *const opt_keys[] = {"step_bytes_per_param", "grad_norm", "zero_grad_buffer", NULL};
static const char *const bucket_keys[] = {"mparams", "mparams_per_dp", NULL};
static const char *const overlap_keys[] = {"grad_reduce", "param_gather", "zero3_blocking", NULL};
static const char *const sync_keys[] = {"every_microbatch", "once_under_pp", NULL};
static const char *const sync_zero_keys[] = {"zero0", "zero1", "zero2", NULL};
static const char *const host_keys[] = {"launch_us", "forward_op_us", "backward_op_us", "module_us",
                                        "graph_launch_us", "cuda_graphs", NULL};
static const char *const graph_keys[] = {"layer", "full", NULL};
static const char *const loader_keys[] = {"name", "workers", "rates", NULL};

typedef struct rd {
    const mm_doc *d;
    mm_err *err;
} rd;

/* The mapping under `key` of `parent`, its keys checked. */
static int section(const rd *r, mm_node *parent, const char *key, const char *path,
                   const char *const *allowed, mm_node **out)
{
    *out = mm_node_get(parent, key);
    if (!*out)
        return mm_err_set(r->err, MM_EINPUT, r->d->path, mm_node_line(parent), path, "missing required key");
    return mm_node_check_keys(r->d, *out, path, allowed, r->err);
}

static int need(const rd *r, mm_node *map, const char *path, bool found)
{
    return found ? 0 : mm_err_set(r->err, MM_EINPUT, r->d->path, mm_node_line(map), path, "missing required key");
}

static int req_double(const rd *r, mm_node *map, const char *key, const char *path, double lo, double hi,
                      double *out)
{
    bool found = false;
    int rc = mm_node_double(r->d, map, key, path, lo, hi, out, &found, r->err);
    return rc ? rc : need(r, map, path, found);
}

static int req_bool(const rd *r, mm_node *map, const char *key, const char *path, bool *out)
{
    bool found = false;
    int rc = mm_node_bool(r->d, map, key, path, out, &found, r->err);
    return rc ? rc : need(r, map, path, found);
}

static int req_enum(const rd *r, mm_node *map, const char *key, const char *path,
                    const char *const *names, int *out)
{
    bool found = false;
    int rc = mm_node_enum(r->d, map, key, path, names, out, &found, r->err);
    return rc ? rc : need(r, map, path, found);
}

static int req_int(const rd *r, mm_node *map, const char *key, const char *path, int lo, int hi, int *out)
{
    bool found = false;
    int64_t v = 0;
    int rc = mm_node_int(r->d, map, key, path, lo, hi, &v, &found, r->err);
    if (!rc)
        rc = need(r, map, path, found);
    *out = (int)v;
    return rc;
}

static int read_attention(const rd *r, mm_node *root, mm_framework *fw)
{
    mm_node *a;
    int rc = section(r, root, "attention", "attention", attn_keys, &a);
    int v = 0, w = 0;
    /* "flash" (the topology's generic table) is not a framework's choice:
     * a framework runs one named kernel */
    if (!rc)
        rc = req_enum(r, a, "default", "attention.default", mm_attn_impl_names, &v);
    if (!rc)
        rc = req_enum(r, a, "sm90", "attention.sm90", mm_attn_impl_names, &w);
    if (!rc && (v == MM_ATTN_IMPL_FLASH || w == MM_ATTN_IMPL_FLASH))
        rc = mm_err_set(r->err, MM_EINPUT, r->d->path, mm_node_line(a), v ? "attention.sm90" : "attention.default",
                        "name the kernel (flash1, flash2, flash3, cudnn or unfused), not the generic 'flash'");
    fw->attn = (mm_attn_impl)v;
    fw->attn_sm90 = (mm_attn_impl)w;
    return rc;
}

static int read_kernels(const rd *r, mm_node *root, mm_framework *fw)
{
    mm_node *k, *g, *c;
    int rc = section(r, root, "kernels", "kernels", kernel_keys, &k);
    char path[64];
    for (int i = 0; !rc && i < MM_FW_GROUPS; i++) {
        snprintf(path, sizeof path, "kernels.%s", mm_fw_group_names[i]);
        rc = section(r, k, mm_fw_group_names[i], path, group_keys, &g);
        snprintf(path, sizeof path, "kernels.%s.kernels", mm_fw_group_names[i]);
        if (!rc)
            rc = req_int(r, g, "kernels", path, 1, 64, &fw->group[i].kernels);
        snprintf(path, sizeof path, "kernels.%s.traffic", mm_fw_group_names[i]);
        if (!rc)
            rc = req_double(r, g, "traffic", path, 0.1, 100.0, &fw->group[i].traffic);
        /* optional: absent (0) keeps the generic backward, twice the
         * forward's bytes (llm.h, mm_op_pass) */
        snprintf(path, sizeof path, "kernels.%s.bwd_traffic", mm_fw_group_names[i]);
        fw->group[i].bwd_traffic = 0.0;
        if (!rc)
            rc = mm_node_double(r->d, g, "bwd_traffic", path, 0.1, 100.0, &fw->group[i].bwd_traffic, NULL,
                                r->err);
        snprintf(path, sizeof path, "kernels.%s.jit", mm_fw_group_names[i]);
        fw->group[i].jit = false;
        if (!rc)
            rc = mm_node_bool(r->d, g, "jit", path, &fw->group[i].jit, NULL, r->err);
    }
    if (!rc)
        rc = req_bool(r, k, "qkv_bias_separate", "kernels.qkv_bias_separate", &fw->qkv_bias_separate);
    if (!rc)
        rc = section(r, k, "layout_copies", "kernels.layout_copies", copy_keys, &c);
    if (!rc)
        rc = req_int(r, c, "fused", "kernels.layout_copies.fused", 0, 16, &fw->layout_copies_fused);
    if (!rc)
        rc = req_int(r, c, "unfused", "kernels.layout_copies.unfused", 0, 16, &fw->layout_copies_unfused);
    fw->split_qkv = false; /* optional: absent keeps the generic backward */
    if (!rc)
        rc = mm_node_bool(r->d, c, "split_qkv", "kernels.layout_copies.split_qkv", &fw->split_qkv, NULL, r->err);
    if (!rc)
        rc = req_double(r, k, "hidden_dropout", "kernels.hidden_dropout", 0.0, 0.999, &fw->hidden_dropout);
    return rc;
}

/* The host section: microseconds per call, read as seconds. */
static int read_host(const rd *r, mm_node *root, mm_framework *fw)
{
    mm_node *h, *g;
    int rc = section(r, root, "host", "host", host_keys, &h);
    double us[5] = {0};
    static const char *const names[] = {"launch_us", "forward_op_us", "backward_op_us", "graph_launch_us",
                                        "module_us"};
    char path[64];
    for (int i = 0; !rc && i < 5; i++) {
        snprintf(path, sizeof path, "host.%s", names[i]);
        rc = req_double(r, h, names[i], path, 0.0, 1e4, &us[i]);
    }
    fw->host.launch_s = us[0] * 1e-6;
    fw->host.fwd_op_s = us[1] * 1e-6;
    fw->host.bwd_op_s = us[2] * 1e-6;
    fw->host.graph_launch_s = us[3] * 1e-6;
    fw->host.module_s = us[4] * 1e-6;
    if (!rc)
        rc = section(r, h, "cuda_graphs", "host.cuda_graphs", graph_keys, &g);
    if (!rc)
        rc = req_bool(r, g, "layer", "host.cuda_graphs.layer", &fw->host.graphs_layer);
    if (!rc)
        rc = req_bool(r, g, "full", "host.cuda_graphs.full", &fw->host.graphs_full);
    return rc;
}

/* The optional loader section: which data loader the framework's training
 * scripts build, its default worker count and its rates file (relative to
 * the profile; absent: PyTorch's DataLoader defaults, num_workers 0, and
 * loader-rates.yaml beside the profile). */
static int read_loader(const rd *r, mm_node *root, mm_framework *fw)
{
    snprintf(fw->loader, sizeof fw->loader, "pytorch-dataloader");
    snprintf(fw->loader_rates, sizeof fw->loader_rates, "loader-rates.yaml");
    fw->loader_workers = 0;
    if (!mm_node_get(root, "loader"))
        return 0;
    mm_node *l;
    bool found = false;
    int rc = section(r, root, "loader", "loader", loader_keys, &l);
    if (!rc)
        rc = mm_node_str(r->d, l, "name", "loader.name", fw->loader, sizeof fw->loader, &found, r->err);
    if (!rc)
        rc = need(r, l, "loader.name", found && fw->loader[0]);
    if (!rc)
        rc = req_int(r, l, "workers", "loader.workers", 0, 4096, &fw->loader_workers);
    if (!rc)
        rc = mm_node_str(r->d, l, "rates", "loader.rates", fw->loader_rates, sizeof fw->loader_rates, &found, r->err);
    return rc;
}

static int read_rest(const rd *r, mm_node *root, mm_framework *fw)
{
    mm_node *g, *o, *b;
    int rc = section(r, root, "grad_reduce", "grad_reduce", reduce_keys, &g);
    char path[64];
    for (int i = 0; !rc && reduce_keys[i]; i++) {
        int v = 0;
        snprintf(path, sizeof path, "grad_reduce.%s", reduce_keys[i]);
        rc = req_enum(r, g, reduce_keys[i], path, dtype_names, &v);
        fw->grad_reduce_bytes[i] = dtype_size[v];
    }
    if (!rc)
        rc = section(r, root, "optimizer", "optimizer", opt_keys, &o);
    if (!rc)
        rc = req_double(r, o, "step_bytes_per_param", "optimizer.step_bytes_per_param", 1.0, 1000.0,
                        &fw->step_bytes_per_param);
    if (!rc)
        rc = req_bool(r, o, "grad_norm", "optimizer.grad_norm", &fw->grad_norm);
    if (!rc)
        rc = req_bool(r, o, "zero_grad_buffer", "optimizer.zero_grad_buffer", &fw->zero_grad_buffer);
    if (!rc)
        rc = section(r, root, "grad_bucket", "grad_bucket", bucket_keys, &b);
    if (!rc)
        rc = req_double(r, b, "mparams", "grad_bucket.mparams", 0.0, 1e6, &fw->bucket_params);
    if (!rc)
        rc = req_double(r, b, "mparams_per_dp", "grad_bucket.mparams_per_dp", 0.0, 1e6, &fw->bucket_per_dp);
    fw->bucket_params *= 1e6;
    fw->bucket_per_dp *= 1e6;
    mm_node *z;
    int gather = 0;
    if (!rc)
        rc = section(r, root, "zero3", "zero3", z3_keys, &z);
    if (!rc)
        rc = req_enum(r, z, "gather", "zero3.gather", z3_gather_names, &gather);
    if (!rc)
        rc = req_double(r, z, "prefetch_mparams", "zero3.prefetch_mparams", 0.0, 1e6, &fw->z3_prefetch_params);
    if (!rc)
        rc = req_double(r, z, "max_live_mparams", "zero3.max_live_mparams", 0.0, 1e6, &fw->z3_max_live_params);
    if (!rc)
        rc = req_bool(r, z, "keep_gathered_under_pp", "zero3.keep_gathered_under_pp", &fw->z3_keep_under_pp);
    fw->z3_per_module = gather == 1;
    fw->z3_prefetch_params *= 1e6;
    fw->z3_max_live_params *= 1e6;
    int pad = 0;
    if (!rc)
        rc = req_enum(r, root, "padding", "padding", mm_padding_names, &pad);
    fw->padding = (mm_padding)pad;
    if (!rc)
        rc = req_enum(r, root, "padding_pipelined", "padding_pipelined", mm_padding_names, &pad);
    fw->padding_pipelined = (mm_padding)pad;
    mm_node *ov;
    if (!rc)
        rc = section(r, root, "overlap", "overlap", overlap_keys, &ov);
    if (!rc)
        rc = req_bool(r, ov, "grad_reduce", "overlap.grad_reduce", &fw->overlap_grad_reduce);
    if (!rc)
        rc = req_bool(r, ov, "param_gather", "overlap.param_gather", &fw->overlap_param_gather);
    if (!rc)
        rc = req_bool(r, ov, "zero3_blocking", "overlap.zero3_blocking", &fw->zero3_blocking);
    mm_node *gs, *em;
    if (!rc)
        rc = section(r, root, "grad_sync", "grad_sync", sync_keys, &gs);
    if (!rc)
        rc = section(r, gs, "every_microbatch", "grad_sync.every_microbatch", sync_zero_keys, &em);
    for (int st = 0; !rc && sync_zero_keys[st]; st++) {
        snprintf(path, sizeof path, "grad_sync.every_microbatch.%s", sync_zero_keys[st]);
        rc = req_bool(r, em, sync_zero_keys[st], path, &fw->every_microbatch[st]);
    }
    if (!rc)
        rc = req_bool(r, gs, "once_under_pp", "grad_sync.once_under_pp", &fw->once_under_pp);
    return rc;
}

int mm_framework_load(const char *path, mm_framework *fw, mm_err *err)
{
    memset(fw, 0, sizeof *fw);
    mm_doc d;
    int rc = mm_doc_load_file(&d, path, err);
    if (rc)
        return rc;
    rd r = {&d, err};
    mm_node *root = mm_doc_root(&d);
    bool found = false;
    char src[1024];
    rc = mm_node_check_keys(&d, root, "", top_keys, err);
    if (!rc)
        rc = mm_node_str(&d, root, "name", "name", fw->name, sizeof fw->name, &found, err);
    if (!rc)
        rc = need(&r, root, "name", found);
    if (!rc)
        rc = mm_node_str(&d, root, "source", "source", src, sizeof src, &found, err);
    if (!rc)
        rc = need(&r, root, "source", found && src[0]);
    if (!rc)
        rc = read_attention(&r, root, fw);
    if (!rc)
        rc = read_kernels(&r, root, fw);
    if (!rc)
        rc = read_rest(&r, root, fw);
    if (!rc)
        rc = read_host(&r, root, fw);
    if (!rc)
        rc = read_loader(&r, root, fw);
    snprintf(fw->source, sizeof fw->source, "%s", path);
    mm_doc_free(&d);
    return rc;
}

mm_attn_impl mm_framework_attention(const mm_framework *fw, double compute_capability)
{
    return compute_capability >= 9.0 ? fw->attn_sm90 : fw->attn;
}

void mm_framework_overlap(const mm_framework *fw, int zero, bool *grad_reduce, bool *param_gather)
{
    *grad_reduce = zero >= 3 || fw->overlap_grad_reduce;
    *param_gather = zero >= 1 && zero <= 2 && fw->overlap_param_gather;
}

bool mm_framework_z3_keep_gathered(const mm_framework *fw, int zero, int pp)
{
    return zero >= 3 && pp > 1 && fw->z3_keep_under_pp;
}

bool mm_framework_grad_every_microbatch(const mm_framework *fw, int zero, int pp)
{
    if (zero >= 3)
        return true;
    return zero >= 0 && fw->every_microbatch[zero] && !(pp > 1 && fw->once_under_pp);
}

int mm_framework_grad_bytes(const mm_framework *fw, mm_dtype precision)
{
    return precision >= 0 && precision < MM_DTYPE_COUNT ? fw->grad_reduce_bytes[precision] : 2;
}

int mm_framework_z3_gathers(const mm_framework *fw, const mm_llm *m)
{
    if (!fw->z3_per_module)
        return 1;
    int qkv = m->style == MM_LLM_GPT2 || m->style == MM_LLM_MPT ? 1 : 3; /* a fused c_attn / Wqkv */
    return 2 + qkv + 1 + (m->gated_mlp ? 3 : 2);
}

int mm_framework_z3_prefetch(const mm_framework *fw, const mm_llm *m)
{
    double layer = (double)mm_llm_layer_params(m), ahead = fw->z3_prefetch_params;
    /* DeepSpeed prefetches at most max_live - what is live now (the layer
     * computing): PartitionedParameterCoordinator.fetch_sub_module */
    if (ahead > 0 && fw->z3_max_live_params > 0)
        ahead = fmin(ahead, fw->z3_max_live_params - layer);
    int d = ahead > 0 && layer > 0 ? (int)floor(ahead / layer) : 1;
    return d < 1 ? 1 : d > 15 ? 15 : d;
}
