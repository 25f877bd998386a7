/* sim.h - where a scenario becomes a simulation: mm_sim, what a scenario
 * resolves to once the files it names are loaded (prepare.c) and its layout
 * is checked against the cluster and the model (check.c).  Every later room
 * takes a prepared mm_sim: the cost bridge (cost/costs.h) prices its
 * layout, the executor (exec/run.h) builds, runs and measures its
 * iterations, the planner's pre-score (plan/estimate.h) estimates it.
 * Not for: costing, executing, printing or storing. */
#ifndef MM_SIM_H
#define MM_SIM_H

#include <stdio.h>

#include "hw/cluster.h"
#include "model/llm.h"
#include "model/framework.h"
#include "model/loadrates.h"
#include "model/mllm.h"
#include "workload/workload.h"
#include "scenario/scenario.h"

/* The resolved data paths, one block an mm_sim owns ("" where none). */
enum { MM_SIM_PATH_MAX = 512 };
typedef struct mm_sim_paths {
    char model[MM_SIM_PATH_MAX], topology[MM_SIM_PATH_MAX], workload[MM_SIM_PATH_MAX],
        framework[MM_SIM_PATH_MAX];
} mm_sim_paths;

/* Everything a scenario resolves to, kept for the caller (store, trace). */
/* An encoder of a multimodal model as the scenario runs it. */
typedef struct mm_sim_encoder {
    const mm_encoder *enc;
    const mm_projector *proj;
    const char *name;        /* "vision" | "audio": scenario keys and traces */
    mm_module_layout layout; /* parallel.vision / parallel.audio (defaults filled) */
    bool frozen_tower, frozen_proj;
    double inputs_per_sample; /* tiles (vision) or 30-s clips (audio) */
    double tokens_per_input;  /* tokens one tile or clip gives the projector (the LLM's, but for Mllama) */
    double max_inputs;        /* workload file: its largest sample's inputs, for
                                 the early memory bound (0: inputs_per_sample) */
} mm_sim_encoder;

typedef struct mm_sim {
    mm_scenario sc;
    /* Owned (see "Ownership" below): allocated by mm_sim_load, freed by
     * mm_sim_free; NULL in a zeroed or freed sim. */
    mm_model *model;         /* the whole model */
    mm_llm *llm;             /* its decoder: &model->llm, not a separate
                                allocation (check.c sets its ep_share for
                                the layout) */
    mm_cluster *cluster;
    mm_sim_paths *paths;     /* owned: the resolved paths; the four *_path
                                point into it (MM_SIM_PATH_MAX bytes each,
                                "" where none: no workload file) */
    char *model_path;
    char *topology_path;
    int micro_batches;       /* per DP replica */
    double seq;              /* LLM tokens per sample (text + visual) */
    int n_enc;               /* encoders with work in this workload */
    bool llm_frozen;         /* train.frozen names llm: the LLM runs forward and
                                its input-gradient pass (a trainable module
                                lies upstream), no weight gradients */
    mm_sim_encoder enc[2];
    /* A mixture or trace workload (workload: FILE): samples differ, so each
     * iteration draws its global batch and forms micro-batches with the
     * scenario's batching policy; NULL for text and fixed workloads. */
    mm_workload *wl;
    mm_token_model tm;
    char *workload_path;     /* into paths; "" without a workload file */
    /* train.framework's profile, the attention kernel the LLM runs
     * (train.attention, or the profile's choice for this GPU) and the
     * padding of its sequences (train.padding, or the profile's default
     * for this layout: check.c, set again by mm_sim_relayout) */
    mm_framework *fw;        /* owned */
    char *framework_path;    /* into paths */
    mm_attn_impl attn;
    mm_padding padding;
    /* the data loader's per-core rates (the profile's loader.rates), read
     * when data.workers >= 0; zero otherwise */
    mm_loader_rates rates;
    /* Optional, set by the caller after mm_sim_prepare (which clears it):
     * called after each simulated iteration, so that a long run can show
     * its progress (mmsim run draws it on a terminal).  NULL: none. */
    void (*progress)(int done, int total, void *ctx);
    void *progress_ctx;
    /* Set by the caller after mm_sim_prepare: simulate every DP replica even
     * where they are identical (exec/symmetry.h); for checking the collapse. */
    bool no_symmetry;
    /* Set by the caller: build every DP replica's ops even where identical
     * replicas are run once (exec/symmetry.h mm_sym_build_once), and
     * collapse the whole graph instead; for checking the one-replica
     * build, which gives the same bits. */
    bool full_build;
    /* Set by the caller: under `flow`, keep every link in the routes of
     * identical replicas run once instead of reducing the max-min problem
     * by their symmetry (hw/coll.h mm_network_symmetric); for checking
     * the reduction, which gives the same times. */
    bool full_routes;
    /* Set by the caller: mm_sim_run measures only what a ranking reads
     * (iteration time and throughput, FLOPs and MFU, bubble, per-stage
     * times, memory); the critical path, exposed communication and
     * per-module compute time are left out (empty, NaN, 0).  The planner's
     * in-process rescoring sets it; every number it keeps is the same. */
    bool headline_only;
} mm_sim;

