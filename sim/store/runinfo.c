/* runinfo.c - what a run is of, as the runs table and run_layouts hold it:
 * the data files a simulation read, written relative to their data folder,
 * and each module's layout; and, once per database, the same for the runs
 * written before schema version 8, read back from their canonical scenario
 * text.  It works on the raw connection and calls nothing else of the
 * store, so that store.c's writer and store.c's migration can both call it.
 * Not for: the schema and its views (store.c's migrations) or any query. */
#include "store/runinfo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scenario/sim.h"
#include "util/doc.h"

static void set_module(mm_run_module *m, const char *name, const mm_layout *lay, int zero)
{
    snprintf(m->name, sizeof m->name, "%s", name);
    m->tp = lay->tp;
    m->pp = lay->pp;
    /* cp, vpp, ep: 0 is taken as 1 (model/layout.h) */
    m->vpp = lay->vpp > 0 ? lay->vpp : 1;
    m->cp = lay->cp > 0 ? lay->cp : 1;
    m->dp = lay->dp;
    m->ep = lay->ep > 0 ? lay->ep : 1;
    m->zero = zero;
}

void mm_store_describe_sim(const mm_sim *sim, mm_run_desc *d)
{
    memset(d, 0, sizeof *d);
    const mm_scenario *sc = &sim->sc;
    mm_sim_data_relative(sim->model_path, d->model, sizeof d->model);
    mm_sim_data_relative(sim->topology_path, d->topology, sizeof d->topology);
    if (sc->workload.kind == MM_WORKLOAD_FILE)
        mm_sim_data_relative(sim->workload_path[0] ? sim->workload_path : sc->workload.path, d->workload,
                             sizeof d->workload);
    else
        snprintf(d->workload, sizeof d->workload, "%s",
                 sc->workload.kind == MM_WORKLOAD_FIXED ? "fixed" : "text");
    const mm_module_layout *llm = &sc->parallel.llm;
    set_module(&d->modules[d->n_modules++], "llm", &llm->lay, llm->zero >= 0 ? llm->zero : sc->train.zero);
    /* an encoder with work whose placement gives it a layout of its own */
    for (int i = 0; i < sim->n_enc && mm_layout_has_vision(sc->parallel.placement); i++) {
        const mm_module_layout *ml = &sim->enc[i].layout;
        set_module(&d->modules[d->n_modules++], sim->enc[i].name, &ml->lay,
                   ml->zero >= 0 ? ml->zero : sc->train.zero);
    }
}

int mm_store_insert_layouts(sqlite3 *db, int64_t run_id, const mm_run_desc *d)
{
    if (!d || d->n_modules == 0)
        return SQLITE_OK;
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(db,
        "INSERT INTO run_layouts(run_id, module, tp, pp, vpp, cp, dp, ep, zero)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)", -1, &s, NULL);
    for (int i = 0; rc == SQLITE_OK && i < d->n_modules; i++) {
        const mm_run_module *m = &d->modules[i];
        const int v[] = {m->tp, m->pp, m->vpp, m->cp, m->dp, m->ep, m->zero};
        rc = sqlite3_bind_int64(s, 1, run_id);
        if (rc == SQLITE_OK)
            rc = sqlite3_bind_text(s, 2, m->name, -1, SQLITE_TRANSIENT);
        for (int k = 0; rc == SQLITE_OK && k < 7; k++)
            rc = sqlite3_bind_int(s, 3 + k, v[k]);
        if (rc == SQLITE_OK)
            rc = sqlite3_step(s) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
        sqlite3_reset(s);
    }
    sqlite3_finalize(s);
    return rc;
}

/* ---- runs written before schema version 8 ------------------------------- */

/* An integer of at least lo in a mapping such as {tp: 4, pp: 2}, else dflt. */
static int layout_int(const mm_node *map, const char *key, int lo, int dflt)
{
    const char *t = mm_node_scalar(mm_node_get(map, key), NULL);
    char *end = NULL;
    long v = t ? strtol(t, &end, 10) : 0;
    return t && *t && !*end && v >= lo && v <= 1 << 22 ? (int)v : dflt;
}

