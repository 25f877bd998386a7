/* mmsim.h - the stable C API of libmmsim: open a scenario, run it, read its
 * metrics; plan layouts; report a model; time a collective; summarise a
 * workload.  Every object is an opaque handle,
 * so the library can change its internal structs without breaking a program
 * (or a ctypes binding) built against this header.  docs/library.md is the
 * manual.
 *
 * Errors: a call that can fail returns 0 or a negative status (-1 internal,
 * -2 bad input) and keeps the error on the handle, with the input file, line
 * and key it concerns (mmsim_error_*).  Strings returned by the library are
 * owned by the handle and stay valid until the next call on it that returns
 * a string of the same kind, or mmsim_close.  One handle must not be used
 * by two threads at once.
 * Not for: the internals (the layer headers are not installed). */
#ifndef MMSIM_H
#define MMSIM_H

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define MMSIM_API __attribute__((visibility("default")))
#else
#define MMSIM_API
#endif

/* Bumped when a function of this header changes meaning (not when one is
 * added); the shared library's soname major follows it. */
#define MMSIM_API_VERSION 1

enum { MMSIM_OK = 0, MMSIM_EINTERNAL = 1, MMSIM_EINPUT = 2 };

typedef struct mmsim mmsim; /* one scenario and what was computed from it */

/* "0.1.0": the library's version (the same as `mmsim --version`). */
MMSIM_API const char *mm_version(void);

/* Opens a scenario: the YAML file `path` (NULL: the built-in default), then
 * n_sets overrides "dotted.key=value" with YAML values, exactly as
 * `mmsim run PATH --set ...`.  Returns NULL only when out of memory; a bad
 * scenario gives a handle whose mmsim_status is MMSIM_EINPUT (every other
 * call on it then fails with that error). */
MMSIM_API mmsim *mmsim_open(const char *path, const char *const *sets, int n_sets);

/* The same with the scenario's YAML text in memory; errors name `name`
 * (NULL: "<text>").  Relative paths in it resolve against the current
 * folder, then $MMSIM_DATADIR and the installed data folder. */
MMSIM_API mmsim *mmsim_open_text(const char *text, const char *name, const char *const *sets, int n_sets);

MMSIM_API void mmsim_close(mmsim *h);

/* The last error: status (MMSIM_OK, MMSIM_EINPUT, MMSIM_EINTERNAL), the
 * whole message as the CLI prints it ("file:line: key 'k': ..."), and its
 * parts ("" or 0 when unknown). */
MMSIM_API int mmsim_status(const mmsim *h);
MMSIM_API const char *mmsim_error_message(const mmsim *h);
MMSIM_API const char *mmsim_error_file(const mmsim *h);
MMSIM_API int mmsim_error_line(const mmsim *h);
MMSIM_API const char *mmsim_error_key(const mmsim *h);

/* Loads what the scenario names, checks the layout and simulates its
 * iterations.  Returns 0 or -status.  A layout that does not fit in memory
 * is an answer (metric "oom" 1), not an error. */
MMSIM_API int mmsim_run(mmsim *h);

/* The last run's metrics as the JSON object `mmsim run --no-db --json`
 * prints (the same function writes both); NULL before a run. */
MMSIM_API const char *mmsim_run_json(mmsim *h);

/* One number of the last run by its JSON name (iteration_time_s,
 * tokens_per_s, samples_per_s, mfu, hfu, tflops_per_gpu,
 * hw_tflops_per_gpu, bubble_fraction, exposed_comm_s, peak_memory_gib,
 * oom (0/1), gpus, micro_batches, events, wall_s, iteration_time_p50_s,
 * iteration_time_p99_s; across sites sites, outer_sync_s,
 * outer_sync_exposed_s, outer_sync_per_iteration_s, inner_step_s; with
 * atom swap_exposed_s, swap_step_s, wan_pipeline_step_s); NAN for
 * an unknown name, before a run, or for a value the JSON gives as null. */
MMSIM_API double mmsim_metric(const mmsim *h, const char *name);

/* Pipeline stages of the last run, and one stage's busy_s, idle_s,
 * bubble_s, comm_s or memory_gib (NAN when unknown). */
MMSIM_API int mmsim_stage_count(const mmsim *h);
MMSIM_API double mmsim_stage_metric(const mmsim *h, int stage, const char *name);

/* Plans layouts of the scenario on `gpus` GPUs (0: the scenario's cluster),
 * simulating the best top_k event by event over `iterations` (0: the
 * scenario's), in this process and storing nothing; returns the JSON of
 * `mmsim plan --json --no-db` (all != 0: `--all`), or NULL on error.  A
 * handle opened from text cannot plan (the planner reads the scenario
 * file again for each candidate): MMSIM_EINPUT. */
MMSIM_API const char *mmsim_plan_json(mmsim *h, int gpus, int top_k, int iterations, int all);

/* Reports the model file `model` (HF config.json or model YAML) as
 * `mmsim model MODEL --seq SEQ --images IMAGES --set ...` does: the
 * handle's scenario and overrides, then model=MODEL and (seq > 0)
 * train.seq_len=seq, prepared as `mmsim run` would (so a layout the model
 * does not fit is an error naming the key); returns the JSON of
 * `mmsim model --json`, or NULL on error. */
MMSIM_API const char *mmsim_model_json(mmsim *h, const char *model, long long seq, long long images);

/* Times one collective over a message-size sweep as `mmsim collective OP
 * --json` does and returns that JSON (nccl-tests' JSON, file version 3:
 * "config", "results" with one row per size, "average_bus_bandwidth",
 * and mmsim's "mmsim" object; "args" is the command line that gives the
 * same rows), or NULL on error.  op: allreduce, allgather, reducescatter,
 * alltoall, broadcast or sendrecv.  cluster: a topology file (NULL: the
 * handle's cluster.topology), nodes (0: the handle's cluster.nodes when
 * cluster is NULL, else the file's), gpus (0: all; 2 for sendrecv), algo
 * (NULL: "auto"; ring, tree, hier, nvls, collnet), sizes min_bytes to max_bytes by
 * factor (0: 8 B, 8 GiB, 2), network (NULL: "flow"; analytic), comm_ranks
 * (sendrecv's communicator, 0: 2), dtype (NULL: "float"; nccl-tests' names,
 * or "all"), redop (NULL: "sum"; or "all"), iters (-n; 0: 1).  Errors name
 * the argument as key (op, gpus, algo, factor, ...). */
MMSIM_API const char *mmsim_collective_json(mmsim *h, const char *op, const char *cluster, int nodes, int gpus,
                                            const char *algo, double min_bytes, double max_bytes, double factor,
                                            const char *network, int comm_ranks, const char *dtype,
                                            const char *redop, int iters);

/* Summarises a workload file (a mixture spec or a per-sample trace) as
 * `mmsim workload stats FILE --json` does; returns that JSON, or NULL on
 * error.  model: a model file for its token counts (NULL: InternVL's 256
 * per tile and frame); samples (0: a trace's rows, or 10000 draws), seed,
 * tokens_per_tile and tokens_per_frame (< 0: the model's), max_tokens
 * (0: no cap), as the command's options. */
MMSIM_API const char *mmsim_workload_stats_json(mmsim *h, const char *file, const char *model, long long samples,
                                                long long seed, long long tokens_per_tile, long long tokens_per_frame,
                                                long long max_tokens);

#ifdef __cplusplus
}
#endif

#endif
