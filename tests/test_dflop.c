/* test_dflop.c - DFLOP's profiler tables from simulated costs
 * (plan/dflop.h, `mmsim profile --format dflop DIR`), read back the way
 * DFLOP's optimizer reads them (BDAI-Research/DFLOP commit 60e86d85,
 * data_aware_optimizer.py: pandas.read_csv of the five files by name, the
 * columns by header name) with a CSV parser written to that layout: file
 * names, header names and order, DFLOP's grid (prof_engine.py,
 * scripts/run_{thr,mem}_*.sh), units (ms, GiB = 2^30 bytes), and every
 * number against mmsim's own functions on the same layout rebuilt here: the
 * LLM's stage times (mm_sim_stage_times) and their attention kernels
 * (mm_sim_get_breakdown), the encoder's micro-batch cost
 * (mm_sim_enc_mb_cost), the LLM's stage memory (mm_sim_stage_memory); the
 * encoder's memory against the memory model's closed forms (states =
 * params/tp x bytes per parameter); DFLOP's own straight-line fit of the
 * memory over depth (calculate_model_state_factor) extrapolated to the
 * whole encoder against the memory model on the whole encoder; model_time
 * = fwd_times + bwd_times as prof_engine.py defines it; the pickle of
 * DFLOP's data analysis, read opcode by opcode as Python's unpickler reads
 * it, against the workload drawn as `mmsim run` draws it.  Bad input: a
 * text-only model, an MoE LLM, bad names, a file as DIR, the CLI's bad
 * arguments (exit 2). */
#include "cost/breakdown.h"
#include "cost/cost_internal.h"
#include "cost/costs.h"
#include "model/memory.h"
#include "plan/dflop.h"
#include "scenario/sim.h"
#include "workload/workload.h"
#include "interop_common.h"

#include <dirent.h>

/* ---- DFLOP's files, read back --------------------------------------------- */

enum { MAX_ROWS = 64, MAX_COLS = 8 };
typedef struct table {
    int rows, cols;
    double v[MAX_ROWS][MAX_COLS];
} table;

/* Reads dir/name: the first line must be `header` exactly (pandas'
 * to_csv(index=False): names in order, comma-separated, no index column);
 * every other line is `cols` numbers. */
static void read_table_in(const char *folder, const char *name, const char *header, table *t)
{
    char path[900], line[1024];
    snprintf(path, sizeof path, "%s/%s", folder, name);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "no file %s", path);
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    line[strcspn(line, "\n")] = '\0';
    ck_assert_str_eq(line, header);
    t->cols = 1;
    for (const char *p = header; *p; p++)
        t->cols += *p == ',';
    t->rows = 0;
    while (fgets(line, sizeof line, f)) {
        ck_assert_int_lt(t->rows, MAX_ROWS);
        char *p = line;
        for (int c = 0; c < t->cols; c++) {
            char *end;
            t->v[t->rows][c] = strtod(p, &end);
            ck_assert_msg(end != p, "%s row %d column %d: not a number", name, t->rows + 1, c + 1);
            ck_assert_msg(*end == (c + 1 < t->cols ? ',' : '\n'), "%s row %d: %d columns expected", name, t->rows + 1,
                          t->cols);
            p = end + 1;
        }
        t->rows++;
    }
    fclose(f);
}

static void read_table(const char *name, const char *header, table *t)
{
    read_table_in(dir, name, header, t);
}

static const char *const VTHR = "thr_llavaov_siglip_6b.csv", *const LTHR = "thr_llavaov_qwen2.5_7b.csv",
                         *const LSKIP = "thr_llavaov_qwen2.5_7b_skip_attn.csv",
                         *const VMEM = "mem_llavaov_siglip_6b.csv", *const LMEM = "mem_llavaov_qwen2.5_7b.csv";
