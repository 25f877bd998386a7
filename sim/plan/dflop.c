/* dflop.c - DFLOP's profiler tables from the cost bridge (dflop.h says
 * what each file holds and where DFLOP defines it).  Each table row is one
 * layout of the user's scenario: the scenario loaded with its overrides and
 * then ours (TP, one stage, one micro-batch, no ZeRO, the module cut to
 * DFLOP's depth), priced by the same functions `mmsim run` prices it with.
 * Not for: reading DFLOP's files back (tests/test_dflop.c does, as DFLOP's
 * optimizer does) or choosing a layout (planner.h). */
#include "plan/dflop.h"

#include <errno.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cost/breakdown.h"
#include "cost/cost_internal.h"
#include "cost/costs.h"
#include "scenario/loader.h"
#include "scenario/scenario.h"
#include "scenario/sim.h"

const int mm_dflop_tp[MM_DFLOP_N_TP] = {1, 2, 4, 8};
const int mm_dflop_images[MM_DFLOP_N_IMAGES] = {1, 2, 4, 8, 16, 32, 64};
const int mm_dflop_seq[MM_DFLOP_N_SEQ] = {1024, 2048, 4096, 8192};
const int mm_dflop_vision_mem_layers[MM_DFLOP_N_MEM_LAYERS] = {4, 8};
const int mm_dflop_llm_mem_layers[MM_DFLOP_N_MEM_LAYERS] = {3, 4};

/* ---- one layout of the scenario ---------------------------------------- */

/* A profiled layout: the scenario it was loaded from (the sim borrows its
 * strings) and the prepared sim. */
typedef struct point {
    mm_scenario sc;
    mm_sim sim;
    bool have_sc, have_sim;
} point;

static void point_free(point *pt)
{
    if (pt->have_sim)
        mm_sim_free(&pt->sim);
    if (pt->have_sc)
        mm_scenario_free(&pt->sc);
    memset(pt, 0, sizeof *pt);
}

enum { N_OURS = 24, SET_LEN = 96 };

/* The scenario with the user's overrides, then ours: the LLM at tensor
 * parallelism tp (vision: tp 1) over one node's gpn GPUs in DP replicas of
 * one micro-batch each, one pipeline stage, no ZeRO; the vision encoder
 * (vision true) colocated at tp, fed one tile per sample; the LLM's or the
 * encoder's depth set to `layers` (0: the model's).  Every override goes
 * through the scenario's own reader, so nothing is set that `--set` could
 * not set, except the depth, which DFLOP's profiler sets in the model
 * (num_hidden_layers) and we in the loaded model before the layout is
 * checked. */
static int point_open(const char *scenario, const char *const *sets, int n_sets, int tp, int gpn, int seq,
                      bool vision, int layers, point *pt, mm_err *err)
{
    memset(pt, 0, sizeof *pt);
    char ours[N_OURS][SET_LEN];
    int n = 0, ltp = vision ? 1 : tp;
    snprintf(ours[n++], SET_LEN, "cluster.nodes=1");
    snprintf(ours[n++], SET_LEN, "parallel.llm.tp=%d", ltp);
    snprintf(ours[n++], SET_LEN, "parallel.llm.dp=%d", gpn / ltp);
    snprintf(ours[n++], SET_LEN, "parallel.llm.pp=1");
    snprintf(ours[n++], SET_LEN, "parallel.llm.cp=1");
    snprintf(ours[n++], SET_LEN, "parallel.llm.vpp=1");
    snprintf(ours[n++], SET_LEN, "parallel.llm.ep=1");
    snprintf(ours[n++], SET_LEN, "parallel.llm.layers_per_stage=[]");
    snprintf(ours[n++], SET_LEN, "parallel.llm.zero=0");
    snprintf(ours[n++], SET_LEN, "train.zero=0");
    snprintf(ours[n++], SET_LEN, "train.schedule=1f1b");
    snprintf(ours[n++], SET_LEN, "train.micro_batch=1");
    snprintf(ours[n++], SET_LEN, "train.global_batch=%d", gpn / ltp);
    snprintf(ours[n++], SET_LEN, "train.seq_len=%d", seq);
    if (vision) {
        snprintf(ours[n++], SET_LEN, "workload={kind: fixed, images: 1, tiles: 1, text_tokens: 1}");
        snprintf(ours[n++], SET_LEN, "parallel.placement=colocated");
        snprintf(ours[n++], SET_LEN, "parallel.vision.tp=%d", tp);
        snprintf(ours[n++], SET_LEN, "parallel.vision.pp=1");
        snprintf(ours[n++], SET_LEN, "parallel.vision.dp=%d", gpn / tp);
        snprintf(ours[n++], SET_LEN, "parallel.vision.zero=0");
    } else {
        snprintf(ours[n++], SET_LEN, "workload=text");
    }
    const char **all = malloc(((size_t)n_sets + N_OURS) * sizeof *all);
    if (!all)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    for (int i = 0; i < n_sets; i++)
        all[i] = sets[i];
    for (int i = 0; i < n; i++)
        all[n_sets + i] = ours[i];
    int rc = mm_scenario_load(&pt->sc, scenario, all, n_sets + n, err);
    free(all);
    if (rc)
        return rc;
    pt->have_sc = true;
    if ((rc = mm_sim_load(&pt->sim, &pt->sc, err)))
        return rc;
    pt->have_sim = true;
    mm_model *m = pt->sim.model;
    if (layers > 0 && vision) {
        m->vision.layers = layers;
        if (m->vision.full_layers > layers)
            m->vision.full_layers = layers;
    } else if (layers > 0) {
        m->llm.layers = layers;
    }
    if ((rc = mm_sim_relayout(&pt->sim, err)) == 0 && vision && pt->sim.n_enc < 1)
        rc = mm_err_set(err, MM_EINTERNAL, "", 0, "", "the vision encoder got no work");
    return rc;
}

