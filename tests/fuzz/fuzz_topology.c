/* fuzz_topology.c - a topology YAML file on two nodes, and the link graph
 * built from it. */
#include "fuzz.h"

#include <stdlib.h>

#include "hw/cluster.h"
#include "hw/topo.h"

int mm_fuzz_topology(const uint8_t *data, size_t size)
{
    const char *path = mm_fuzz_file(data, size, ".yaml");
    mm_cluster *c = calloc(1, sizeof *c);
    mm_err err;
    if (path && c && mm_cluster_load(path, 2, c, &err) == 0) {
        mm_topo t;
        if (mm_topo_build(&t, c, &err) == 0)
            mm_topo_free(&t);
    }
    mm_cluster_free(c);
    free(c);
    return 0;
}
MM_FUZZ_ENTRY(mm_fuzz_topology)