static const char *const THR_V = "batch_size,model_time,fwd_times,bwd_times,num_layers,tp_size";
static const char *const THR_L = "seq_len,model_time,fwd_times,bwd_times,num_layers,tp_size";
static const char *const MEM_V = "batch_size,model_mem,fwd_peak,model_state_peak,num_layers,tp_size";
static const char *const MEM_L = "batch_size,seq_len,model_mem,fwd_peak,model_state_peak,num_layers,tp_size";

/* The profile of the built-in scenario with these overrides, into dir
 * under DFLOP's default names. */
static void profile(const char *const *sets, int n)
{
    mm_err err;
    mm_err_clear(&err);
    mm_dflop_profile *p = calloc(1, sizeof *p);
    ck_assert_ptr_nonnull(p);
    ck_assert_msg(mm_dflop_profile_make(NULL, sets, n, p, &err) == 0, "%s: %s", err.key, err.msg);
    mm_dflop_names names = {"llavaov", "siglip", "6b", "qwen2.5", "7b"};
    ck_assert_msg(mm_dflop_profile_write(p, &names, dir, &err) == 0, "%s: %s", err.key, err.msg);
    mm_dflop_profile_free(p);
    free(p);
}

/* ---- the same layouts, rebuilt here --------------------------------------- */

typedef struct loaded {
    mm_scenario sc;
    mm_sim sim;
} loaded;

/* LLaVA-1.5-7B (models/llava-1.5-7b.json: Llama-2-7B, 32 heads; CLIP ViT-L
 * at 336 px, 16 heads) with every module trained. */
static const char *const BASE[] = {"model=models/llava-1.5-7b.json", "train.frozen=[]"};

/* The layout of one row, as dflop.h describes it: tp, one node of 8 GPUs,
 * one stage, one micro-batch, no ZeRO; the vision encoder colocated at tp
 * (vision) or a text workload; the module cut to `layers`. */
static void rebuild(loaded *l, int tp, int seq, bool vision, int layers, const char *extra)
{
    char s[24][96];
    const char *sets[24];
    int n = 0, ltp = vision ? 1 : tp;
    for (size_t i = 0; i < sizeof BASE / sizeof BASE[0]; i++)
        snprintf(s[n++], 96, "%s", BASE[i]);
    if (extra)
        snprintf(s[n++], 96, "%s", extra);
    snprintf(s[n++], 96, "cluster.nodes=1");
    snprintf(s[n++], 96, "parallel.llm={tp: %d, dp: %d, pp: 1, cp: 1, vpp: 1, ep: 1, zero: 0}", ltp, 8 / ltp);
    snprintf(s[n++], 96, "train.zero=0");
    snprintf(s[n++], 96, "train.micro_batch=1");
    snprintf(s[n++], 96, "train.global_batch=%d", 8 / ltp);
    snprintf(s[n++], 96, "train.seq_len=%d", seq);
    if (vision) {
        snprintf(s[n++], 96, "workload={kind: fixed, images: 1, tiles: 1, text_tokens: 1}");
        snprintf(s[n++], 96, "parallel.placement=colocated");
        snprintf(s[n++], 96, "parallel.vision={tp: %d, pp: 1, dp: %d}", tp, 8 / tp);
    } else {
        snprintf(s[n++], 96, "workload=text");
    }
    for (int i = 0; i < n; i++)
        sets[i] = s[i];
    mm_err err;
    mm_err_clear(&err);
    memset(l, 0, sizeof *l);
    ck_assert_msg(mm_scenario_load(&l->sc, NULL, sets, n, &err) == 0, "%s: %s", err.key, err.msg);
    ck_assert_msg(mm_sim_load(&l->sim, &l->sc, &err) == 0, "%s: %s", err.key, err.msg);
    if (vision)
        l->sim.model->vision.layers = layers;
    else
        l->sim.model->llm.layers = layers;
    ck_assert_msg(mm_sim_relayout(&l->sim, &err) == 0, "%s: %s", err.key, err.msg);
}