/* ---- the rows ------------------------------------------------------------ */

/* The LLM at tp with `layers` layers on one sequence of seq tokens: its
 * stage's forward and backward (mm_sim_stage_times), the same with the
 * attention kernels taken out (their share in the cost bridge's breakdown:
 * forward, input- and weight-gradient passes, and what recomputation runs
 * of them again), and whether it fits. */
static int llm_thr(const point *pt, int seq, int tp, int layers, mm_dflop_thr *full, mm_dflop_thr *skip, bool *fits,
                   mm_err *err)
{
    mm_sim_costs c;
    int rc = mm_sim_stage_times(&pt->sim, &c, err);
    if (rc)
        return rc;
    double f = c.stages[0].fwd_s, b = c.stages[0].bwd_s;
    mm_sim_costs_free(&c);
    mm_sim_breakdown *bk = calloc(1, sizeof *bk);
    if (!bk)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    if ((rc = mm_sim_get_breakdown(&pt->sim, bk, err))) {
        free(bk);
        return rc;
    }
    const mm_pass_breakdown *l = &bk->layer;
    double re = bk->recompute_s > 0 ? fmin(bk->recompute_s, l->s[MM_OP_F][MM_BK_ATTN]) : 0.0;
    double af = layers * l->s[MM_OP_F][MM_BK_ATTN];
    double ab = layers * (l->s[MM_OP_B][MM_BK_ATTN] + l->s[MM_OP_W][MM_BK_ATTN] + re);
    free(bk);
    *full = (mm_dflop_thr){seq, layers, tp, (f + b) * 1e3, f * 1e3, b * 1e3};
    *skip = (mm_dflop_thr){seq, layers, tp, (f - af + b - ab) * 1e3, (f - af) * 1e3, (b - ab) * 1e3};
    mm_sim_memory m;
    if ((rc = mm_sim_stage_memory(&pt->sim, &m, err)))
        return rc;
    *fits = !m.oom;
    mm_sim_memory_free(&m);
    return 0;
}

/* The LLM's memory by kind on its one stage. */
static int llm_mem(const point *pt, int seq, int tp, int layers, mm_dflop_mem *row, mm_err *err)
{
    mm_mem_rank r;
    if (mm_sim_llm_stage_rank(&pt->sim, 0, &r))
        return mm_err_set(err, MM_EINPUT, pt->sim.model_path, 0, "model", "outside the memory model");
    *row = (mm_dflop_mem){1, seq, layers, tp, (r.weights + r.optimizer) / MM_GIB,
                          (r.activations + r.transient) / MM_GIB, r.total / MM_GIB};
    return 0;
}

