/* balance_ilp.c - DFLOP's micro-batch assignment as an integer program
 * (arXiv 2603.25120; BDAI-Research/DFLOP scheduler.py solves it with
 * OR-Tools CP-SAT under a 10 s time limit), here with GLPK's branch and
 * bound under a node limit so that the answer never depends on the
 * machine's speed:
 *
 *   min z  s.t.  sum_k x_ik = 1 (each item in one bin)
 *                sum_i x_ik >= 1 (no bin empty)
 *                sum_i e_i x_ik <= z,  sum_i l_i x_ik <= z  (each bin, each phase)
 *                x_ik = 0 for k > i (bins numbered by their first item:
 *                removes the k! relabelings of every solution)
 *                z >= max(largest item, sum e / K, sum l / K)
 *
 * The caller's assignment (LPT's, or better) is handed to GLPK as its
 * first incumbent through the GLP_IHEUR callback, so the result is never
 * worse than it.  The same callback stops the search once the tree holds
 * `node_limit` nodes (glp_ios_tree_size), and records the best bound of
 * the open nodes, which gives the gap.  Known limit: bins are symmetric
 * and the LP bound is weak (it is the fractional average), so on large
 * batches GLPK rarely proves optimality; the gap is then an upper bound
 * on what remains.  GLPK prints nothing (msg_lev off), and its
 * environment is freed after each solve (glp_free_env), so no GLPK object
 * may be held across calls by the same thread.
 * Not for: LPT or the other policies (batch.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <glpk.h>

#include "workload/batch.h"

typedef struct search {
    int n, k, ncols;
    const int *col_of_first; /* first column of item i's x_ik */
    const int *start;        /* the incumbent: bin per item */
    double z_start;          /* its largest bin (or the lower bound on z) */
    bool given;
    int64_t limit, nodes;
    double open_bound;       /* best bound among open nodes when stopped */
    bool stopped;
} search;

static void callback(glp_tree *tree, void *info)
{
    search *s = info;
    int a_cnt = 0, n_cnt = 0, t_cnt = 0;
    glp_ios_tree_size(tree, &a_cnt, &n_cnt, &t_cnt);
    s->nodes = t_cnt;
    if (glp_ios_reason(tree) == GLP_IHEUR && !s->given) {
        s->given = true;
        double *x = calloc((size_t)s->ncols + 1, sizeof *x);
        if (x) {
            x[1] = s->z_start; /* column 1 is z: the incumbent's largest bin */
            for (int i = 0; i < s->n; i++)
                x[s->col_of_first[i] + s->start[i]] = 1;
            glp_ios_heur_sol(tree, x);
            free(x);
        }
    }
    if (s->given && t_cnt >= s->limit && !s->stopped) { /* never before the incumbent is in */
        int best = glp_ios_best_node(tree);
        s->open_bound = best ? glp_ios_node_bound(tree, best) : -HUGE_VAL;
        s->stopped = true;
        glp_ios_terminate(tree);
    }
}

/* Renumbers bins by their first item, so that x_ik = 0 for k > i holds. */
static void canonical(int *assign, int n, int k)
{
    int *map = malloc((size_t)k * sizeof *map);
    if (!map)
        return;
    for (int b = 0; b < k; b++)
        map[b] = -1;
    int next = 0;
    for (int i = 0; i < n; i++) {
        if (map[assign[i]] < 0)
            map[assign[i]] = next++;
        assign[i] = map[assign[i]];
    }
    free(map);
}

