/* batch.c - the batching policies of batch.h (sequential, grouped, packed,
 * balanced, post-balance), LPT, and the per-bin aggregates the run layer
 * times.  The integer program of `balanced` lives in balance_ilp.c.
 * Not for: costs (the caller's callback), drawing samples, timing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "workload/batch.h"

const char *const mm_batch_policy_names[] = {"sequential", "grouped", "packed", "balanced",
                                             "post-balance", NULL};

/* Branch-and-bound nodes: ~10 ms a node for 512 samples x 64 bins (30K
 * binaries) and ~40 ms for 448 x 224 (100K) on one core in a debug build,
 * so 5 nodes keep a search near 100 ms (scripts/bench, bench_ilp).  On the
 * InternVL trace and the OneVision mix the local search and the L_j bound
 * close the gap to 0.1 % before any node is opened (balance_ilp.c). */
#define DEFAULT_NODE_LIMIT 5

typedef struct ctx {
    const mm_sample *s;
    int n;
    const mm_batch_opts *o;
    double *enc, *llm;
    int64_t *tok; /* LLM tokens per sample (packed: capped at seq_len) */
} ctx;

/* ---- LPT ------------------------------------------------------------- */

typedef struct keyed {
    double key;
    int i;
} keyed;

/* Descending key, then ascending index: a total order, so qsort (not
 * stable) still gives one answer. */