/* The vision encoder's memory by kind for `images` tiles on one GPU of its
 * TP group, one micro-batch in flight, one replica. */
static int vision_rank(const point *pt, double images, mm_mem_rank *r, mm_err *err)
{
    mm_enc_spec es = {0};
    mm_sim_enc_layout(&pt->sim, 0, &es);
    es.dp = 1;
    if (mm_sim_enc_rank_memory(&pt->sim, 0, &es, images, 1, r))
        return mm_err_set(err, MM_EINPUT, pt->sim.model_path, 0, "model", "encoder outside the memory model");
    return 0;
}

static double cap_bytes(const point *pt)
{
    return pt->sim.cluster->gpu.hbm_bytes - pt->sim.sc.train.memory_reserve_gib * MM_GIB;
}

/* ---- the profile --------------------------------------------------------- */

/* DFLOP's data analysis from the scenario's workload (dflop.h): a
 * workload file drawn as `mmsim run` draws its first iteration's batch
 * (the scenario's seed), or the fixed sample every time; nothing for a
 * text workload or a model whose encoder gets no work. */
static int data_analysis(const mm_sim *sim, mm_dflop_profile *p, mm_err *err)
{
    const int n = MM_DFLOP_SAMPLES;
    bool vision = false;
    for (int i = 0; i < sim->n_enc; i++)
        vision |= !strcmp(sim->enc[i].name, "vision");
    if (!sim->wl && !vision)
        return 0;
    p->image_batch = malloc((size_t)n * sizeof *p->image_batch);
    p->llm_input_seq = malloc((size_t)n * sizeof *p->llm_input_seq);
    mm_sample *s = sim->wl ? malloc((size_t)n * sizeof *s) : NULL;
    int rc = 0;
    if (!p->image_batch || !p->llm_input_seq || (sim->wl && !s))
        rc = mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    else if (sim->wl)
        rc = mm_workload_draw(sim->wl, (uint64_t)sim->sc.seed, 0, n, s, err);
    for (int i = 0; rc == 0 && i < n; i++) {
        if (s) {
            p->image_batch[i] = s[i].tiles + s[i].frames;
            p->llm_input_seq[i] = (int)mm_sample_llm_tokens(&s[i], &sim->tm);
        } else {
            p->image_batch[i] = (int)sim->enc[0].inputs_per_sample;
            p->llm_input_seq[i] = (int)sim->seq;
        }
    }
    free(s);
    if (rc == 0)
        p->n_samples = n;
    return rc;
}

void mm_dflop_profile_free(mm_dflop_profile *p)
{
    free(p->image_batch);
    free(p->llm_input_seq);
    p->image_batch = p->llm_input_seq = NULL;
    p->n_samples = 0;
}

/* The model's facts that decide what is profiled, from the scenario as the
 * user gave it (on one node). */
static int base_facts(const char *scenario, const char *const *sets, int n_sets, int *gpn, int *llm_heads,
                      int *vis_heads, mm_dflop_profile *p, mm_err *err)
{
    mm_scenario sc;
    const char **all = malloc(((size_t)n_sets + 1) * sizeof *all);
    if (!all)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    for (int i = 0; i < n_sets; i++)
        all[i] = sets[i];
    all[n_sets] = "cluster.nodes=1";
    int rc = mm_scenario_load(&sc, scenario, all, n_sets + 1, err);
    free(all);
    if (rc)
        return rc;
    mm_sim sim;
    if ((rc = mm_sim_load(&sim, &sc, err))) {
        mm_scenario_free(&sc);
        return rc;
    }
    const mm_model *m = sim.model;
    if (!m->has_vision)
        rc = mm_scenario_fail(&sc, err, "model",
                              "'%s' has no vision encoder: DFLOP's profile and optimizer "
                              "(data_aware_optimizer.py) need a vision module and an LLM", m->name);
    else if (m->llm.experts > 0)
        rc = mm_scenario_fail(&sc, err, "model",
                              "'%s' has an MoE LLM: DFLOP's optimizer prices a dense LLM "
                              "(prof_utils.py llm_module_flops); not written", m->name);
    *gpn = sim.cluster->gpus_per_node;
    *llm_heads = (int)m->llm.heads;
    *vis_heads = (int)m->vision.heads;
    if (rc == 0 && (rc = mm_sim_check_workload(&sim, err)) == 0)
        rc = data_analysis(&sim, p, err);
    mm_sim_free(&sim);
    mm_scenario_free(&sc);
    return rc;
}

