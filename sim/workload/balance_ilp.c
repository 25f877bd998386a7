/* balance_ilp.c - DFLOP's micro-batch assignment as an integer program
 * (arXiv 2603.25120; BDAI-Research/DFLOP scheduler.py solves it with
 * OR-Tools CP-SAT under a 10 s time limit), here with GLPK's branch and
 * bound under a node limit so that the answer never depends on the
 * machine's speed:
 *
 *   min z  s.t.  sum_k x_ik = 1 (each item in one bin)
 *                sum_i x_ik >= 1 (no bin empty)
 *                sum_i e_i x_ik <= z,  sum_i l_i x_ik <= z  (each bin, each phase)
 *                x_ik = 0 for k > i, items numbered largest first (bins
 *                numbered by their first item: removes the k! relabelings
 *                of every solution and pins the largest items early)
 *                z >= L = per phase max(average, largest item, L_j)
 *
 * L_j (Dell'Amico and Martello 1995: some bin holds j+1 of the jk+1
 * largest items, so z >= the sum of the j+1 smallest of them; rounded up
 * when the costs are integers) is what the LP relaxation lacks: its own
 * bound is the fractional average, which left 9-15 % open on the InternVL
 * trace where bins hold two samples each.
 *
 * The start: the caller's assignment (LPT's, or better) improved by a
 * deterministic local search (best move or swap out of the largest bin,
 * 4n rounds), handed to GLPK as its first incumbent through the GLP_IHEUR
 * callback, so the result is never worse.  No search when the incumbent
 * is within 0.1 % of L.  The same callback stops the search once the tree
 * holds `node_limit` nodes (glp_ios_tree_size), and records the best bound
 * of the open nodes, which gives the gap.
 * Measured (bench_ilp, 8 batches each): on the InternVL-1.2 trace (448
 * samples, 224 bins) LPT is already optimal within 0.06 % and nothing
 * improves it; on the OneVision mix (512 samples, 64 bins) the local
 * search beats LPT by 1.3 % on 2 of 8 batches (0.33 % on average) and the
 * bound proves every result optimal.  The branch and bound itself opens
 * no node on either (under 1 ms a batch: the program is not even built):
 * it is kept for batches where the gap stays above 0.1 % and the program
 * has at most MM_BALANCE_ILP_MAX_COLUMNS columns (batch.h: larger ones
 * cost tens of CPU-s per solve and gained nothing in 5 nodes).  GLPK prints nothing (msg_lev off), and its environment is
 * freed after each solve (glp_free_env), so no GLPK object may be held
 * across calls by the same thread.
 * Not for: LPT or the other policies (batch.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <glpk.h>

#include "workload/batch.h"

/* Relative gap at which the search stops: 0.1 %, far below what the
 * per-sample cost model can tell apart. */
#define MIP_GAP 1e-3

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

static int desc_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

/* One dimension's bound: the average, the largest item, and for j >= 1 the
 * j+1 smallest of the jk+1 largest items (pigeonhole: some bin holds j+1 of
 * them; Dell'Amico and Martello, "Optimal scheduling of tasks on identical
 * parallel processors", ORSA J. Computing 7(2), 1995, bound L_j). */
static double dim_bound(const double *v, int n, int k, double *tmp)
{
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += v[i];
    memcpy(tmp, v, (size_t)n * sizeof *tmp);
    qsort(tmp, (size_t)n, sizeof *tmp, desc_double);
    double lb = fmax(sum / k, n > 0 ? tmp[0] : 0);
    bool integral = true;
    for (int i = 0; i < n && integral; i++)
        integral = v[i] == floor(v[i]) && fabs(v[i]) < 1e15;
    for (int j = 1; (int64_t)j * k < n; j++) {
        double part = 0;
        for (int i = 0; i <= j; i++)
            part += tmp[j * k - i]; /* 0-based: items jk-j .. jk */
        lb = fmax(lb, part);
    }
    /* integer costs (tile counts) make every bin's sum an integer */
    return integral ? ceil(lb - 1e-9) : lb;
}