static void unload(loaded *l)
{
    mm_sim_free(&l->sim);
    mm_scenario_free(&l->sc);
}

static void close_rel(double got, double want, double tol, const char *what, int row)
{
    ck_assert_msg(fabs(got - want) <= tol * fabs(want) + 1e-12, "%s row %d: %.17g, want %.17g", what, row, got, want);
}

/* ---- DFLOP's pickle, read back ----------------------------------------------- */

/* Reads dir/name as Python's unpickler would a dict of int lists written
 * with protocol 2 (the opcodes of Lib/pickletools.py that such a pickle
 * uses: PROTO, EMPTY_DICT, MARK, BINUNICODE, EMPTY_LIST, BININT1, BININT2,
 * BININT, APPENDS, SETITEMS, STOP; a memo PUT is skipped).  The two lists
 * under "image_batch" and "llm_input_seq" into ib and seq (n each). */
static void read_pickle(const char *name, int *ib, int *seq, int cap, int *n_ib, int *n_seq)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "no file %s", path);
    static unsigned char b[1 << 20];
    size_t len = fread(b, 1, sizeof b, f);
    fclose(f);
    ck_assert(len > 4 && len < sizeof b);
    ck_assert_int_eq(b[0], 0x80);
    ck_assert_int_eq(b[1], 2);
    int *cur = NULL, *cnt = NULL;
    *n_ib = *n_seq = -1;
    bool stop = false;
    for (size_t i = 2; i < len && !stop;) {
        unsigned char op = b[i++];
        uint32_t u = 0;
        switch (op) {
        case '}': case '(': case 'e': case 'u': break;
        case ']': ck_assert_ptr_nonnull(cnt); *cnt = 0; break;
        case 'q': i += 1; break; /* BINPUT */
        case 'X':
            for (int k = 0; k < 4; k++)
                u |= (uint32_t)b[i + k] << (8 * k);
            i += 4;
            if (u == 11 && !memcmp(b + i, "image_batch", 11))
                cur = ib, cnt = n_ib;
            else if (u == 13 && !memcmp(b + i, "llm_input_seq", 13))
                cur = seq, cnt = n_seq;
            else
                ck_abort_msg("unexpected key of %u bytes", u);
            i += u;
            break;
        case 'K': case 'M': case 'J': {
            int w = op == 'K' ? 1 : op == 'M' ? 2 : 4;
            for (int k = 0; k < w; k++)
                u |= (uint32_t)b[i + k] << (8 * k);
            i += (size_t)w;
            ck_assert(cur && *cnt >= 0 && *cnt < cap);
            cur[(*cnt)++] = w == 4 ? (int)(int32_t)u : (int)u;
            break;
        }
        case '.': stop = true; ck_assert_uint_eq(i, len); break;
        default: ck_abort_msg("opcode 0x%02x at %zu is not one a dict of int lists pickles to", op, i - 1);
        }
    }
    ck_assert(stop);
}

/* ---- the tests -------------------------------------------------------------- */

/* File names, headers, DFLOP's grid in its order, and nothing else in DIR
 * (no pickle, no temporary file). */
