/* runinfo.h - the rows that say what a run is of (runinfo.c): its modules'
 * layouts, and the filling-in of runs from before schema version 8.  Both
 * work inside the caller's transaction on the raw connection and return an
 * SQLite result code.  mm_store_describe_sim, which fills an mm_run_desc,
 * is public (store.h).
 * Not for: other layers (store.h is their face). */
#ifndef MM_STORE_RUNINFO_H
#define MM_STORE_RUNINFO_H

#include <sqlite3.h>
#include <stdint.h>

#include "store/store.h"

/* One run_layouts row per module of d (none for a NULL d). */
int mm_store_insert_layouts(sqlite3 *db, int64_t run_id, const mm_run_desc *d);

/* For every run of a database just migrated to version 8: its model and
 * topology made relative to the data folder, its workload and its layouts,
 * read from its canonical scenario text (an encoder section the model
 * ignored included). */
int mm_store_backfill_v8(sqlite3 *db);

#endif
