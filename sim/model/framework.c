/* framework.c - reading framework profiles (the frameworks/ folder) and
 * rewriting a layer's op list into the kernels that framework runs.
 * Every key of a profile is required: a profile states each choice with its
 * source instead of inheriting a silent default.
 * Not for: timing or memory (the run and memory layers use the result). */
#include "model/framework.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/layout.h"
#include "util/doc.h"

const char *const mm_fw_group_names[] = {"norm", "rope", "act", "residual", "cross_entropy", NULL};
const char *const mm_padding_names[] = {"none", "longest", "max_length", NULL};

static const char *const top_keys[] = {"name", "source", "attention", "kernels", "grad_reduce",
                                       "optimizer", "grad_bucket", "zero3", "padding",
                                       "padding_pipelined", "overlap", "grad_sync", "zero_stages", "schedules", "host",
                                       "loader", "memory", NULL};
static const char *const mem_keys[] = {"norm_extra_bytes", "rope_extra_bytes", "act_extra_bytes",
                                       "loss_bytes_per_logit", "fragmentation", "context_mib", "workspace_mib",
                                       "nccl_buffer_mib", "nccl_channels", "grad_bucket_buffers", NULL};
static const char *const z3_keys[] = {"gather", "prefetch_mparams", "max_live_mparams", "keep_gathered_under_pp",
                                      "persistence_mparams", "max_reuse_mparams", "list_collectives", NULL};
static const char *const z3_gather_names[] = {"layer", "module", NULL};
static const char *const attn_keys[] = {"default", "sm90", NULL};
static const char *const kernel_keys[] = {"norm", "rope", "act", "residual", "cross_entropy",
                                          "qkv_bias_separate", "layout_copies", "hidden_dropout", NULL};
static const char *const group_keys[] = {"kernels", "traffic", "bwd_traffic", "jit", NULL};
static const char *const copy_keys[] = {"fused", "unfused", "split_qkv", NULL};
static const char *const reduce_keys[] = {"bf16", "fp16", "fp8", NULL}; /* = train.precision names */
static const char *const dtype_names[] = {"fp32", "bf16", "fp16", NULL};
static const int dtype_size[] = {4, 2, 2};
static const char *const opt_keys[] = {"step_bytes_per_param", "grad_norm", "zero_grad_buffer", "impl", NULL};
const char *const mm_opt_impl_names[] = {"fused", "foreach", "for_loop", NULL};
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

/* zero_stages: a list of the ZeRO stages 0..3 the stack runs, 0 among
 * them, none twice. */
static int read_zero_stages(const rd *r, mm_node *root, mm_framework *fw)
{
    mm_node *z = mm_node_get(root, "zero_stages");
    if (!z)
        return need(r, root, "zero_stages", false);
    if (!mm_node_is_sequence(z) || mm_node_count(z) < 1)
        return mm_err_set(r->err, MM_EINPUT, r->d->path, mm_node_line(z), "zero_stages",
                          "expected a list of ZeRO stages (0..3), e.g. [0, 1]");
    fw->zero_stages = 0;
    for (int i = 0; i < mm_node_count(z); i++) {
        int64_t v = 0;
        int rc = mm_node_as_int(r->d, mm_node_item(z, i), "zero_stages", 0, 3, &v, r->err);
        if (rc)
            return rc;
        if (fw->zero_stages & (1u << v))
            return mm_err_set(r->err, MM_EINPUT, r->d->path, mm_node_line(mm_node_item(z, i)), "zero_stages",
                              "stage %d listed twice", (int)v);
        fw->zero_stages |= 1u << v;
    }
    if (!(fw->zero_stages & 1u))
        return mm_err_set(r->err, MM_EINPUT, r->d->path, mm_node_line(z), "zero_stages",
                          "must list stage 0 (plain data parallelism)");
    return 0;
}

/* schedules: a list of train.schedule names (mm_schedule_names), 1f1b
 * among them (the planner's pp 1 candidates and every stack run it), none
 * twice. */