START_TEST(tables_layout)
{
    profile(BASE, 2);
    table t;
    read_table(VTHR, THR_V, &t);
    ck_assert_int_eq(t.rows, MM_DFLOP_N_TP * MM_DFLOP_N_IMAGES);
    for (int r = 0; r < t.rows; r++) {
        ck_assert_int_eq((int)t.v[r][0], 1 << (r % 7)); /* 1, 2, ..., 64 images */
        ck_assert_int_eq((int)t.v[r][4], 16);
        ck_assert_int_eq((int)t.v[r][5], 1 << (r / 7)); /* tp 1, 2, 4, 8 */
    }
    read_table(LTHR, THR_L, &t);
    ck_assert_int_eq(t.rows, 16);
    for (int r = 0; r < t.rows; r++) {
        ck_assert_int_eq((int)t.v[r][0], 1024 << (r % 4));
        ck_assert_int_eq((int)t.v[r][4], 4);
        ck_assert_int_eq((int)t.v[r][5], 1 << (r / 4));
    }
    table sk;
    read_table(LSKIP, THR_L, &sk);
    ck_assert_int_eq(sk.rows, 16);
    read_table(VMEM, MEM_V, &t);
    ck_assert_int_eq(t.rows, 8);
    for (int r = 0; r < t.rows; r++) {
        ck_assert_int_eq((int)t.v[r][0], 2);
        ck_assert_int_eq((int)t.v[r][4], 4 << (r % 2)); /* 4 and 8 layers */
        ck_assert_int_eq((int)t.v[r][5], 1 << (r / 2));
    }
    read_table(LMEM, MEM_L, &t);
    ck_assert_int_eq(t.rows, 8);
    for (int r = 0; r < t.rows; r++) {
        ck_assert_int_eq((int)t.v[r][0], 1);
        ck_assert_int_eq((int)t.v[r][1], 1024);
        ck_assert_int_eq((int)t.v[r][5], 3 + r % 2); /* 3 and 4 layers */
        ck_assert_int_eq((int)t.v[r][6], 1 << (r / 2));
    }
    DIR *d = opendir(dir);
    int files = 0, pkl = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.') {
            files++;
            pkl += !strcmp(e->d_name, "llavaov_siglip_qwen2.5.pkl");
            ck_assert_msg((strstr(e->d_name, ".csv") && !strstr(e->d_name, ".csv.")) || pkl, "unexpected file %s",
                          e->d_name);
        }
    closedir(d);
    ck_assert_int_eq(files, 6);
    ck_assert_int_eq(pkl, 1);
}
END_TEST

/* The LLM's rows: fwd_times and bwd_times are the stage's forward and
 * backward of mm_sim_stage_times in ms, model_time their sum; the skip-
 * attention table takes out 4 layers' attention kernels of the cost
 * bridge's breakdown (forward; backward with what recomputation runs). */
START_TEST(llm_times_are_the_cost_bridge)
{
    profile(BASE, 2);
    table t, sk;
    read_table(LTHR, THR_L, &t);
    read_table(LSKIP, THR_L, &sk);
    for (int r = 0; r < t.rows; r++) {
        close_rel(t.v[r][1], t.v[r][2] + t.v[r][3], 1e-15, "model_time = fwd + bwd", r);
        close_rel(sk.v[r][1], sk.v[r][2] + sk.v[r][3], 1e-15, "skip model_time = fwd + bwd", r);
        ck_assert_int_eq((int)sk.v[r][0], (int)t.v[r][0]);
        loaded l;
        rebuild(&l, (int)t.v[r][5], (int)t.v[r][0], false, 4, NULL);
        mm_err err;
        mm_err_clear(&err);
        mm_sim_costs c;
        ck_assert_int_eq(mm_sim_stage_times(&l.sim, &c, &err), 0);
        close_rel(t.v[r][2], c.stages[0].fwd_s * 1e3, 1e-15, "fwd_times", r);
        close_rel(t.v[r][3], c.stages[0].bwd_s * 1e3, 1e-15, "bwd_times", r);
        mm_sim_costs_free(&c);
        mm_sim_breakdown *bk = calloc(1, sizeof *bk);
        ck_assert_int_eq(mm_sim_get_breakdown(&l.sim, bk, &err), 0);
        double af = bk->layer.s[MM_OP_F][MM_BK_ATTN];
        ck_assert(af > 0);
        close_rel(t.v[r][2] - sk.v[r][2], 4 * af * 1e3, 1e-9, "attention forward", r);
        /* selective recomputation (the default) runs the attention core again */
        ck_assert(bk->recompute_s > 0);
        double ab = bk->layer.s[MM_OP_B][MM_BK_ATTN] + bk->layer.s[MM_OP_W][MM_BK_ATTN] + fmin(bk->recompute_s, af);
        close_rel(t.v[r][3] - sk.v[r][3], 4 * ab * 1e3, 1e-9, "attention backward", r);
        free(bk);
        unload(&l);
    }
    /* longer sequences cost more, and attention's share grows with them */
    for (int r = 1; r < t.rows; r++)
        if (t.v[r][5] == t.v[r - 1][5]) {
            ck_assert(t.v[r][1] > t.v[r - 1][1]);
            ck_assert((t.v[r][1] - sk.v[r][1]) / t.v[r][1] > (t.v[r - 1][1] - sk.v[r - 1][1]) / t.v[r - 1][1]);
        }
}
END_TEST