int mm_balance_ilp(const double *enc, const double *llm, int n, int k, int64_t node_limit, int *assign,
                   double *best, double *bound, int64_t *nodes, bool *optimal, mm_err *err)
{
    *nodes = 0;
    *optimal = false;
    if (n < k || k < 1)
        return mm_err_set(err, MM_EINPUT, "", 0, "train.global_batch", "%d samples cannot fill %d bins", n, k);
    double se = 0, sl = 0, mx = 0;
    for (int i = 0; i < n; i++) {
        se += enc[i];
        sl += llm[i];
        mx = fmax(mx, fmax(enc[i], llm[i]));
    }
    double lb = fmax(mx, fmax(se, sl) / k);
    int *start = malloc((size_t)n * sizeof *start), *first = malloc((size_t)n * sizeof *first);
    int ncols = 1;
    for (int i = 0; i < n; i++)
        ncols += i + 1 < k ? i + 1 : k;
    /* nonzeros: per x_ik up to 4, per bin 2 for z */
    size_t nz = (size_t)(ncols - 1) * 4 + (size_t)k * 2 + 1;
    int *ia = malloc(nz * sizeof *ia), *ja = malloc(nz * sizeof *ja);
    double *ar = malloc(nz * sizeof *ar);
    if (!start || !first || !ia || !ja || !ar) {
        free(start), free(first), free(ia), free(ja), free(ar);
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    }
    memcpy(start, assign, (size_t)n * sizeof *start);
    canonical(start, n, k);
    double z_start = lb;
    {
        double *E = calloc((size_t)k, sizeof *E), *L = calloc((size_t)k, sizeof *L);
        if (!E || !L) {
            free(E), free(L), free(start), free(first), free(ia), free(ja), free(ar);
            return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
        }
        for (int i = 0; i < n; i++) {
            E[start[i]] += enc[i];
            L[start[i]] += llm[i];
        }
        for (int b = 0; b < k; b++)
            z_start = fmax(z_start, fmax(E[b], L[b]));
        free(E), free(L);
    }

    glp_prob *P = glp_create_prob();
    glp_set_obj_dir(P, GLP_MIN);
    /* rows: items 1..n, non-empty n+1..n+k, enc n+k+1..n+2k, llm n+2k+1..n+3k */
    glp_add_rows(P, n + 3 * k);
    for (int i = 0; i < n; i++)
        glp_set_row_bnds(P, i + 1, GLP_FX, 1, 1);
    for (int b = 0; b < k; b++) {
        glp_set_row_bnds(P, n + b + 1, GLP_LO, 1, 0);
        glp_set_row_bnds(P, n + k + b + 1, GLP_UP, 0, 0);
        glp_set_row_bnds(P, n + 2 * k + b + 1, GLP_UP, 0, 0);
    }
    glp_add_cols(P, ncols);
    glp_set_col_bnds(P, 1, GLP_LO, lb, 0);
    glp_set_obj_coef(P, 1, 1);
    size_t t = 0;
    for (int b = 0; b < k; b++) {
        ia[++t] = n + k + b + 1, ja[t] = 1, ar[t] = -1;
        ia[++t] = n + 2 * k + b + 1, ja[t] = 1, ar[t] = -1;
    }
    int col = 2;
    for (int i = 0; i < n; i++) {
        first[i] = col;
        int nb = i + 1 < k ? i + 1 : k;
        for (int b = 0; b < nb; b++, col++) {
            glp_set_col_kind(P, col, GLP_BV);
            ia[++t] = i + 1, ja[t] = col, ar[t] = 1;
            ia[++t] = n + b + 1, ja[t] = col, ar[t] = 1;
            if (enc[i] != 0)
                ia[++t] = n + k + b + 1, ja[t] = col, ar[t] = enc[i];
            if (llm[i] != 0)
                ia[++t] = n + 2 * k + b + 1, ja[t] = col, ar[t] = llm[i];
        }
    }
    glp_load_matrix(P, (int)t, ia, ja, ar);
    free(ia), free(ja), free(ar);

    int rc = 0;
    if (z_start <= lb) { /* the incumbent meets the lower bound: optimal, no search */
        memcpy(assign, start, (size_t)n * sizeof *assign);
        *best = *bound = z_start;
        *optimal = true;
        glp_delete_prob(P);
        glp_free_env();
        free(start), free(first);
        return 0;
    }
    glp_smcp sm;
    glp_init_smcp(&sm);
    sm.msg_lev = GLP_MSG_OFF;
    int lp = glp_simplex(P, &sm);
    if (lp != 0 || glp_get_status(P) != GLP_OPT) {
        rc = mm_err_set(err, MM_EINTERNAL, "", 0, "batching", "GLPK could not solve the LP relaxation (code %d)", lp);
    } else {
        search s = {.n = n, .k = k, .ncols = ncols, .col_of_first = first, .start = start,
                    .z_start = z_start, .limit = node_limit, .open_bound = -HUGE_VAL};
        glp_iocp io;
        glp_init_iocp(&io);
        io.msg_lev = GLP_MSG_OFF;
        io.bt_tech = GLP_BT_DFS; /* dive for better incumbents */
        io.br_tech = GLP_BR_MFV; /* cheap per node: the default Driebeck-Tomlin
                                  * test costs ~40% more per node here */
        io.cb_func = callback;
        io.cb_info = &s;
        int ip = glp_intopt(P, &io);
        int st = glp_mip_status(P);
        *nodes = s.nodes;
        if ((ip == 0 || ip == GLP_ESTOP) && (st == GLP_OPT || st == GLP_FEAS)) {
            for (int i = 0; i < n; i++) {
                int nb = i + 1 < k ? i + 1 : k;
                for (int b = 0; b < nb; b++)
                    if (glp_mip_col_val(P, first[i] + b) > 0.5)
                        assign[i] = b;
            }
            *best = glp_mip_obj_val(P);
            *optimal = st == GLP_OPT && !s.stopped;
            *bound = *optimal ? *best : fmax(lb, s.open_bound);
            if (*bound > *best)
                *bound = *best;
        } else {
            rc = mm_err_set(err, MM_EINTERNAL, "", 0, "batching", "GLPK branch and bound failed (code %d, status %d)",
                            ip, st);
        }
    }
    glp_delete_prob(P);
    glp_free_env();
    free(start), free(first);
    return rc;
}