double mm_balance_lower_bound(const double *enc, const double *llm, int n, int k)
{
    if (n < 1 || k < 1)
        return 0;
    double *tmp = malloc((size_t)n * sizeof *tmp);
    if (!tmp)
        return 0;
    double lb = fmax(dim_bound(enc, n, k, tmp), dim_bound(llm, n, k, tmp));
    free(tmp);
    return lb;
}

static double bin_cost(const double *E, const double *L, int b) { return fmax(E[b], L[b]); }

/* Improves an assignment by moves and swaps out of the largest bin: the
 * best change (the lowest new max of the two bins involved) that brings
 * both below the largest bin's cost, until none exists or `rounds` changes
 * were made.  Deterministic: bins and items are scanned in index order,
 * ties keep the first.  Keeps every bin non-empty.  Returns the new largest
 * bin. */
static double local_search(const double *enc, const double *llm, int n, int k, int *assign, int rounds)
{
    double *E = calloc((size_t)k, sizeof *E), *L = calloc((size_t)k, sizeof *L);
    int *cnt = calloc((size_t)k, sizeof *cnt), *members = malloc((size_t)n * sizeof *members);
    double mx = 0;
    if (!E || !L || !cnt || !members) {
        free(E), free(L), free(cnt), free(members);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        E[assign[i]] += enc[i];
        L[assign[i]] += llm[i];
        cnt[assign[i]]++;
    }
    for (int r = 0; r < rounds; r++) {
        int B = 0;
        for (int b = 1; b < k; b++)
            if (bin_cost(E, L, b) > bin_cost(E, L, B))
                B = b;
        double cur = bin_cost(E, L, B), best = cur;
        int bi = -1, bj = -1, bb = -1, nm = 0;
        for (int i = 0; i < n; i++)
            if (assign[i] == B)
                members[nm++] = i;
        for (int t = 0; t < nm; t++) {
            int i = members[t];
            for (int j = 0; j < n; j++) { /* swap i with j (j in another bin) */
                int b = assign[j];
                if (b == B)
                    continue;
                double de = enc[j] - enc[i], dl = llm[j] - llm[i];
                double v = fmax(fmax(E[B] + de, L[B] + dl), fmax(E[b] - de, L[b] - dl));
                if (v < best - 1e-12) {
                    best = v, bi = i, bj = j, bb = b;
                }
            }
            if (cnt[B] > 1)
                for (int b = 0; b < k; b++) { /* move i to bin b */
                    if (b == B)
                        continue;
                    double v = fmax(fmax(E[B] - enc[i], L[B] - llm[i]), fmax(E[b] + enc[i], L[b] + llm[i]));
                    if (v < best - 1e-12) {
                        best = v, bi = i, bj = -1, bb = b;
                    }
                }
        }
        if (bi < 0)
            break;
        assign[bi] = bb;
        E[B] -= enc[bi], L[B] -= llm[bi], E[bb] += enc[bi], L[bb] += llm[bi];
        if (bj >= 0) {
            assign[bj] = B;
            E[bb] -= enc[bj], L[bb] -= llm[bj], E[B] += enc[bj], L[B] += llm[bj];
        } else {
            cnt[B]--, cnt[bb]++;
        }
    }
    for (int b = 0; b < k; b++)
        mx = fmax(mx, bin_cost(E, L, b));
    free(E), free(L), free(cnt), free(members);
    return mx;
}

/* The MILP over the sorted items: column 1 is the makespan z >= lb, then
 * x_ib for bins b < min(i + 1, k) (item i goes to one of the first i + 1
 * bins: the symmetry cut); first[i] gets x_i0's column.  ia/ja/ar hold the
 * nonzeros (GLPK's 1-based triplets), sized by the caller. */