/* The vision rows: mm_sim_enc_mb_cost of 16 layers on batch_size tiles at
 * tp, in ms. */
START_TEST(vision_times_are_the_cost_bridge)
{
    profile(BASE, 2);
    table t;
    read_table(VTHR, THR_V, &t);
    for (int r = 0; r < t.rows; r++) {
        close_rel(t.v[r][1], t.v[r][2] + t.v[r][3], 1e-15, "model_time = fwd + bwd", r);
        loaded l;
        rebuild(&l, (int)t.v[r][5], 1024, true, 16, NULL);
        mm_enc_mb_cost c;
        double params;
        ck_assert_int_eq(mm_sim_enc_mb_cost(&l.sim, &l.sim.enc[0], t.v[r][0], (int)t.v[r][5], &c, &params), 0);
        close_rel(t.v[r][2], c.fwd_s * 1e3, 1e-15, "fwd_times", r);
        close_rel(t.v[r][3], c.bwd_s * 1e3, 1e-15, "bwd_times", r);
        unload(&l);
        if (r % 7)
            ck_assert(t.v[r][1] > t.v[r - 1][1]); /* more images, more time */
    }
}
END_TEST

/* Memory.  Vision: model_mem = params/tp x (weights + optimizer bytes per
 * parameter), model_state_peak - model_mem - fwd_peak = the gradients
 * (params/tp x MM_BYTES_GRAD), in GiB; DFLOP's straight line through the
 * 4- and 8-layer rows (calculate_model_state_factor) at the tower's 24
 * layers is the memory model's whole tower.  LLM: model_state_peak is
 * mm_sim_stage_memory's stage. */
START_TEST(memory_closed_forms)
{
    profile(BASE, 2);
    table t;
    read_table(VMEM, MEM_V, &t);
    for (int r = 0; r < t.rows; r++) {
        int tp = (int)t.v[r][5], L = (int)t.v[r][4];
        loaded l;
        rebuild(&l, tp, 1024, true, L, NULL);
        double P = (double)mm_encoder_params(&l.sim.model->vision) / tp;
        double state = mm_mem_state_bytes_per_param(0, 1);
        close_rel(t.v[r][1], P * (state - MM_BYTES_GRAD) / MM_GIB, 1e-12, "vision model_mem", r);
        close_rel(t.v[r][3] - t.v[r][1] - t.v[r][2], P * MM_BYTES_GRAD / MM_GIB, 1e-9, "vision gradients", r);
        ck_assert(t.v[r][2] > 0);
        unload(&l);
        if (r % 2 == 0)
            continue;
        /* DFLOP's fit over num_layers, per tp */
        double var = (t.v[r][3] - t.v[r - 1][3]) / (t.v[r][4] - t.v[r - 1][4]);
        double c0 = t.v[r - 1][3] - t.v[r - 1][4] * var;
        loaded w;
        rebuild(&w, tp, 1024, true, 24, NULL);
        mm_mem_rank m;
        ck_assert_int_eq(mm_mem_encoder_rank(&w.sim.model->vision, MM_DFLOP_VISION_MEM_IMAGES, tp, false, 1, 0,
                                             mm_sim_mem_recompute_of(&w.sim, &w.sim.enc[0].layout), 1, false, &m),
                         0);
        close_rel(c0 + 24 * var, m.total / MM_GIB, 1e-9, "DFLOP's fit at 24 layers", r);
        unload(&w);
    }
    read_table(LMEM, MEM_L, &t);
    for (int r = 0; r < t.rows; r++) {
        loaded l;
        rebuild(&l, (int)t.v[r][6], 1024, false, (int)t.v[r][5], NULL);
        mm_err err;
        mm_err_clear(&err);
        mm_sim_memory m;
        ck_assert_int_eq(mm_sim_stage_memory(&l.sim, &m, &err), 0);
        close_rel(t.v[r][4], m.stage_gib[0], 1e-15, "llm model_state_peak", r);
        ck_assert(t.v[r][2] > 0 && t.v[r][3] > 0 && t.v[r][2] + t.v[r][3] < t.v[r][4]);
        mm_sim_memory_free(&m);
        unload(&l);
        if (r % 2) /* a layer more: more of everything */
            ck_assert(t.v[r][2] > t.v[r - 1][2] && t.v[r][3] > t.v[r - 1][3]);
    }
}
END_TEST