/* A TP degree DFLOP profiles here: it divides the module's heads (DFLOP's
 * profiler skips it otherwise) and fits one node of the topology
 * (torchrun --nproc-per-node=tp). */
static bool tp_ok(int tp, int heads, int gpn)
{
    return heads % tp == 0 && tp <= gpn && gpn % tp == 0;
}

int mm_dflop_profile_make(const char *scenario, const char *const *sets, int n_sets, mm_dflop_profile *p,
                          mm_err *err)
{
    memset(p, 0, sizeof *p);
    int gpn = 0, lh = 0, vh = 0;
    int rc = base_facts(scenario, sets, n_sets, &gpn, &lh, &vh, p, err);
    point pt;
    for (int t = 0; rc == 0 && t < MM_DFLOP_N_TP; t++) {
        int tp = mm_dflop_tp[t];
        if (tp_ok(tp, lh, gpn)) {
            for (int s = 0; rc == 0 && s < MM_DFLOP_N_SEQ; s++) {
                bool fits = true;
                rc = point_open(scenario, sets, n_sets, tp, gpn, mm_dflop_seq[s], false, MM_DFLOP_LLM_THR_LAYERS,
                                &pt, err);
                if (rc == 0)
                    rc = llm_thr(&pt, mm_dflop_seq[s], tp, MM_DFLOP_LLM_THR_LAYERS, &p->lthr[p->n_lthr],
                                 &p->lskip[p->n_lthr], &fits, err);
                point_free(&pt);
                if (rc || !fits)
                    break; /* DFLOP's profiler stops at the out-of-memory error */
                p->n_lthr++;
            }
            for (int k = 0; rc == 0 && k < MM_DFLOP_N_MEM_LAYERS; k++) {
                int L = mm_dflop_llm_mem_layers[k];
                rc = point_open(scenario, sets, n_sets, tp, gpn, MM_DFLOP_LLM_MEM_SEQ, false, L, &pt, err);
                if (rc == 0 && (rc = llm_mem(&pt, MM_DFLOP_LLM_MEM_SEQ, tp, L, &p->lmem[p->n_lmem], err)) == 0)
                    p->n_lmem++;
                point_free(&pt);
            }
        }
        if (rc || !tp_ok(tp, vh, gpn))
            continue;
        for (int b = 0; rc == 0 && b < MM_DFLOP_N_IMAGES; b++) {
            int B = mm_dflop_images[b];
            rc = point_open(scenario, sets, n_sets, tp, gpn, MM_DFLOP_LLM_MEM_SEQ, true, MM_DFLOP_VISION_THR_LAYERS,
                            &pt, err);
            mm_enc_mb_cost c;
            double params;
            mm_mem_rank r;
            if (rc == 0 && mm_sim_enc_mb_cost(&pt.sim, &pt.sim.enc[0], B, tp, &c, &params))
                rc = mm_err_set(err, MM_EINTERNAL, pt.sim.model_path, 0, "", "cannot derive the encoder's op costs");
            if (rc == 0)
                rc = vision_rank(&pt, B, &r, err);
            bool fits = rc == 0 && r.total <= cap_bytes(&pt);
            point_free(&pt);
            if (rc || !fits)
                break;
            p->vthr[p->n_vthr++] = (mm_dflop_thr){B, MM_DFLOP_VISION_THR_LAYERS, tp, (c.fwd_s + c.bwd_s) * 1e3,
                                                  c.fwd_s * 1e3, c.bwd_s * 1e3};
        }
        for (int k = 0; rc == 0 && k < MM_DFLOP_N_MEM_LAYERS; k++) {
            int L = mm_dflop_vision_mem_layers[k];
            rc = point_open(scenario, sets, n_sets, tp, gpn, MM_DFLOP_LLM_MEM_SEQ, true, L, &pt, err);
            mm_mem_rank r;
            if (rc == 0 && (rc = vision_rank(&pt, MM_DFLOP_VISION_MEM_IMAGES, &r, err)) == 0)
                p->vmem[p->n_vmem++] = (mm_dflop_mem){MM_DFLOP_VISION_MEM_IMAGES, 0, L, tp,
                                                      (r.weights + r.optimizer) / MM_GIB,
                                                      (r.activations + r.transient) / MM_GIB, r.total / MM_GIB};
            point_free(&pt);
        }
    }
    return rc;
}

