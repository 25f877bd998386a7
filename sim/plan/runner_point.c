/* runner_point.c - one point of a runner: simulating it, storing its
 * outcome, counting it and telling the progress callback (runner_internal.h);
 * what the serial and forked paths (runner.c) and the MPI path
 * (runner_mpi.c) all call, calling neither.
 * Not for: planning or dispatching points (runner.c, runner_mpi.c). */
#include "plan/runner_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec/run.h"
#include "scenario/sim.h"
#include "store/store.h"
#include "util/misc.h"

/* A point's canonical text longer than this is refused (out of memory). */
#define CANON_MAX (1 << 20)

void mm_runner_now(char *out, size_t len)
{
    time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tmv);
}

void mm_rn_report(runner *r, int final)
{
    r->prog.elapsed_s = mm_host_seconds() - r->t0;
    r->prog.final = final;
    if (r->o->progress)
        r->o->progress(&r->prog, r->o->progress_ctx);
}

/* Counts a finished point. */
void mm_rn_count(runner *r, size_t i)
{
    const mm_point_result *p = &r->res[i];
    r->prog.done++;
    if (p->status == MM_POINT_RAN)
        r->prog.ran++;
    else if (p->status == MM_POINT_SKIPPED)
        r->prog.skipped++;
    else if (p->status == MM_POINT_FAILED)
        r->prog.failed++;
    if (p->oom)
        r->prog.oom++;
}

/* ---- one point -------------------------------------------------------- */

void mm_rn_outcome_free(outcome *oc)
{
    if (oc->ok)
        mm_metrics_free(&oc->m);
    free(oc->canon);
    memset(oc, 0, sizeof *oc);
}

int mm_rn_load_point(const mm_point *pt, mm_scenario *sc, char **canon, mm_err *err)
{
    *canon = NULL;
    int rc = pt->sc     ? (*sc = *pt->sc, 0)
             : pt->text ? mm_scenario_load_text(sc, pt->scenario ? pt->scenario : "<default>", pt->text, pt->sets,
                                                pt->n_sets, err)
                        : mm_scenario_load(sc, pt->scenario, pt->sets, pt->n_sets, err);
    if (rc < 0)
        return rc;
    size_t need = mm_scenario_canonical(sc, NULL, 0) + 1;
    if (need > CANON_MAX || !(*canon = malloc(need))) {
        mm_err_set(err, MM_EINTERNAL, sc->source, 0, NULL, "out of memory");
        if (!pt->sc)
            mm_scenario_free(sc);
        return -MM_EINTERNAL;
    }
    mm_scenario_canonical(sc, *canon, need);
    return 0;
}

void mm_rn_free_point(const mm_point *pt, mm_scenario *sc)
{
    if (pt->sc)
        memset(sc, 0, sizeof *sc);
    else
        mm_scenario_free(sc);
}

/* Simulates one point; never touches the store.  Failures of the scenario
 * or the simulation are the point's (oc->ok = 0), not the batch's. */
void mm_rn_simulate(const mm_point *pt, outcome *oc)
{
    memset(oc, 0, sizeof *oc);
    mm_err_clear(&oc->err);
    mm_scenario *sc = calloc(1, sizeof *sc);
    mm_sim *sim = calloc(1, sizeof *sim); /* zeroed: mm_sim_free is safe on any path */
    if (!sc || !sim) {
        mm_err_set(&oc->err, MM_EINTERNAL, NULL, 0, NULL, "out of memory");
    } else if (mm_rn_load_point(pt, sc, &oc->canon, &oc->err) == 0 &&
               mm_sim_prepare(sim, sc, &oc->err) == 0 &&
               mm_sim_check_limits(sim, &oc->err) == 0 &&
               mm_sim_run(sim, &oc->m, NULL, &oc->err) == 0) {
        oc->ok = 1;
        snprintf(oc->source, sizeof oc->source, "%s", sc->source);
        mm_store_describe_sim(sim, &oc->desc);
        oc->seed = sc->seed;
    }
    if (sim)
        mm_sim_free(sim); /* before the scenario: the sim borrows its strings */
    if (sc)
        mm_rn_free_point(pt, sc);
    free(sc);
    free(sim);
}

/* Stores one outcome (run + link, or the failed link) and fills res.
 * Returns 0, or -code when the store fails (the batch stops). */
int mm_rn_store_outcome(const runner *r, mm_store *st, size_t i, const outcome *oc,
                         mm_err *err)
{
    mm_point_result *p = &r->res[i];
    mm_sweep_link link = mm_rn_link_of(r, i);
    if (!oc->ok) {
        mm_rn_set_failed(p, &oc->err);
        return r->sweep_id > 0 ? mm_store_link_sweep_run(st, &link, 0, p->error, err) : 0;
    }
    char created[32];
    mm_runner_now(created, sizeof created);
    mm_run_record rec = {
        .scenario_text = oc->canon, .scenario_source = oc->source, .desc = &oc->desc,
        .seed = oc->seed,
        .version = r->o->version ? r->o->version : "unknown", .created_at = created,
    };
    int reused = 0;
    int64_t id = 0;
    int rc = mm_store_write_sweep_run(st, r->sweep_id > 0 ? &link : NULL, &rec, &oc->m, &id,
                                      &reused, err);
    if (rc < 0)
        return rc;
    p->status = reused ? MM_POINT_SKIPPED : MM_POINT_RAN;
    p->run_id = id;
    p->oom = oc->m.oom;
    p->error[0] = '\0';
    return 0;
}

int mm_rn_run_one(const runner *r, mm_store *st, size_t i, mm_err *err)
{
    outcome oc;
    mm_rn_simulate(&r->pts[i], &oc);
    int rc = mm_rn_store_outcome(r, st, i, &oc, err);
    mm_rn_outcome_free(&oc);
    return rc;
}