/* What DFLOP's profiler leaves out, left out: a TP degree that does not
 * divide the heads (Qwen2.5-7B's 28 at tp 8), and a throughput list past
 * its first batch that does not fit (train.memory_reserve_gib 55 leaves
 * some 20 GiB of an H100's 80 GB: the LLM at tp 1 fits 2048 tokens, not
 * 4096; the rows end there, and the next one is out of memory). */
START_TEST(skipped_and_out_of_memory)
{
    profile(NULL, 0); /* the built-in LLaVA-OV (Qwen2.5-7B, 28 heads; SigLIP, 16) */
    table t;
    read_table(LTHR, THR_L, &t);
    ck_assert_int_eq(t.rows, 12);
    ck_assert_int_eq((int)t.v[11][5], 4);
    read_table(VTHR, THR_V, &t);
    ck_assert_int_eq(t.rows, 28);
    const char *sets[] = {BASE[0], BASE[1], "train.memory_reserve_gib=55"};
    profile(sets, 3);
    read_table(LTHR, THR_L, &t);
    int n1 = 0;
    for (int r = 0; r < t.rows; r++)
        n1 += t.v[r][5] == 1;
    ck_assert_int_eq(n1, 2);
    ck_assert_int_eq((int)t.v[2][5], 2); /* tp 2 from the third row on, all four */
    ck_assert_int_eq(t.rows, 14);
    loaded l;
    rebuild(&l, 1, 2048, false, 4, sets[2]);
    mm_err err;
    mm_err_clear(&err);
    mm_sim_memory m;
    ck_assert_int_eq(mm_sim_stage_memory(&l.sim, &m, &err), 0);
    ck_assert(!m.oom);
    mm_sim_memory_free(&m);
    unload(&l);
    rebuild(&l, 1, 4096, false, 4, sets[2]);
    ck_assert_int_eq(mm_sim_stage_memory(&l.sim, &m, &err), 0);
    ck_assert(m.oom);
    mm_sim_memory_free(&m);
    unload(&l);
}
END_TEST

/* The pickle: DFLOP's data analysis of 10000 samples from the scenario's
 * workload, drawn as `mmsim run` draws it (workload file, the scenario's
 * seed): each sample's tiles + frames and its LLM tokens as the cost
 * bridge counts them (mm_sample_llm_tokens with the sim's token model,
 * capped at train.seq_len).  A fixed workload gives its sample every
 * time; a text workload writes no pickle. */