static int by_key_desc(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    if (x->key != y->key)
        return x->key > y->key ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

double mm_lpt_assign(const double *enc, const double *llm, int n, int k, int *assign)
{
    keyed *ord = malloc((size_t)(n > 0 ? n : 1) * sizeof *ord);
    double *E = calloc((size_t)k, sizeof *E), *L = calloc((size_t)k, sizeof *L);
    if (!ord || !E || !L) {
        free(ord);
        free(E);
        free(L);
        return -1;
    }
    for (int i = 0; i < n; i++)
        ord[i] = (keyed){fmax(enc[i], llm[i]), i};
    qsort(ord, (size_t)n, sizeof *ord, by_key_desc);
    for (int t = 0; t < n; t++) {
        int i = ord[t].i, best = 0;
        if (t < k) {
            best = t; /* the k largest open the k bins: no bin stays empty */
        } else {
            double bv = HUGE_VAL;
            for (int b = 0; b < k; b++) {
                double v = fmax(E[b] + enc[i], L[b] + llm[i]);
                if (v < bv) {
                    bv = v;
                    best = b;
                }
            }
        }
        assign[i] = best;
        E[best] += enc[i];
        L[best] += llm[i];
    }
    double mx = 0;
    for (int b = 0; b < k; b++)
        mx = fmax(mx, fmax(E[b], L[b]));
    free(ord);
    free(E);
    free(L);
    return mx;
}

/* LPT on one cost with a capacity: items[0..m) dealt to k bins of exactly
 * cap items each (m = k * cap), heaviest first, each to the open bin of
 * least load (ties: the lower bin).  bin_of[item] = bin. */
static int lpt_capacity(const double *cost, const int *items, int m, int k, int cap, int *bin_of)
{
    keyed *ord = malloc((size_t)(m > 0 ? m : 1) * sizeof *ord);
    double *load = calloc((size_t)k, sizeof *load);
    int *cnt = calloc((size_t)k, sizeof *cnt);
    if (!ord || !load || !cnt) {
        free(ord);
        free(load);
        free(cnt);
        return -1;
    }
    for (int t = 0; t < m; t++)
        ord[t] = (keyed){cost[items[t]], items[t]};
    qsort(ord, (size_t)m, sizeof *ord, by_key_desc);
    for (int t = 0; t < m; t++) {
        int best = -1;
        for (int b = 0; b < k; b++)
            if (cnt[b] < cap && (best < 0 || load[b] < load[best]))
                best = b;
        bin_of[ord[t].i] = best;
        load[best] += ord[t].key;
        cnt[best]++;
    }
    free(ord);
    free(load);
    free(cnt);
    return 0;
}

/* ---- plans ------------------------------------------------------------ */

/* Builds bins from an assignment: bin g (rank-major numbering, rank r has
 * per_rank[r] bins) receives the samples i with assign[i] == g, in the
 * order they appear in `order` (NULL: index order).  `store` has n ints. */
static int fill_bins(const ctx *c, int dp, const int *per_rank, const int *assign, const int *order,
                     int *store, mm_bin **bins_out, int *n_bins_out, int **rf_out, mm_err *err)
{
    int nb = 0;
    int *rf = malloc((size_t)(dp + 1) * sizeof *rf);
    if (!rf)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    for (int r = 0; r < dp; r++) {
        rf[r] = nb;
        nb += per_rank[r];
    }
    rf[dp] = nb;
    mm_bin *bins = calloc((size_t)(nb > 0 ? nb : 1), sizeof *bins);
    int *fillpos = calloc((size_t)(nb > 0 ? nb : 1), sizeof *fillpos);
    if (!bins || !fillpos) {
        free(rf);
        free(bins);
        free(fillpos);
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    }
    for (int r = 0; r < dp; r++)
        for (int g = rf[r]; g < rf[r + 1]; g++) {
            bins[g].rank = r;
            bins[g].micro = g - rf[r];
        }
    for (int i = 0; i < c->n; i++)
        bins[assign[i]].n++;
    int off = 0;
    for (int g = 0; g < nb; g++) {
        bins[g].idx = store + off;
        off += bins[g].n;
    }
    const mm_token_model *tm = &c->o->tokens;
    for (int t = 0; t < c->n; t++) {
        int i = order ? order[t] : t;
        mm_bin *b = &bins[assign[i]];
        const mm_sample *s = &c->s[i];
        b->idx[fillpos[assign[i]]++] = i;
        b->llm_tokens += c->tok[i];
        if (c->tok[i] > b->max_tokens)
            b->max_tokens = c->tok[i];
        b->sum_sq_tokens += (double)c->tok[i] * (double)c->tok[i];
        b->text_tokens += s->text_tokens;
        b->images += s->images;
        b->tiles += s->tiles;
        b->frames += s->frames;
        b->audio_clips += mm_sample_audio_clips(s, tm);
        b->audio_s += s->audio_s;
        b->enc_cost += c->enc[i];
        b->llm_cost += c->llm[i];
    }
    free(fillpos);
    *bins_out = bins;
    *n_bins_out = nb;
    *rf_out = rf;
    return 0;
}

static double max_bin(const mm_bin *b, int nb, bool enc, bool llm)
{
    double mx = 0;
    for (int g = 0; g < nb; g++) {
        if (enc)
            mx = fmax(mx, b[g].enc_cost);
        if (llm)
            mx = fmax(mx, b[g].llm_cost);
    }
    return mx;
}

static double lower_bound(const ctx *c, int bins) { return mm_balance_lower_bound(c->enc, c->llm, c->n, bins); }

/* Megatron's order: chunk q of b consecutive samples goes to micro-batch
 * q / dp of rank q % dp; g = rank * m + micro. */
static void sequential_assign(int n, int dp, int m, int *assign)
{
    int b = n / (dp * m);
    for (int i = 0; i < n; i++) {
        int q = i / b;
        assign[i] = (q % dp) * m + q / dp;
    }
}

/* LLaVA's split_to_even_chunks: items (sorted by length, descending) to
 * the chunk with the least length; a chunk is closed when it holds
 * len/k items; when len % k != 0, strided chunks instead. */
static void even_chunks(const int *items, int len, const int64_t *tok, int k, int *out)
{
    if (len % k) {
        int pos = 0;
        for (int ch = 0; ch < k; ch++)
            for (int t = ch; t < len; t += k)
                out[pos++] = items[t];
        return;
    }
    int per = len / k, fill[1024] = {0};
    double load[1024];
    int *chunks = out;
    for (int ch = 0; ch < k; ch++)
        load[ch] = 0;
    for (int t = 0; t < len; t++) {
        int best = 0;
        for (int ch = 1; ch < k; ch++)
            if (load[ch] < load[best])
                best = ch;
        chunks[best * per + fill[best]++] = items[t];
        load[best] += (double)tok[items[t]];
        if (fill[best] == per)
            load[best] = HUGE_VAL;
    }
}

/* get_length_grouped_indices without the random permutation (the sample
 * order is already random): mega-batches of `mega` items, each sorted by
 * length (descending, ties by index) and split into even chunks. */
static void length_grouped(const ctx *c, int *items, int len, int mega, int k, int *out)
{
    keyed *tmp = malloc((size_t)(mega > 0 ? mega : 1) * sizeof *tmp);
    int *sorted = malloc((size_t)(mega > 0 ? mega : 1) * sizeof *sorted);
    for (int st = 0; st < len && tmp && sorted; st += mega) {
        int l = len - st < mega ? len - st : mega;
        for (int t = 0; t < l; t++)
            tmp[t] = (keyed){(double)c->tok[items[st + t]], items[st + t]};
        qsort(tmp, (size_t)l, sizeof *tmp, by_key_desc);
        for (int t = 0; t < l; t++)
            sorted[t] = tmp[t].i;
        even_chunks(sorted, l, c->tok, k, out + st);
    }
    free(tmp);
    free(sorted);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* LLaVA get_modality_length_grouped_indices (haotian-liu/LLaVA
 * llava/train/llava_trainer.py), mega-batches kept in order instead of
 * randperm: the full multimodal mega-batches, the full text ones, then the
 * last of each joined and sorted by index.  order = the flattened list;
 * chunk q of b items goes to micro q / dp of rank q % dp (one mega-batch
 * per step, rank r takes chunk r, as HF Accelerate shards batches). */
static int grouped_order(const ctx *c, int dp, int b, int *order, mm_err *err)
{
    int n = c->n, mega = dp * b;
    int *mm = malloc((size_t)n * sizeof *mm), *tx = malloc((size_t)n * sizeof *tx);
    int *gm = malloc((size_t)n * sizeof *gm), *gt = malloc((size_t)n * sizeof *gt);
    if (!mm || !tx || !gm || !gt) {
        free(mm), free(tx), free(gm), free(gt);
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    }
    int nm = 0, nt = 0;
    for (int i = 0; i < n; i++) {
        if (mm_sample_modality(&c->s[i]) == MM_MOD_TEXT)
            tx[nt++] = i;
        else
            mm[nm++] = i;
    }
    if (nm == 0 || nt == 0) {
        length_grouped(c, nm ? mm : tx, n, mega, dp, order);
    } else {
        length_grouped(c, mm, nm, mega, dp, gm);
        length_grouped(c, tx, nt, mega, dp, gt);
        int last_m = ((nm - 1) / mega) * mega, last_t = ((nt - 1) / mega) * mega, pos = 0;
        for (int t = 0; t < last_m; t++)
            order[pos++] = gm[t];
        for (int t = 0; t < last_t; t++)
            order[pos++] = gt[t];
        int extra = pos;
        for (int t = last_m; t < nm; t++)
            order[pos++] = gm[t];
        for (int t = last_t; t < nt; t++)
            order[pos++] = gt[t];
        qsort(order + extra, (size_t)(pos - extra), sizeof *order, cmp_int);
    }
    free(mm), free(tx), free(gm), free(gt);
    return 0;
}

static int form_packed(const ctx *c, mm_batch_plan *p, int *assign, mm_err *err)
{
    const mm_batch_opts *o = c->o;
    int n = c->n, q = n / o->dp;
    /* per rank: first-fit decreasing of its q samples into seq_len */
    int *per_rank = calloc((size_t)o->dp, sizeof *per_rank);
    keyed *ord = malloc((size_t)q * sizeof *ord);
    int64_t *room = malloc((size_t)q * sizeof *room); /* at most q packs per rank */
    int *pack_of = malloc((size_t)n * sizeof *pack_of);
    if (!per_rank || !ord || !room || !pack_of) {
        free(per_rank), free(ord), free(room), free(pack_of);
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    }
    int base = 0;
    for (int r = 0; r < o->dp; r++) {
        for (int t = 0; t < q; t++)
            ord[t] = (keyed){(double)c->tok[r * q + t], r * q + t};
        qsort(ord, (size_t)q, sizeof *ord, by_key_desc);
        int packs = 0;
        for (int t = 0; t < q; t++) {
            int i = ord[t].i, k = 0;
            while (k < packs && room[k] < c->tok[i])
                k++;
            if (k == packs)
                room[packs++] = o->seq_len;
            room[k] -= c->tok[i];
            pack_of[i] = k;
        }
        for (int t = 0; t < q; t++)
            assign[r * q + t] = base + pack_of[r * q + t];
        per_rank[r] = packs;
        base += packs;
    }
    int rc = fill_bins(c, o->dp, per_rank, assign, NULL, p->store_, &p->bins, &p->n_bins, &p->rank_first, err);
    free(per_rank), free(ord), free(room), free(pack_of);
    return rc;
}

static int form_post_balance(const ctx *c, mm_batch_plan *p, int *assign, mm_err *err)
{
    const mm_batch_opts *o = c->o;
    int n = c->n, dp = o->dp, m = o->micro_batches, q = n / dp, b = q / m;
    int *origin = malloc((size_t)n * sizeof *origin), *rank_of = malloc((size_t)n * sizeof *rank_of);
    int *items = malloc((size_t)n * sizeof *items), *micro_of = malloc((size_t)n * sizeof *micro_of);
    int *enc_rank = malloc((size_t)n * sizeof *enc_rank), *enc_assign = malloc((size_t)n * sizeof *enc_assign);
    int *per_rank = malloc((size_t)dp * sizeof *per_rank);
    int rc = 0;
    if (!origin || !rank_of || !items || !micro_of || !enc_rank || !enc_assign || !per_rank) {
        rc = mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
        goto out;
    }
    sequential_assign(n, dp, m, assign);
    for (int i = 0; i < n; i++)
        origin[i] = assign[i] / m;
    for (int r = 0; r < dp; r++)
        per_rank[r] = m;
    /* phase 0: encoder (enc cost), phase 1: LLM (llm cost) */
    for (int phase = 0; phase < 2 && !rc; phase++) {
        const double *cost = phase == 0 ? c->enc : c->llm;
        int *out = phase == 0 ? enc_assign : assign;
        for (int i = 0; i < n; i++)
            items[i] = i;
        if (lpt_capacity(cost, items, n, dp, q, rank_of)) {
            rc = mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
            break;
        }
        for (int r = 0; r < dp && !rc; r++) {
            int cnt = 0;
            for (int i = 0; i < n; i++)
                if (rank_of[i] == r)
                    items[cnt++] = i;
            if (lpt_capacity(cost, items, cnt, m, b, micro_of))
                rc = mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
        }
        for (int i = 0; i < n; i++)
            out[i] = rank_of[i] * m + micro_of[i];
        if (phase == 0)
            memcpy(enc_rank, rank_of, (size_t)n * sizeof *enc_rank);
    }
    if (rc)
        goto out;
    p->a2a_enc_bytes = calloc((size_t)dp * dp, sizeof *p->a2a_enc_bytes);
    p->a2a_llm_bytes = calloc((size_t)dp * dp, sizeof *p->a2a_llm_bytes);
    if (!p->a2a_enc_bytes || !p->a2a_llm_bytes) {
        rc = mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
        goto out;
    }
    for (int i = 0; i < n; i++) {
        const mm_sample *s = &c->s[i];
        int e = enc_rank[i], l = assign[i] / m;
        double inputs = (double)s->tiles + s->frames + mm_sample_audio_clips(s, &o->tokens);
        if (origin[i] != e) {
            p->moved_enc++;
            double by = inputs * o->enc_bytes_per_input;
            p->a2a_enc_bytes[origin[i] * dp + e] += by;
            p->a2a_enc_total += by;
        }
        if (e != l) {
            p->moved_llm++;
            double by = (double)mm_sample_mm_tokens(s, &o->tokens) * o->bytes_per_token;
            p->a2a_llm_bytes[e * dp + l] += by;
            p->a2a_llm_total += by;
        }
    }
    rc = fill_bins(c, dp, per_rank, enc_assign, NULL, p->store_ + n, &p->enc_bins, &p->n_enc_bins,
                   &p->enc_rank_first, err);
    if (!rc)
        rc = fill_bins(c, dp, per_rank, assign, NULL, p->store_, &p->bins, &p->n_bins, &p->rank_first, err);
out:
    free(origin), free(rank_of), free(items), free(micro_of), free(enc_rank), free(enc_assign), free(per_rank);
    return rc;
}

/* The bins of a balanced assignment are even, but a DP rank runs m of them
 * one after the other, so which bins share a rank matters too: deal the
 * bins, largest first, to the rank with the least work that still has a
 * free micro-batch slot (LPT over ranks with m slots each; ties to the
 * lower rank, so it stays deterministic), and renumber the assignment. */
static int deal_bins_to_ranks(const ctx *c, int n, int dp, int m, int *assign)
{
    int k = dp * m;
    double *cost = calloc((size_t)k, sizeof *cost), *E = calloc((size_t)k, sizeof *E);
    double *load = calloc((size_t)dp, sizeof *load);
    int *order = malloc((size_t)k * sizeof *order), *used = calloc((size_t)dp, sizeof *used);
    int *newid = malloc((size_t)k * sizeof *newid);
    int rc = cost && E && load && order && used && newid ? 0 : -1;
    for (int i = 0; rc == 0 && i < n; i++) {
        E[assign[i]] += c->enc[i];
        cost[assign[i]] += c->llm[i];
    }
    for (int g = 0; rc == 0 && g < k; g++) {
        cost[g] = fmax(cost[g], E[g]);
        order[g] = g;
    }
    /* insertion sort by cost, descending, stable (k is a few thousand) */
    for (int a = 1; rc == 0 && a < k; a++) {
        int x = order[a], b = a;
        while (b > 0 && cost[order[b - 1]] < cost[x]) {
            order[b] = order[b - 1];
            b--;
        }
        order[b] = x;
    }
    for (int q = 0; rc == 0 && q < k; q++) {
        int best = -1;
        for (int r = 0; r < dp; r++)
            if (used[r] < m && (best < 0 || load[r] < load[best]))
                best = r;
        newid[order[q]] = best * m + used[best]++;
        load[best] += cost[order[q]];
    }
    for (int i = 0; rc == 0 && i < n; i++)
        assign[i] = newid[assign[i]];
    free(cost), free(E), free(load), free(order), free(used), free(newid);
    return rc;
}

static int form_balanced(const ctx *c, mm_batch_plan *p, int *assign, mm_err *err)
{
    const mm_batch_opts *o = c->o;
    int n = c->n, m = o->micro_batches, k = o->dp * m;
    double lpt = mm_lpt_assign(c->enc, c->llm, n, k, assign);
    if (lpt < 0)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    p->lpt_max_bin_cost = lpt;
    /* The sequential split is a candidate too, so balanced never loses to it. */
    if (n % k == 0) {
        int *seq = malloc((size_t)n * sizeof *seq);
        double *E = calloc((size_t)k, sizeof *E), *L = calloc((size_t)k, sizeof *L);
        if (!seq || !E || !L) {
            free(seq), free(E), free(L);
            return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
        }
        sequential_assign(n, o->dp, m, seq);
        for (int i = 0; i < n; i++) {
            E[seq[i]] += c->enc[i];
            L[seq[i]] += c->llm[i];
        }
        double sv = 0;
        for (int g = 0; g < k; g++)
            sv = fmax(sv, fmax(E[g], L[g]));
        if (sv < lpt)
            memcpy(assign, seq, (size_t)n * sizeof *assign);
        free(seq), free(E), free(L);
    }
    int64_t limit = o->ilp_node_limit ? o->ilp_node_limit : DEFAULT_NODE_LIMIT;
    if (limit > 0) {
        double best, bound;
        int rc = mm_balance_ilp(c->enc, c->llm, n, k, limit, assign, &best, &bound, &p->ilp_nodes,
                                &p->ilp_optimal, err);
        if (rc)
            return rc;
        p->ilp_used = true;
        p->lower_bound = bound;
        p->ilp_columns = mm_balance_ilp_columns(n, k);
        p->ilp_too_large = p->ilp_columns > MM_BALANCE_ILP_MAX_COLUMNS;
    }
    if (deal_bins_to_ranks(c, n, o->dp, m, assign))
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    int *per_rank = malloc((size_t)o->dp * sizeof *per_rank);
    if (!per_rank)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    for (int r = 0; r < o->dp; r++)
        per_rank[r] = m;
    int rc = fill_bins(c, o->dp, per_rank, assign, NULL, p->store_, &p->bins, &p->n_bins, &p->rank_first, err);
    free(per_rank);
    return rc;
}

/* Padded lengths of every LLM bin (batch.h, mm_padding), and the plan's
 * totals.  Packed sequences are varlen: their padded length is their own. */
static void pad_bins(const ctx *c, mm_batch_plan *p)
{
    const mm_batch_opts *o = c->o;
    for (int g = 0; g < p->n_bins; g++) {
        mm_bin *b = &p->bins[g];
        double len = (double)b->max_tokens;
        if (o->policy == MM_BP_PACKED || o->padding == MM_PAD_NONE || b->n == 0) {
            b->padded_tokens = b->llm_tokens;
            b->padded_sum_sq = b->sum_sq_tokens;
        } else {
            if (o->padding == MM_PAD_MAX_LENGTH && o->pad_to > 0 && (double)o->pad_to > len)
                len = (double)o->pad_to;
            b->padded_tokens = (int64_t)len * b->n;
            b->padded_sum_sq = len * len * b->n;
        }
        p->tokens_total += b->llm_tokens;
        p->padded_total += b->padded_tokens;
    }
}

double mm_batch_padded_fraction(const mm_batch_plan *p)
{
    return p->padded_total > 0 ? (double)(p->padded_total - p->tokens_total) / (double)p->padded_total : 0.0;
}

/* As drawn: the LLM's bins in rank-major order, cut into k consecutive runs
 * of n/k samples (the first n % k runs one more).  Fills enc_of[sample]. */
static void enc_ranks_as_drawn(const mm_batch_plan *p, int k, int *enc_of)
{
    int n = p->n_samples, base = n / k, extra = n % k, r = 0, cnt = 0;
    for (int g = 0; g < p->n_bins; g++)
        for (int t = 0; t < p->bins[g].n; t++) {
            while (r < k - 1 && cnt == base + (r < extra)) {
                r++;
                cnt = 0;
            }
            enc_of[p->bins[g].idx[t]] = r;
            cnt++;
        }
}

/* Post-balance's encoder phase over k encoder ranks: LPT on the encoder
 * cost, ceil(n/k) samples per rank; the a2a matrices become k x k (raw
 * inputs, as-drawn rank -> encoding rank) and k x dp (embeddings, encoding
 * rank -> LLM rank, counted where the encoding rank's home LLM rank
 * k*dp/enc_ranks is another). */
static int enc_ranks_post_balance(const ctx *c, mm_batch_plan *p, int *enc_of, mm_err *err)
{
    const mm_batch_opts *o = c->o;
    int n = c->n, k = o->enc_ranks, dp = o->dp;
    int *items = malloc((size_t)n * sizeof *items), *drawn = malloc((size_t)n * sizeof *drawn);
    int *llm_of = malloc((size_t)n * sizeof *llm_of);
    free(p->a2a_enc_bytes);
    free(p->a2a_llm_bytes);
    p->a2a_enc_bytes = calloc((size_t)k * k, sizeof *p->a2a_enc_bytes);
    p->a2a_llm_bytes = calloc((size_t)k * dp, sizeof *p->a2a_llm_bytes);
    int rc = items && drawn && llm_of && p->a2a_enc_bytes && p->a2a_llm_bytes ? 0 : -1;
    for (int i = 0; rc == 0 && i < n; i++)
        items[i] = i;
    if (rc == 0)
        rc = lpt_capacity(c->enc, items, n, k, (n + k - 1) / k, enc_of);
    if (rc) {
        free(items), free(drawn), free(llm_of);
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    }
    enc_ranks_as_drawn(p, k, drawn);
    for (int g = 0; g < p->n_bins; g++)
        for (int t = 0; t < p->bins[g].n; t++)
            llm_of[p->bins[g].idx[t]] = p->bins[g].rank;
    p->a2a_enc_total = p->a2a_llm_total = 0;
    p->moved_enc = p->moved_llm = 0;
    for (int i = 0; i < n; i++) {
        const mm_sample *s = &c->s[i];
        int e = enc_of[i], home = (int)((int64_t)e * dp / k);
        double inputs = (double)s->tiles + s->frames + mm_sample_audio_clips(s, &o->tokens);
        if (drawn[i] != e) {
            p->moved_enc++;
            p->a2a_enc_bytes[drawn[i] * k + e] += inputs * o->enc_bytes_per_input;
            p->a2a_enc_total += inputs * o->enc_bytes_per_input;
        }
        if (home != llm_of[i]) {
            double by = (double)mm_sample_mm_tokens(s, &o->tokens) * o->bytes_per_token;
            p->moved_llm++;
            p->a2a_llm_bytes[e * dp + llm_of[i]] += by;
            p->a2a_llm_total += by;
        }
    }
    free(items), free(drawn), free(llm_of);
    return 0;
}

/* One bin per encoder DP rank from enc_of[sample]; samples in index order. */
static int enc_rank_bins(const ctx *c, mm_batch_plan *p, const int *enc_of, mm_err *err)
{
    int k = c->o->enc_ranks, *ones = malloc((size_t)k * sizeof *ones);
    if (!ones)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    for (int r = 0; r < k; r++)
        ones[r] = 1;
    int *rf = NULL, nb = 0;
    int rc = fill_bins(c, k, ones, enc_of, NULL, p->store_ + 2 * c->n, &p->enc_rank_bins, &nb, &rf, err);
    p->n_enc_ranks = rc ? 0 : k;
    free(rf);
    free(ones);
    return rc;
}

static void default_cost(const mm_sample *s, const mm_token_model *tm, void *unused, double *enc, double *llm)
{
    (void)unused;
    *enc = (double)mm_sample_mm_tokens(s, tm);
    *llm = (double)mm_sample_llm_tokens(s, tm);
}

static int check_opts(int n, const mm_batch_opts *o, mm_err *err)
{
    if (o->policy < MM_BP_SEQUENTIAL || o->policy > MM_BP_POST_BALANCE)
        return mm_err_set(err, MM_EINPUT, "", 0, "batching", "unknown batching policy %d", (int)o->policy);
    if (o->dp < 1 || o->dp > 1 << 20)
        return mm_err_set(err, MM_EINPUT, "", 0, "parallel.llm.dp", "dp must be >= 1, got %d", o->dp);
    if (n < 1)
        return mm_err_set(err, MM_EINPUT, "", 0, "train.global_batch", "no samples in the global batch");
    if (o->padding < MM_PAD_NONE || o->padding > MM_PAD_MAX_LENGTH)
        return mm_err_set(err, MM_EINPUT, "", 0, "train.padding", "unknown padding mode %d", (int)o->padding);
    if (o->padding == MM_PAD_MAX_LENGTH && o->policy != MM_BP_PACKED && o->pad_to < 1)
        return mm_err_set(err, MM_EINPUT, "", 0, "train.pad_to", "max_length padding needs a length >= 1, got %lld",
                          (long long)o->pad_to);
    if (o->enc_ranks < 0 || o->enc_ranks > n)
        return mm_err_set(err, MM_EINPUT, "", 0, "train.global_batch",
                          "%d samples cannot feed %d encoder ranks", n, o->enc_ranks);
    if (o->policy == MM_BP_PACKED) {
        if (o->seq_len < 1)
            return mm_err_set(err, MM_EINPUT, "", 0, "train.seq_len", "packing needs seq_len >= 1, got %lld",
                              (long long)o->seq_len);
        if (n % o->dp)
            return mm_err_set(err, MM_EINPUT, "", 0, "train.global_batch",
                              "%d samples do not split evenly over dp = %d ranks", n, o->dp);
        return 0;
    }
    if (o->micro_batches < 1)
        return mm_err_set(err, MM_EINPUT, "", 0, "train.micro_batch", "micro-batches per rank must be >= 1, got %d",
                          o->micro_batches);
    int64_t k = (int64_t)o->dp * o->micro_batches;
    if (o->policy == MM_BP_BALANCED) {
        if (n < k)
            return mm_err_set(err, MM_EINPUT, "", 0, "train.global_batch",
                              "%d samples cannot fill dp x micro-batches = %lld bins", n, (long long)k);
        return 0;
    }
    if (n % k)
        return mm_err_set(err, MM_EINPUT, "", 0, "train.global_batch",
                          "%d samples are not divisible by dp x micro-batches = %d x %d", n, o->dp,
                          o->micro_batches);
    return 0;
}

/* sequential and grouped: every DP rank gets its m micro-batches, of the
 * samples as drawn (sequential) or sorted into groups of similar length
 * (grouped); *order (the caller frees it) holds grouped's order. */
static int form_in_order(const ctx *c, mm_batch_plan *p, int *assign, int **order, mm_err *err)
{
    const mm_batch_opts *o = c->o;
    int n = c->n, m = o->micro_batches, rc = 0;
    int *pr = malloc((size_t)o->dp * sizeof *pr);
    if (!pr)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    for (int r = 0; r < o->dp; r++)
        pr[r] = m;
    if (o->policy == MM_BP_SEQUENTIAL) {
        sequential_assign(n, o->dp, m, assign);
    } else {
        int b = n / (o->dp * m);
        *order = malloc((size_t)n * sizeof **order);
        if (!*order || o->dp > 1024)
            rc = mm_err_set(err, *order ? MM_EINPUT : MM_EINTERNAL, "", 0, "parallel.llm.dp",
                            "grouped batching supports dp <= 1024");
        else
            rc = grouped_order(c, o->dp, b, *order, err);
        for (int t = 0; t < n && !rc; t++) {
            int q = t / b;
            assign[(*order)[t]] = (q % o->dp) * m + q / o->dp;
        }
    }
    if (!rc)
        rc = fill_bins(c, o->dp, pr, assign, *order, p->store_, &p->bins, &p->n_bins, &p->rank_first, err);
    free(pr);
    return rc;
}

/* The encoder ranks' bins (enc_ranks > 0): post-balance's own assignment,
 * else each sample on the rank its LLM replica's position gives. */
static int form_enc_ranks(const ctx *c, mm_batch_plan *p, mm_err *err)
{
    int *enc_of = malloc((size_t)c->n * sizeof *enc_of);
    if (!enc_of)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    int rc = 0;
    if (c->o->policy == MM_BP_POST_BALANCE)
        rc = enc_ranks_post_balance(c, p, enc_of, err);
    else
        enc_ranks_as_drawn(p, c->o->enc_ranks, enc_of);
    if (!rc)
        rc = enc_rank_bins(c, p, enc_of, err);
    free(enc_of);
    return rc;
}

int mm_batch_form(const mm_sample *s, int n, const mm_batch_opts *o, mm_batch_plan *p, mm_err *err)
{
    memset(p, 0, sizeof *p);
    int rc = check_opts(n, o, err);
    if (rc)
        return rc;
    p->policy = o->policy;
    p->dp = o->dp;
    p->n_samples = n;
    ctx c = {.s = s, .n = n, .o = o};
    c.enc = malloc((size_t)n * sizeof *c.enc);
    c.llm = malloc((size_t)n * sizeof *c.llm);
    c.tok = malloc((size_t)n * sizeof *c.tok);
    int *assign = malloc((size_t)n * sizeof *assign);
    int *order = NULL;
    p->store_ = malloc((size_t)n * 3 * sizeof *p->store_);
    if (!c.enc || !c.llm || !c.tok || !assign || !p->store_) {
        rc = mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
        goto out;
    }
    mm_sample_cost_fn cost = o->cost ? o->cost : default_cost;
    for (int i = 0; i < n; i++) {
        cost(&s[i], &o->tokens, o->cost_ctx, &c.enc[i], &c.llm[i]);
        c.tok[i] = mm_sample_llm_tokens(&s[i], &o->tokens);
        if (o->policy == MM_BP_PACKED && c.tok[i] > o->seq_len) {
            c.tok[i] = o->seq_len;
            p->truncated++;
        }
    }
    switch (o->policy) {
    case MM_BP_SEQUENTIAL:
    case MM_BP_GROUPED:
        rc = form_in_order(&c, p, assign, &order, err);
        break;
    case MM_BP_PACKED:
        rc = form_packed(&c, p, assign, err);
        break;
    case MM_BP_BALANCED:
        rc = form_balanced(&c, p, assign, err);
        break;
    case MM_BP_POST_BALANCE:
        rc = form_post_balance(&c, p, assign, err);
        break;
    }
    if (!rc)
        pad_bins(&c, p);
    if (!rc && o->enc_ranks > 0)
        rc = form_enc_ranks(&c, p, err);
    if (!rc) {
        bool post = o->policy == MM_BP_POST_BALANCE;
        p->max_bin_cost = post ? fmax(max_bin(p->enc_bins, p->n_enc_bins, true, false),
                                      max_bin(p->bins, p->n_bins, false, true))
                               : max_bin(p->bins, p->n_bins, true, true);
        p->lower_bound = fmax(p->lower_bound, lower_bound(&c, p->n_bins));
        if (p->lower_bound > p->max_bin_cost)
            p->lower_bound = p->max_bin_cost;
        p->gap = p->max_bin_cost > 0 ? (p->max_bin_cost - p->lower_bound) / p->max_bin_cost : 0;
    }
out:
    free(c.enc), free(c.llm), free(c.tok), free(assign), free(order);
    if (rc)
        mm_batch_plan_free(p);
    return rc;
}

void mm_batch_plan_free(mm_batch_plan *p)
{
    free(p->bins);
    free(p->rank_first);
    free(p->enc_bins);
    free(p->enc_rank_first);
    free(p->enc_rank_bins);
    free(p->a2a_enc_bytes);
    free(p->a2a_llm_bytes);
    free(p->store_);
    memset(p, 0, sizeof *p);
}
