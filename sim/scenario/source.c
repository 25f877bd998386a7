/* source.c - what the scenario sources built from another tool's files
 * share (source.h). */
#include "scenario/source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/cluster.h"
#include "scenario/sim.h"

int mm_scenario_cluster_gpus(const mm_scenario *sc, int *gpus, mm_err *err)
{
    char topo[1024];
    mm_sim_resolve_path(sc->topology, sc->source, topo, sizeof topo);
    mm_cluster *cl = malloc(sizeof *cl);
    if (!cl)
        return mm_err_set(err, MM_EINTERNAL, "", 0, "", "out of memory");
    int rc = mm_cluster_load(topo, sc->nodes, cl, err);
    if (!rc)
        *gpus = mm_cluster_gpus(cl);
    mm_cluster_free(cl);
    free(cl);
    return rc;
}

/* True when the override KEY=VALUE sets exactly `key`. */
static bool sets_key(const char *set, const char *key)
{
    size_t n = strlen(key);
    return !strncmp(set, key, n) && set[n] == '=';
}

void mm_scenario_repoint_set(mm_err *err, const char *path, const char *const *user_sets, int n_user,
                             const char *const *sets, const char *const *from, const int *line, int n_sets)
{
    if (!err || err->code != MM_EINPUT || strcmp(err->file, "--set") != 0)
        return;
    for (int i = 0; i < n_user; i++)
        if (sets_key(user_sets[i], err->key))
            return; /* the user's own --set */
    for (int i = n_sets - 1; i >= 0; i--) {
        if (!from[i] || !sets_key(sets[i], err->key))
            continue;
        size_t n = strlen(err->msg);
        if (n + strlen(from[i]) + 8 < sizeof err->msg)
            snprintf(err->msg + n, sizeof err->msg - n, " (from %s)", from[i]);
        snprintf(err->file, sizeof err->file, "%s", path);
        err->line = line[i];
        return;
    }
}