/* ---- the files ------------------------------------------------------------ */

static bool name_ok(const char *s)
{
    if (!s || !*s || strlen(s) > 64)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '.' ||
              *s == '-' || *s == '_'))
            return false;
    return true;
}

int mm_dflop_names_check(const mm_dflop_names *n, mm_err *err)
{
    const char *v[5] = {n->mllm, n->vision, n->vision_size, n->llm, n->llm_size};
    static const char *const what[5] = {"mllm", "vision", "vision size", "llm", "llm size"};
    for (int i = 0; i < 5; i++)
        if (!name_ok(v[i]))
            return mm_err_set(err, MM_EINPUT, "<cli>", 0, "--names",
                              "the %s name '%s' is not 1 to 64 letters, digits, '.', '-' or '_'", what[i],
                              v[i] ? v[i] : "");
    return 0;
}

static void thr_text(mm_sbuf *b, const char *key, const mm_dflop_thr *r, int n)
{
    mm_sb_printf(b, "%s,model_time,fwd_times,bwd_times,num_layers,tp_size\n", key);
    for (int i = 0; i < n; i++)
        mm_sb_printf(b, "%d,%.17g,%.17g,%.17g,%d,%d\n", r[i].key, r[i].model_ms, r[i].fwd_ms, r[i].bwd_ms,
                     r[i].num_layers, r[i].tp);
}

static void mem_text(mm_sbuf *b, bool llm, const mm_dflop_mem *r, int n)
{
    mm_sb_printf(b, "batch_size,%smodel_mem,fwd_peak,model_state_peak,num_layers,tp_size\n", llm ? "seq_len," : "");
    for (int i = 0; i < n; i++) {
        mm_sb_printf(b, "%d,", r[i].batch_size);
        if (llm)
            mm_sb_printf(b, "%d,", r[i].seq_len);
        mm_sb_printf(b, "%.17g,%.17g,%.17g,%d,%d\n", r[i].model_mem, r[i].fwd_peak, r[i].model_state_peak,
                     r[i].num_layers, r[i].tp);
    }
}

/* text to path through path.XXXXXX, renamed over it when complete. */
static int write_file(const char *path, const mm_sbuf *b, mm_err *err)
{
    char tmp[1200];
    snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0)
        return mm_err_set(err, MM_EINPUT, path, 0, "DIR", "cannot write: %s", strerror(errno));
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        unlink(tmp);
        return mm_err_set(err, MM_EINPUT, path, 0, "DIR", "cannot write: %s", strerror(errno));
    }
    fwrite(b->buf, 1, b->n, f);
    int bad = ferror(f);
    bad |= fclose(f) != 0;
    mode_t um = umask(0);
    umask(um);
    if (bad || chmod(tmp, 0666 & ~um) || rename(tmp, path)) {
        int e = errno;
        unlink(tmp);
        return mm_err_set(err, MM_EINPUT, path, 0, "DIR", "write failed: %s", strerror(e));
    }
    return 0;
}

/* mkdir -p dir */
static int make_dir(const char *dir, mm_err *err)
{
    char p[1024];
    if (strlen(dir) >= sizeof p - 1)
        return mm_err_set(err, MM_EINPUT, dir, 0, "DIR", "path too long");
    snprintf(p, sizeof p, "%s", dir);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = 0;
        mkdir(p, 0777);
        *s = '/';
    }
    struct stat st;
    if (mkdir(p, 0777) && errno != EEXIST)
        return mm_err_set(err, MM_EINPUT, dir, 0, "DIR", "cannot make the folder: %s", strerror(errno));
    if (stat(p, &st) || !S_ISDIR(st.st_mode))
        return mm_err_set(err, MM_EINPUT, dir, 0, "DIR", "not a folder");
    return 0;
}

/* ---- the pickle ------------------------------------------------------------ */