static glp_prob *build_lp(const double *enc, const double *llm, int n, int k, int ncols, double lb, int *first,
                          int *ia, int *ja, double *ar)
{
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
    return P;
}

/* The larger of floor and the busiest bin's encoder or LLM cost under
 * assign (-1: out of memory). */
static double makespan(const double *enc, const double *llm, int n, int k, const int *assign, double floor)
{
    double *E = calloc((size_t)k, sizeof *E), *L = calloc((size_t)k, sizeof *L), z = floor;
    if (!E || !L) {
        free(E), free(L);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        E[assign[i]] += enc[i];
        L[assign[i]] += llm[i];
    }
    for (int b = 0; b < k; b++)
        z = fmax(z, fmax(E[b], L[b]));
    free(E), free(L);
    return z;
}

/* The LP relaxation, then branch and bound from s's incumbent within its
 * node limit; the assignment, the objective, the bound (the open nodes'
 * best, not below lb) and whether it is proven optimal. */
static int solve(glp_prob *P, search *s, double lb, int *assign, double *best, double *bound, bool *optimal,
                 mm_err *err)
{
    glp_smcp sm;
    glp_init_smcp(&sm);
    sm.msg_lev = GLP_MSG_OFF;
    int lp = glp_simplex(P, &sm);
    if (lp != 0 || glp_get_status(P) != GLP_OPT)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "batching", "GLPK could not solve the LP relaxation (code %d)", lp);
    glp_iocp io;
    glp_init_iocp(&io);
    io.msg_lev = GLP_MSG_OFF;
    io.bt_tech = GLP_BT_DFS; /* dive for better incumbents */
    io.br_tech = GLP_BR_MFV; /* cheap per node: the default Driebeck-Tomlin
                              * test costs ~40% more per node here */
    io.mip_gap = MIP_GAP;
    io.cb_func = callback;
    io.cb_info = s;
    int ip = glp_intopt(P, &io);
    int st = glp_mip_status(P);
    if (!((ip == 0 || ip == GLP_ESTOP) && (st == GLP_OPT || st == GLP_FEAS)))
        return mm_err_set(err, MM_EINTERNAL, "", 0, "batching", "GLPK branch and bound failed (code %d, status %d)",
                          ip, st);
    int n = s->n, k = s->k;
    for (int i = 0; i < n; i++) {
        int nb = i + 1 < k ? i + 1 : k;
        for (int b = 0; b < nb; b++)
            if (glp_mip_col_val(P, s->col_of_first[i] + b) > 0.5)
                assign[i] = b;
    }
    *best = glp_mip_obj_val(P);
    *optimal = st == GLP_OPT && !s->stopped;
    *bound = *optimal ? *best : fmax(lb, s->open_bound);
    if (*bound > *best)
        *bound = *best;
    return 0;
}

int64_t mm_balance_ilp_columns(int n, int k)
{
    if (n < 1 || k < 1)
        return 1;
    int64_t N = n, K = k;
    return 1 + (N <= K ? N * (N + 1) / 2 : K * (K + 1) / 2 + (N - K) * K);
}