static int read_schedules(const rd *r, mm_node *root, mm_framework *fw)
{
    mm_node *z = mm_node_get(root, "schedules");
    if (!z)
        return need(r, root, "schedules", false);
    if (!mm_node_is_sequence(z) || mm_node_count(z) < 1)
        return mm_err_set(r->err, MM_EINPUT, r->d->path, mm_node_line(z), "schedules",
                          "expected a list of pipeline schedules (train.schedule names), e.g. [1f1b, interleaved]");
    fw->schedules = 0;
    for (int i = 0; i < mm_node_count(z); i++) {
        int v = 0;
        int rc = mm_node_as_enum(r->d, mm_node_item(z, i), "schedules", mm_schedule_names, &v, r->err);
        if (rc)
            return rc;
        if (fw->schedules & (1u << v))
            return mm_err_set(r->err, MM_EINPUT, r->d->path, mm_node_line(mm_node_item(z, i)), "schedules",
                              "schedule %s listed twice", mm_schedule_names[v]);
        fw->schedules |= 1u << v;
    }
    if (!(fw->schedules & 2u))
        return mm_err_set(r->err, MM_EINPUT, r->d->path, mm_node_line(z), "schedules",
                          "must list 1f1b (every stack runs it; the planner's one-stage candidates take it)");
    return 0;
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
        rc = req_enum(r, o, "impl", "optimizer.impl", mm_opt_impl_names, &fw->opt_impl);
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
    /* optional (0: every parameter gathered; every one released after its
     * use): DeepSpeed's stage3_param_persistence_threshold and
     * stage3_max_reuse_distance, read under gather: module only */
    bool found = false;
    fw->z3_persist_params = fw->z3_max_reuse_params = 0;
    if (!rc)
        rc = mm_node_double(r->d, z, "persistence_mparams", "zero3.persistence_mparams", 0.0, 1e6,
                            &fw->z3_persist_params, &found, r->err);
    if (!rc)
        rc = mm_node_double(r->d, z, "max_reuse_mparams", "zero3.max_reuse_mparams", 0.0, 1e6,
                            &fw->z3_max_reuse_params, &found, r->err);
    fw->z3_list_collectives = false;
    if (!rc)
        rc = mm_node_bool(r->d, z, "list_collectives", "zero3.list_collectives", &fw->z3_list_collectives, &found,
                          r->err);
    /* the list form is DeepSpeed's, parameter by parameter: a profile that
     * gathers a whole layer at once (FSDP2) never had it */
    if (!rc && fw->z3_list_collectives && gather != 1)
        rc = mm_err_set(r->err, MM_EINPUT, r->d->path, mm_node_line(z), "zero3.list_collectives",
                        "list collectives are modeled for gather: module (DeepSpeed) only");
    fw->z3_per_module = gather == 1;
    fw->z3_prefetch_params *= 1e6;
    fw->z3_max_live_params *= 1e6;
    fw->z3_persist_params *= 1e6;
    fw->z3_max_reuse_params *= 1e6;
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
    if (!rc)
        rc = read_zero_stages(r, root, fw);
    if (!rc)
        rc = read_schedules(r, root, fw);
    return rc;
}

