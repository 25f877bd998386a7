/* source.h - what the scenario sources made from another tool's files
 * (Megatron-LM argument lists and launch scripts, scenario/megatron.h;
 * torchtitan's TOML, scenario/torchtitan.h) share: the cluster's GPU count
 * that their layout arithmetic needs, and pointing an error about one of
 * their generated --set overrides back at the line of the file it came from.
 * Not for: reading any file format. */
#ifndef MM_SCENARIO_SOURCE_H
#define MM_SCENARIO_SOURCE_H

#include "scenario/scenario.h"
#include "util/err.h"

/* The GPUs of the cluster the scenario (with its overrides) names: its
 * topology loaded for sc->nodes nodes.  Returns 0 or -code with err. */
int mm_scenario_cluster_gpus(const mm_scenario *sc, int *gpus, mm_err *err);

/* If err (MM_EINPUT, file "--set") is about a key that one of the source's
 * generated overrides sets[i] (KEY=VALUE) set, and none of the user's own
 * --set overrides set it, points err at `path`, line line[i], and appends
 * " (from FROM[i])" to its message.  The latest override of the key wins;
 * an entry whose from[i] is NULL is passed over. */
void mm_scenario_repoint_set(mm_err *err, const char *path, const char *const *user_sets, int n_user,
                             const char *const *sets, const char *const *from, const int *line, int n_sets);

#endif
