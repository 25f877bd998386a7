/* swap.c - ATOM's model swapping on one GPU (swap.h).
 *
 * The schedule: a micro-batch runs the forward over groups 1..n and the
 * backward over n..1; the groups run in turn on one stream while a second
 * stream moves the next group's weights in (H2D) and the previous
 * backward group's gradients out (D2H) to the host, where the optimizer
 * keeps the model (ATOM's model swapping, arXiv 2403.10504: two CUDA
 * streams, one executing the current sub-model and one prefetching the
 * next; the last forward sub-model is not swapped out, so the backward
 * starts on it).  A group that follows itself (the forward's last and the
 * backward's first; the backward's last and the next micro-batch's first)
 * needs no load (a single group, the whole model, is loaded once and
 * sends its accumulated gradients once a step).  PCIe is full duplex, so the loads and the gradients out
 * run side by side.  With c_k task k's compute, in_k its load and out_k
 * its gradients out (0 in the forward), the step takes
 *
 *   T = in_1 + sum_k max(c_k, in_{k+1}, out_{k-1}) + out_K
 *
 * (the first load and the last gradients exposed; each task as long as
 * its compute or the transfers it hides, whichever is longer).  With
 * uniform groups and one micro-batch this is t_w + n (c_f + c_b) + t_g
 * when compute covers the transfers, and (n + 1) t_w + c_f + n t_g when
 * the link is the bottleneck (tests/test_atom.c).
 *
 * The groups are sized by memory: g layers each, as many as two groups'
 * weights and gradients fit in what the activations and the runtime leave
 * (ATOM sizes its sub-models by static analysis so that adjacent ones'
 * compute and load times match within the GPU's memory; here the largest
 * group that fits, as large as ATOM's sub-models may be).  In the backward
 * the two slots hold group k's weights and gradients, group k+1's weights
 * coming in and group k-1's gradients going out: two groups' weights and
 * gradients.  Known limit: smaller groups would expose less here (the
 * first load and the last gradients out grow with g), since a transfer's
 * fixed costs, which keep real sub-models large, are not modeled.  The
 * layers' parameters are taken as uniform (the embedding and head spread
 * over them). */
#include "cost/swap.h"

#include <math.h>
#include <string.h>

#include "hw/cluster.h"
#include "hw/wan.h"
#include "model/llm.h"

double mm_sim_swap_link_bw(const mm_sim *sim)
{
    const mm_cluster *c = sim->cluster;
    int gpus = sim->sc.parallel.llm.lay.dp > 0 ? sim->sc.parallel.llm.lay.dp : 1;
    if (gpus > c->gpus_per_node)
        gpus = c->gpus_per_node;
    int sw = c->pcie_switches > 0 ? c->pcie_switches : gpus; /* none given: a link each */
    double share = ceil((double)gpus / sw); /* GPUs swapping behind one switch */
    return c->pcie_bw * c->pcie_eff / (share >= 1 ? share : 1);
}

int mm_sim_swap(const mm_sim *sim, const mm_mem_rank *full, double room_bytes, double fwd_s, double bwd_s, int m,
                mm_swap *out)
{
    memset(out, 0, sizeof *out);
    out->on = true;
    int L = (int)sim->llm->layers;
    out->layers = L;
    double P = full->params > 0 ? full->params : 1;
    out->layer_weight_bytes = full->weights / P * full->params / L;
    out->layer_grad_bytes = full->grads / P * full->params / L;
    double per = out->layer_weight_bytes + out->layer_grad_bytes;
    double g = per > 0 ? floor(room_bytes / (2 * per)) : L;
    if (!(g >= 1)) /* not even two layers fit beside the activations */
        return -1;
    out->group_layers = g >= L ? L : (int)g;
    out->groups = (L + out->group_layers - 1) / out->group_layers;
    out->resident_bytes = fmin(2.0 * out->group_layers, L) * per;
    out->link_bw = mm_sim_swap_link_bw(sim);
    out->load_s = out->group_layers * out->layer_weight_bytes / out->link_bw;
    out->grads_out_s = out->group_layers * out->layer_grad_bytes / out->link_bw;
    out->compute_s = m * (fwd_s + bwd_s);
    if (m <= 0)
        return 0;
    /* the task list of the step: per micro-batch F 1..n, B n..1 */
    int n = out->groups, K = m * 2 * n;
    double T = 0, prev_out = 0;
    int prev_group = -1;
    for (int k = 0; k < K; k++) {
        int j = k % (2 * n), grp = j < n ? j : 2 * n - 1 - j;
        bool bwd = j >= n;
        double size = grp == n - 1 ? L - (n - 1) * out->group_layers : out->group_layers;
        double c = (bwd ? bwd_s : fwd_s) * size / L;
        double in = grp == prev_group ? 0 : size * out->layer_weight_bytes / out->link_bw;
        if (k == 0)
            T += in; /* the first load is exposed */
        /* the next task's load runs during this one */
        double in_next = 0;
        if (k + 1 < K) {
            int j1 = (k + 1) % (2 * n), g1 = j1 < n ? j1 : 2 * n - 1 - j1;
            double s1 = g1 == n - 1 ? L - (n - 1) * out->group_layers : out->group_layers;
            in_next = g1 == grp ? 0 : s1 * out->layer_weight_bytes / out->link_bw;
        }
        T += fmax(c, fmax(in_next, prev_out));
        /* one group never leaves the GPU: its gradients accumulate there
         * and go out once, after the step's last backward */
        prev_out = bwd && (n > 1 || k == K - 1) ? size * out->layer_grad_bytes / out->link_bw : 0;
        prev_group = grp;
    }
    T += prev_out; /* the last gradients out, before the host's optimizer */
    out->swap_step_s = T;
    out->exposed_s = fmax(0.0, T - out->compute_s);
    return 0;
}

void mm_sim_wan_pipeline(const mm_sim *sim, double fwd_s, double bwd_s, int m, mm_swap *out)
{
    const mm_cluster *c = sim->cluster;
    const mm_scenario *sc = &sim->sc;
    double S = c->sites >= 2 ? c->sites : 1;
    double dp = sc->parallel.llm.lay.dp > 0 ? sc->parallel.llm.lay.dp : 1;
    double act = (double)sc->train.micro_batch * sim->seq * (double)sim->llm->hidden * 2.0;
    double fb = (fwd_s + bwd_s) / S;
    out->pp_hop_s = mm_wan_p2p_s(c, dp * act);
    out->pp_step_s = S * fb + 2 * (S - 1) * out->pp_hop_s + (S * m - 1) * fmax(fb, out->pp_hop_s);
}