static int ilp_sorted(const double *enc, const double *llm, int n, int k, int64_t node_limit, int *assign,
                      double *best, double *bound, int64_t *nodes, bool *optimal, mm_err *err)
{
    *nodes = 0;
    *optimal = false;
    if (n < k || k < 1)
        return mm_err_set(err, MM_EINPUT, "", 0, "train.global_batch", "%d samples cannot fill %d bins", n, k);
    double lb = mm_balance_lower_bound(enc, llm, n, k);
    int *start = malloc((size_t)n * sizeof *start), *first = malloc((size_t)n * sizeof *first);
    int64_t cols = mm_balance_ilp_columns(n, k);
    int ncols = cols > MM_BALANCE_ILP_MAX_COLUMNS ? 1 : (int)cols; /* a program too large is never built */
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
    double z_start = makespan(enc, llm, n, k, start, lb);
    if (z_start < 0) {
        free(start), free(first), free(ia), free(ja), free(ar);
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    }

    /* the incumbent meets the lower bound (optimal), or is within MIP_GAP of
     * it: no search.  The bound stays what it is, so the gap is reported. */
    if (z_start <= lb || (z_start - lb) <= MIP_GAP * z_start) {
        memcpy(assign, start, (size_t)n * sizeof *assign);
        *best = z_start;
        *bound = z_start <= lb ? z_start : lb;
        *optimal = z_start <= lb;
        free(start), free(first), free(ia), free(ja), free(ar);
        return 0;
    }
    /* too large a program for its node limit to matter (batch.h): the
     * incumbent stands, the bound is lb */
    if (cols > MM_BALANCE_ILP_MAX_COLUMNS) {
        memcpy(assign, start, (size_t)n * sizeof *assign);
        *best = z_start;
        *bound = lb;
        free(start), free(first), free(ia), free(ja), free(ar);
        return 0;
    }
    glp_prob *P = build_lp(enc, llm, n, k, ncols, lb, first, ia, ja, ar);
    free(ia), free(ja), free(ar);

    search s = {.n = n, .k = k, .ncols = ncols, .col_of_first = first, .start = start,
                .z_start = z_start, .limit = node_limit, .open_bound = -HUGE_VAL};
    int rc = solve(P, &s, lb, assign, best, bound, optimal, err);
    *nodes = s.nodes;
    glp_delete_prob(P);
    glp_free_env();
    free(start), free(first);
    return rc;
}

typedef struct keyed_item {
    double key;
    int i;
} keyed_item;

static int by_key(const void *a, const void *b)
{
    const keyed_item *x = a, *y = b;
    if (x->key != y->key)
        return x->key > y->key ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* The public face: the incumbent is first improved by local search, then
 * the items are renumbered largest first (so that "x_ik = 0 for k > i"
 * pins the largest items to the first bins, a much stronger symmetry
 * break than the sample order), the program is solved and the answer
 * mapped back. */
int mm_balance_ilp(const double *enc, const double *llm, int n, int k, int64_t node_limit, int *assign,
                   double *best, double *bound, int64_t *nodes, bool *optimal, mm_err *err)
{
    *nodes = 0;
    *optimal = false;
    if (n < k || k < 1)
        return mm_err_set(err, MM_EINPUT, "", 0, "train.global_batch", "%d samples cannot fill %d bins", n, k);
    keyed_item *ord = malloc((size_t)n * sizeof *ord);
    double *pe = malloc((size_t)n * sizeof *pe), *pl = malloc((size_t)n * sizeof *pl);
    int *pa = malloc((size_t)n * sizeof *pa), *work = malloc((size_t)n * sizeof *work);
    if (!ord || !pe || !pl || !pa || !work) {
        free(ord), free(pe), free(pl), free(pa), free(work);
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    }
    memcpy(work, assign, (size_t)n * sizeof *work);
    int rc = 0;
    if (local_search(enc, llm, n, k, work, 4 * n) < 0)
        rc = mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    for (int i = 0; i < n; i++)
        ord[i] = (keyed_item){fmax(enc[i], llm[i]), i};
    qsort(ord, (size_t)n, sizeof *ord, by_key);
    for (int t = 0; t < n; t++) {
        pe[t] = enc[ord[t].i];
        pl[t] = llm[ord[t].i];
        pa[t] = work[ord[t].i];
    }
    if (rc == 0)
        rc = ilp_sorted(pe, pl, n, k, node_limit, pa, best, bound, nodes, optimal, err);
    if (rc == 0)
        for (int t = 0; t < n; t++)
            assign[ord[t].i] = pa[t];
    free(ord), free(pe), free(pl), free(pa), free(work);
    return rc;
}