/* Ownership: an mm_sim owns its model (and so llm, which points into it),
 * cluster (with its kernel tables), framework profile, workload and the
 * block of resolved paths.  mm_sim_load / mm_sim_prepare allocate them,
 * mm_sim_free frees them and sets the pointers to NULL; the struct itself
 * (a few hundred bytes: a plain local will do) is the caller's.  A sim is
 * never copied by assignment: the copy would share every part, and freeing
 * both frees them twice.  To try many layouts, keep one loaded sim and
 * change sim->sc, then mm_sim_relayout (as the planner does).
 *
 * mm_sim_free frees all of it (a failed load or prepare has freed it
 * already).  Safe on a zeroed or already freed mm_sim.  mm_sim_load and
 * mm_sim_prepare overwrite *sim without freeing: free a prepared one before
 * preparing it again. */
void mm_sim_free(mm_sim *sim);

/* Resolves a data path: as given if it exists, else relative to the
 * scenario file's folder, else under $MMSIM_DATADIR, else under the
 * installed data folder, else beside the running program (BIN/../mmsim, a
 * Python wheel's layout, and BIN/../share/mmsim, a moved prefix).  Writes
 * the first existing candidate (or the path as given) into out. */
void mm_sim_resolve_path(const char *path, const char *scenario_file, char *out, size_t len);

/* The inverse for what is stored and shown: a path that
 * mm_sim_resolve_path found under $MMSIM_DATADIR, the installed data
 * folder or one beside the program is written relative to that folder ("models/x.yaml"), so that a
 * results database names the same file on every host; any other path is
 * written as given, less a leading "./". */
void mm_sim_data_relative(const char *resolved, char *out, size_t len);

/* Loads the model and topology the scenario names and checks the layout.
 * Errors name the file, line and key (MM_EINPUT).  sim->sc is a struct copy
 * of *sc that borrows its strings and lists: keep *sc loaded until the sim
 * is done, then mm_scenario_free it. */
int mm_sim_prepare(mm_sim *sim, const mm_scenario *sc, mm_err *err);

/* The first half of mm_sim_prepare: loads the model and topology (and
 * applies the perturbations) without checking the layout, for a planner
 * that then tries many layouts with mm_sim_relayout. */
int mm_sim_load(mm_sim *sim, const mm_scenario *sc, mm_err *err);

/* Checks the layout again after the caller changed layout or training keys
 * of sim->sc (parallel.*, train.micro_batch, recompute, zero, schedule ...)
 * in a sim from mm_sim_load or mm_sim_prepare, without reading any file
 * again (except a workload file).  The model, topology, cluster.nodes and
 * perturbations must stay those it was loaded with.  A planner's inner loop:
 * microseconds instead of the milliseconds of mm_sim_prepare.  Returns 0 or
 * -code with err as mm_sim_prepare gives it. */
int mm_sim_relayout(mm_sim *sim, mm_err *err);

/* check.c: the length max_length padding pads every sample to:
 * train.pad_to, or train.seq_len when it is 0. */
int64_t mm_sim_pad_to(const mm_sim *sim);

/* prepare.c: the samples' shape (LLM tokens per sample) and the encoders
 * with work; loads a workload file. */
int mm_sim_check_workload(mm_sim *sim, mm_err *err);
/* prepare.c: frees the workload file and its path only (mm_sim_relayout
 * loads it again); mm_sim_free frees everything the sim owns. */
void mm_sim_free_workload(mm_sim *sim);
/* limits.c: iterations, global batch and micro-batches per DP replica
 * within the bounds of util/limits.h, else MM_EINPUT naming the key.  mmsim
 * run, sweep points and plans call it after mm_sim_prepare / mm_sim_load,
 * before anything is simulated.  Returns 0 or -code. */
int mm_sim_check_limits(const mm_sim *sim, mm_err *err);

#endif