/* The layouts an old run's canonical text states.  Such a text has every
 * section the scenario had, including an encoder section that a model
 * without that encoder ignored: so a migrated run may show an encoder
 * layout that did not run (a run written since version 8 shows only the
 * encoders it ran).  A text that does not parse gives no rows. */
static void describe_text(const char *text, mm_run_desc *d)
{
    memset(d, 0, sizeof *d);
    mm_doc doc;
    mm_err err;
    mm_err_clear(&err);
    if (mm_doc_load_string(&doc, "runs.scenario", text, &err))
        return;
    const mm_node *root = mm_doc_root(&doc);
    const mm_node *par = mm_node_get(root, "parallel"), *train = mm_node_get(root, "train");
    int zero = layout_int(train, "zero", 0, 0);
    static const char *const names[] = {"llm", "vision", "audio"};
    for (int i = 0; i < 3; i++) {
        const mm_node *m = mm_node_get(par, names[i]);
        if (!mm_node_is_mapping(m))
            continue;
        mm_layout lay = {.tp = layout_int(m, "tp", 1, 1), .pp = layout_int(m, "pp", 1, 1),
                         .vpp = layout_int(m, "vpp", 1, 1), .cp = layout_int(m, "cp", 1, 1),
                         .dp = layout_int(m, "dp", 1, 1), .ep = layout_int(m, "ep", 1, 1)};
        set_module(&d->modules[d->n_modules++], names[i], &lay, layout_int(m, "zero", 0, zero));
    }
    const mm_node *wl = mm_node_get(root, "workload");
    const char *w = mm_node_scalar(wl, NULL);
    snprintf(d->workload, sizeof d->workload, "%s", w ? w : mm_node_is_mapping(wl) ? "fixed" : "");
    mm_doc_free(&doc);
}

int mm_store_backfill_v8(sqlite3 *db)
{
    sqlite3_stmt *q = NULL, *u = NULL;
    int rc = sqlite3_prepare_v2(db, "SELECT id, scenario, model, topology FROM runs ORDER BY id", -1, &q, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db, "UPDATE runs SET model = ?2, topology = ?3, workload = ?4 WHERE id = ?1",
                                -1, &u, NULL);
    while (rc == SQLITE_OK && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(q, 0);
        const char *text = (const char *)sqlite3_column_text(q, 1);
        mm_run_desc d;
        describe_text(text ? text : "", &d);
        /* paths as an older mmsim found them, made relative to the data
         * folder they lie in as this one sees it */
        const char *model = (const char *)sqlite3_column_text(q, 2);
        const char *topo = (const char *)sqlite3_column_text(q, 3);
        if (model)
            mm_sim_data_relative(model, d.model, sizeof d.model);
        if (topo)
            mm_sim_data_relative(topo, d.topology, sizeof d.topology);
        rc = sqlite3_bind_int64(u, 1, id);
        if (rc == SQLITE_OK)
            rc = model ? sqlite3_bind_text(u, 2, d.model, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(u, 2);
        if (rc == SQLITE_OK)
            rc = topo ? sqlite3_bind_text(u, 3, d.topology, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(u, 3);
        if (rc == SQLITE_OK)
            rc = d.workload[0] ? sqlite3_bind_text(u, 4, d.workload, -1, SQLITE_TRANSIENT)
                               : sqlite3_bind_null(u, 4);
        if (rc == SQLITE_OK)
            rc = sqlite3_step(u) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
        sqlite3_reset(u);
        if (rc == SQLITE_OK)
            rc = mm_store_insert_layouts(db, id, &d);
    }
    if (rc == SQLITE_DONE)
        rc = SQLITE_OK;
    sqlite3_finalize(q);
    sqlite3_finalize(u);
    return rc;
}