/* Python's pickle, protocol 2, of {"image_batch": [...], "llm_input_seq":
 * [...]}: the opcodes Python's own pickler writes for a dict of two int
 * lists (Lib/pickletools.py documents them): PROTO 2, EMPTY_DICT, MARK,
 * then per key BINUNICODE (4-byte little-endian length, UTF-8) and
 * EMPTY_LIST with the items in MARK ... APPENDS batches of 1000, each a
 * BININT (4-byte little-endian signed); SETITEMS, STOP.  No memo: nothing
 * is shared.  Into b, which counts what it needs as mm_sb_printf does. */
static void pk_byte(mm_sbuf *b, unsigned char c)
{
    if (b->n < b->len)
        b->buf[b->n] = (char)c;
    b->n++;
}

static void pk_u32(mm_sbuf *b, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        pk_byte(b, (unsigned char)(v >> (8 * i)));
}

static void pk_key_list(mm_sbuf *b, const char *key, const int *v, int n)
{
    pk_byte(b, 'X'); /* BINUNICODE */
    pk_u32(b, (uint32_t)strlen(key));
    for (const char *c = key; *c; c++)
        pk_byte(b, (unsigned char)*c);
    pk_byte(b, ']'); /* EMPTY_LIST */
    for (int i = 0; i < n; i += 1000) {
        pk_byte(b, '('); /* MARK */
        for (int j = i; j < n && j < i + 1000; j++) {
            pk_byte(b, 'J'); /* BININT */
            pk_u32(b, (uint32_t)v[j]);
        }
        pk_byte(b, 'e'); /* APPENDS */
    }
}

static void pickle_text(const mm_dflop_profile *p, mm_sbuf *b)
{
    pk_byte(b, 0x80); /* PROTO 2 */
    pk_byte(b, 2);
    pk_byte(b, '}'); /* EMPTY_DICT */
    pk_byte(b, '(');
    pk_key_list(b, "image_batch", p->image_batch, p->n_samples);
    pk_key_list(b, "llm_input_seq", p->llm_input_seq, p->n_samples);
    pk_byte(b, 'u'); /* SETITEMS */
    pk_byte(b, '.'); /* STOP */
}

/* Table k (0..4; 5: the pickle) into *b, its path into path. */
static void table(const mm_dflop_profile *p, const mm_dflop_names *n, const char *dir, int k, mm_sbuf *b, char *path,
                  size_t len)
{
    switch (k) {
    case 0:
        snprintf(path, len, "%s/thr_%s_%s_%s.csv", dir, n->mllm, n->vision, n->vision_size);
        thr_text(b, "batch_size", p->vthr, p->n_vthr);
        break;
    case 1:
        snprintf(path, len, "%s/thr_%s_%s_%s.csv", dir, n->mllm, n->llm, n->llm_size);
        thr_text(b, "seq_len", p->lthr, p->n_lthr);
        break;
    case 2:
        snprintf(path, len, "%s/thr_%s_%s_%s_skip_attn.csv", dir, n->mllm, n->llm, n->llm_size);
        thr_text(b, "seq_len", p->lskip, p->n_lthr);
        break;
    case 3:
        snprintf(path, len, "%s/mem_%s_%s_%s.csv", dir, n->mllm, n->vision, n->vision_size);
        mem_text(b, false, p->vmem, p->n_vmem);
        break;
    case 4:
        snprintf(path, len, "%s/mem_%s_%s_%s.csv", dir, n->mllm, n->llm, n->llm_size);
        mem_text(b, true, p->lmem, p->n_lmem);
        break;
    default:
        snprintf(path, len, "%s/%s_%s_%s.pkl", dir, n->mllm, n->vision, n->llm);
        pickle_text(p, b);
    }
}

int mm_dflop_profile_write(const mm_dflop_profile *p, const mm_dflop_names *n, const char *dir, mm_err *err)
{
    int rc = mm_dflop_names_check(n, err);
    if (rc == 0)
        rc = make_dir(dir, err);
    for (int k = 0; rc == 0 && k < (p->n_samples > 0 ? 6 : 5); k++) {
        char path[1100];
        mm_sbuf b = {0};
        table(p, n, dir, k, &b, path, sizeof path); /* the length */
        b = (mm_sbuf){.buf = malloc(b.n + 1), .len = b.n + 1};
        if (!b.buf) {
            rc = mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
            break;
        }
        table(p, n, dir, k, &b, path, sizeof path);
        rc = write_file(path, &b, err);
        free(b.buf);
    }
    return rc;
}