START_TEST(pickle_is_the_workload)
{
    static int ib[MM_DFLOP_SAMPLES + 1], seq[MM_DFLOP_SAMPLES + 1];
    int nib, nseq;
    const char *mix[] = {"workload=workloads/llava-ov-mix.yaml", "train.seq_len=8192", "seed=7"};
    profile(mix, 3);
    read_pickle("llavaov_siglip_qwen2.5.pkl", ib, seq, MM_DFLOP_SAMPLES + 1, &nib, &nseq);
    ck_assert_int_eq(nib, MM_DFLOP_SAMPLES);
    ck_assert_int_eq(nseq, MM_DFLOP_SAMPLES);
    mm_scenario sc;
    mm_sim sim;
    mm_err err;
    mm_err_clear(&err);
    ck_assert_int_eq(mm_scenario_load(&sc, NULL, mix, 3, &err), 0);
    ck_assert_int_eq(mm_sim_load(&sim, &sc, &err), 0);
    ck_assert_int_eq(mm_sim_check_workload(&sim, &err), 0);
    ck_assert_ptr_nonnull(sim.wl);
    mm_sample *s = malloc(MM_DFLOP_SAMPLES * sizeof *s);
    ck_assert_int_eq(mm_workload_draw(sim.wl, 7, 0, MM_DFLOP_SAMPLES, s, &err), 0);
    int capped = 0, multi = 0;
    for (int i = 0; i < MM_DFLOP_SAMPLES; i++) {
        ck_assert_int_eq(ib[i], s[i].tiles + s[i].frames);
        ck_assert_int_eq(seq[i], (int)mm_sample_llm_tokens(&s[i], &sim.tm));
        ck_assert_int_le(seq[i], 8192);
        capped += seq[i] == 8192;
        multi += ib[i] > 1;
    }
    ck_assert_int_gt(capped, 0); /* the cap is met, and kept */
    ck_assert_int_gt(multi, MM_DFLOP_SAMPLES / 2);
    free(s);
    mm_sim_free(&sim);
    mm_scenario_free(&sc);
    /* the built-in fixed sample: 5 tiles of 729 tokens and its text */
    profile(NULL, 0);
    read_pickle("llavaov_siglip_qwen2.5.pkl", ib, seq, MM_DFLOP_SAMPLES + 1, &nib, &nseq);
    loaded l;
    memset(&l, 0, sizeof l);
    ck_assert_int_eq(mm_scenario_load(&l.sc, NULL, NULL, 0, &err), 0);
    ck_assert_int_eq(mm_sim_prepare(&l.sim, &l.sc, &err), 0);
    for (int i = 0; i < nib; i++) {
        ck_assert_int_eq(ib[i], (int)l.sim.enc[0].inputs_per_sample);
        ck_assert_int_eq(seq[i], (int)l.sim.seq);
    }
    unload(&l);
    /* text: no images, no pickle (the tables are still written) */
    char path[600];
    snprintf(path, sizeof path, "%s/llavaov_siglip_qwen2.5.pkl", dir);
    ck_assert_int_eq(unlink(path), 0);
    const char *text[] = {"workload=text"};
    profile(text, 1);
    ck_assert_int_ne(access(path, F_OK), 0);
    table t;
    read_table(VTHR, THR_V, &t);
    ck_assert_int_eq(t.rows, 28);
}
END_TEST

/* Refused by name: no vision encoder, an MoE LLM, names that are no file
 * name, a file as the folder. */