/* The memory section (framework.h mm_fw_memory); MiB read as bytes. */
static int read_memory(const rd *r, mm_node *root, mm_framework *fw)
{
    mm_node *m;
    mm_fw_memory *x = &fw->mem;
    int rc = section(r, root, "memory", "memory", mem_keys, &m);
    if (!rc)
        rc = req_double(r, m, "norm_extra_bytes", "memory.norm_extra_bytes", 0.0, 64.0, &x->norm_extra);
    if (!rc)
        rc = req_double(r, m, "rope_extra_bytes", "memory.rope_extra_bytes", 0.0, 64.0, &x->rope_extra);
    if (!rc)
        rc = req_double(r, m, "act_extra_bytes", "memory.act_extra_bytes", 0.0, 64.0, &x->act_extra);
    if (!rc)
        rc = req_double(r, m, "loss_bytes_per_logit", "memory.loss_bytes_per_logit", 1.0, 64.0, &x->loss_bytes);
    if (!rc)
        rc = req_double(r, m, "fragmentation", "memory.fragmentation", 0.0, 0.9, &x->fragmentation);
    if (!rc)
        rc = req_double(r, m, "context_mib", "memory.context_mib", 0.0, 65536.0, &x->context_bytes);
    if (!rc)
        rc = req_double(r, m, "workspace_mib", "memory.workspace_mib", 0.0, 65536.0, &x->workspace_bytes);
    if (!rc)
        rc = req_double(r, m, "nccl_buffer_mib", "memory.nccl_buffer_mib", 0.0, 4096.0, &x->nccl_bytes);
    if (!rc)
        rc = req_int(r, m, "nccl_channels", "memory.nccl_channels", 0, 64, &x->nccl_channels);
    if (!rc)
        rc = req_int(r, m, "grad_bucket_buffers", "memory.grad_bucket_buffers", 0, 8, &x->bucket_buffers);
    x->context_bytes *= 1048576.0;
    x->workspace_bytes *= 1048576.0;
    x->nccl_bytes *= 1048576.0;
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
    if (!rc)
        rc = read_memory(&r, root, fw);
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

int mm_framework_z3_modules(const mm_llm *m, mm_z3_module *mod)
{
    int64_t h = m->hidden, q = m->heads * m->head_dim, kv = m->kv_heads * m->head_dim, f = m->ffn;
    int64_t nb = m->rmsnorm || m->norm_no_bias ? h : 2 * h;
    int n = 0;
#define MOD(total, big) (mod[n].params = (double)(total), mod[n].largest = (double)(big), n++)
    MOD(nb, h); /* input norm */
    if (m->style == MM_LLM_GPT2 || m->style == MM_LLM_MPT) { /* a fused c_attn / Wqkv */
        MOD(h * (q + 2 * kv) + (m->qkv_bias ? q + 2 * kv : 0), h * (q + 2 * kv));
    } else {
        MOD(h * q + (m->qkv_bias ? q : 0), h * q);
        MOD(h * kv + (m->qkv_bias ? kv : 0), h * kv);
        MOD(h * kv + (m->qkv_bias ? kv : 0), h * kv);
    }
    MOD(q * h + (m->out_bias ? h : 0), q * h);
    MOD(nb, h); /* post-attention norm */
    for (int k = 0; k < (m->gated_mlp ? 2 : 1); k++)
        MOD(h * f + (m->mlp_bias ? f : 0), h * f);
    MOD(f * h + (m->mlp_bias ? h : 0), f * h);
#undef MOD
    return n;
}

/* Under DeepSpeed (per-module gathers) with full recomputation, which of
 * a layer's modules the backward gathers again: the checkpointed forward
 * runs right before the layer's backward (Megatron's and HF's
 * checkpoint per layer), fetching and releasing module by module;
 * release_sub_module keeps a parameter whose next use lies within
 * stage3_max_reuse_distance parameters of the trace
 * (PartitionedParameterCoordinator.__params_to_release walks
 * __submodule_order from the step, adding each module's numel and
 * stopping once the sum reaches the distance).  Module i's next use is
 * its own backward, after modules i+1..n forward and n..i+1 backward:
 * 2 x their parameters.  Persistent modules are never released. */
static void z3_regathers(const mm_z3_module *mod, int n, double persist, double reuse, int *count, double *params)
{
    *count = 0, *params = 0;
    for (int i = 0; i < n; i++) {
        if (mod[i].largest <= persist)
            continue;
        double later = 0;
        for (int j = i + 1; j < n; j++)
            later += mod[j].params;
        /* the walk visits module i again iff it has not reached the
         * distance before it: 2 x later < reuse */
        if (!(2 * later < reuse))
            (*count)++, *params += mod[i].params;
    }
}

/* DeepSpeed's IPG buckets under ZeRO-3, per layer in the steady state:
 * the gradients arrive module by module in backward order, and
 * __add_grad_to_ipg_bucket's caller reduce-scatters the bucket first when
 * it holds something and the next gradient would take it past
 * reduce_bucket_size (stage3.py reduce_independent_p_g_buckets_and_remove_grads:
 * `elements_in_ipg_bucket > 0 and elements + ds_numel > reduce_bucket_size`).
 * Counted over 64 layers; 1 when a bucket spans layers. */
static int z3_scatters(const mm_z3_module *mod, int n, double bucket)
{
    if (!(bucket > 0))
        return 1;
    enum { LAYERS = 64 };
    double in = 0;
    int flushes = 0;
    for (int l = 0; l < LAYERS; l++)
        for (int i = n - 1; i >= 0; i--) {
            if (in > 0 && in + mod[i].params > bucket)
                flushes++, in = 0;
            in += mod[i].params;
        }
    int per = (int)lround((double)(flushes + 1) / LAYERS);
    return per > 1 ? per : 1;
}

int mm_framework_z3_plan(const mm_framework *fw, const mm_llm *m, const mm_z3_knobs *k, bool full_recompute,
                         mm_z3_gather_plan *out)
{
    memset(out, 0, sizeof *out);
    out->gathers = out->scatters = 1;
    double layer = (double)mm_llm_layer_params(m);
    double bucket = k && k->prefetch_bucket >= 0 ? k->prefetch_bucket : fw->z3_prefetch_params;
    double live = k && k->max_live >= 0 ? k->max_live : fw->z3_max_live_params;
    double persist = k && k->persistence >= 0 ? k->persistence : fw->z3_persist_params;
    double reuse = k && k->max_reuse >= 0 ? k->max_reuse : fw->z3_max_reuse_params;
    if (fw->z3_per_module) {
        mm_z3_module mod[MM_Z3_MAX_MODULES];
        int n = mm_framework_z3_modules(m, mod);
        out->gathers = 0;
        for (int i = 0; i < n; i++)
            out->gathers += mod[i].largest > persist;
        out->scatters = z3_scatters(mod, n, fw->bucket_params);
        /* the list form reduce-scatters parameter by parameter
         * (partition_parameters.py _reduce_scatter_gradients @ c83e49f9):
         * one per gathered module, whatever the bucket */
        if (fw->z3_list_collectives)
            out->scatters = out->gathers;
        if (out->gathers == 0)
            return -1; /* every parameter persistent: no gathers to model */
        if (full_recompute && m->kv_lora <= 0) {
            z3_regathers(mod, n, persist, reuse, &out->regathers, &out->regather_share);
            out->regather_share = layer > 0 ? out->regather_share / layer : 0;
        }
        /* a bucket of 0 prefetches nothing (fetch_sub_module: `if
         * self.__prefetch_bucket_sz > 0`) */
        if (!(bucket > 0)) {
            out->prefetch = 0;
            return 0;
        }
    }
    /* DeepSpeed prefetches at most max_live - what is live now (the layer
     * computing): PartitionedParameterCoordinator.fetch_sub_module */
    double ahead = bucket;
    if (ahead > 0 && live > 0)
        ahead = fmin(ahead, live - layer);
    int d = ahead > 0 && layer > 0 ? (int)floor(ahead / layer) : 1;
    out->prefetch = d < 1 ? 1 : d > 15 ? 15 : d;
    return 0;
}

int mm_framework_z3_gathers(const mm_framework *fw, const mm_llm *m)
{
    mm_z3_gather_plan p;
    return mm_framework_z3_plan(fw, m, NULL, false, &p) ? 0 : p.gathers;
}

int mm_framework_z3_prefetch(const mm_framework *fw, const mm_llm *m)
{
    mm_z3_gather_plan p;
    return mm_framework_z3_plan(fw, m, NULL, false, &p) ? 0 : p.prefetch;
}

double mm_framework_z3_list_host_s(const mm_framework *fw, int dp)
{
    if (!fw->z3_list_collectives || dp < 2)
        return 0.0;
    return dp * (fw->host.fwd_op_s + fw->host.bwd_op_s + fw->host.launch_s);
}
