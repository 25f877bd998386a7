/* limits.c - refuses a prepared scenario whose size is past the bounds of
 * util/limits.h (docs/reliability.md), naming the key where it was set.  The GPU
 * count is bounded earlier, when the topology is loaded (hw/cluster.c).
 * Not for: layout rules (what fits, what divides): those are the layout
 * checks of mm_sim_prepare. */
#include "scenario/sim.h"

#include "util/limits.h"

int mm_sim_check_limits(const mm_sim *sim, mm_err *err)
{
    const mm_scenario *sc = &sim->sc;
    if (sc->iterations > MM_LIMIT_ITERATIONS)
        return mm_scenario_fail(sc, err, "iterations",
                                "%d iterations are above the limit of %d (docs/reliability.md); "
                                "the mean of a few iterations is the answer",
                                sc->iterations, MM_LIMIT_ITERATIONS);
    if (sc->train.global_batch > MM_LIMIT_GLOBAL_BATCH)
        return mm_scenario_fail(sc, err, "train.global_batch",
                                "%lld samples are above the limit of %d (docs/reliability.md)",
                                (long long)sc->train.global_batch, MM_LIMIT_GLOBAL_BATCH);
    if (sim->micro_batches > MM_LIMIT_MICRO_BATCHES)
        return mm_scenario_fail(sc, err, "train.global_batch",
                                "%d micro-batches per DP replica are above the limit of %d "
                                "(docs/reliability.md); raise train.micro_batch or dp",
                                sim->micro_batches, MM_LIMIT_MICRO_BATCHES);
    return 0;
}