START_TEST(refusals)
{
    mm_err err;
    mm_dflop_profile *p = calloc(1, sizeof *p);
    const char *text[] = {"model=models/llama-2-7b.json"};
    mm_err_clear(&err);
    ck_assert_int_eq(mm_dflop_profile_make(NULL, text, 1, p, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "model");
    ck_assert_ptr_nonnull(strstr(err.msg, "no vision encoder"));
    const char *moe[] = {"model=tests/data/dflop/llava-mixtral.yaml"};
    mm_err_clear(&err);
    ck_assert_int_eq(mm_dflop_profile_make(NULL, moe, 1, p, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "model");
    ck_assert_ptr_nonnull(strstr(err.msg, "MoE"));
    const char *bad[] = {"model=models/llava-1.5-7b.json", "train.seq_len=0"};
    mm_err_clear(&err);
    ck_assert_int_eq(mm_dflop_profile_make(NULL, bad, 2, p, &err), -MM_EINPUT);
    ck_assert_str_eq(err.file, "--set");
    ck_assert_ptr_nonnull(strstr(err.key, "seq_len"));
    mm_err_clear(&err);
    ck_assert_int_eq(mm_dflop_profile_make(NULL, NULL, 0, p, &err), 0);
    mm_dflop_names names = {"llavaov", "../x", "6b", "qwen2.5", "7b"};
    mm_err_clear(&err);
    ck_assert_int_eq(mm_dflop_profile_write(p, &names, dir, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "--names");
    names.vision = "siglip";
    names.llm_size = "";
    mm_err_clear(&err);
    ck_assert_int_eq(mm_dflop_profile_write(p, &names, dir, &err), -MM_EINPUT);
    names.llm_size = "7b";
    char file[600];
    snprintf(file, sizeof file, "%s/plain", dir);
    FILE *f = fopen(file, "w");
    fclose(f);
    mm_err_clear(&err);
    ck_assert_int_eq(mm_dflop_profile_write(p, &names, file, &err), -MM_EINPUT);
    ck_assert_str_eq(err.key, "DIR");
    mm_dflop_profile_free(p);
    free(p);
}
END_TEST

/* `mmsim profile` end to end: the files under --names, and its bad
 * arguments (exit 2, the flag named). */
START_TEST(cli_profile)
{
    ck_assert_int_eq(run("profile --format dflop %s/prof --names internvl,internvit,6b,llama3,8b "
                         "--set model=models/llava-1.5-7b.json",
                         dir),
                     0);
    ck_assert_ptr_nonnull(strstr(out, "thr_internvl_internvit_6b.csv"));
    char sub[300];
    snprintf(sub, sizeof sub, "%s/prof", dir);
    table t;
    read_table_in(sub, "thr_internvl_llama3_8b_skip_attn.csv", THR_L, &t);
    ck_assert_int_eq(t.rows, 16);
    read_table_in(sub, "mem_internvl_internvit_6b.csv", MEM_V, &t);
    ck_assert_int_eq(t.rows, 8);
    ck_assert_int_eq(run("profile --format dflop %s/q -q", dir), 0);
    ck_assert_str_eq(out, "");
    ck_assert_int_eq(run("profile %s/x", dir), 2);
    ck_assert_ptr_nonnull(strstr(errtxt, "--format"));
    ck_assert_int_eq(run("profile --format csv %s/x", dir), 2);
    ck_assert_ptr_nonnull(strstr(errtxt, "dflop"));
    ck_assert_int_eq(run("profile --format dflop"), 2);
    ck_assert_int_eq(run("profile --format dflop %s/x --names a,b,c", dir), 2);
    ck_assert_ptr_nonnull(strstr(errtxt, "--names"));
    ck_assert_int_eq(run("profile --format dflop %s/x --set model=models/llama-2-7b.json", dir), 2);
    ck_assert_ptr_nonnull(strstr(errtxt, "'model'"));
    ck_assert_int_eq(run("profile --format dflop %s/x --set parallel.llm.tq=2", dir), 2);
    ck_assert_int_eq(run("help profile"), 0);
    ck_assert_ptr_nonnull(strstr(out, "--format dflop DIR"));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("dflop");
    TCase *tc = tcase_create("dflop");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, tables_layout);
    tcase_add_test(tc, llm_times_are_the_cost_bridge);
    tcase_add_test(tc, vision_times_are_the_cost_bridge);
    tcase_add_test(tc, memory_closed_forms);
    tcase_add_test(tc, skipped_and_out_of_memory);
    tcase_add_test(tc, pickle_is_the_workload);
    tcase_add_test(tc, refusals);
    tcase_add_test(tc, cli_profile);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
