/* test_scenario.c - Check suite for scenarios (run/scenario): the default,
 * scenario files and their errors (naming file, line and key), `--set`
 * overrides, and the canonical text (stable, order-free, round-trips).
 *
 * What it is for: what a user sees when a scenario is wrong, and that equal
 * scenarios hash equal.
 * Not for: the YAML/JSON reader itself (test_config.c), the key table and
 * the layout type (test_scenario_keys.c), cross-file rules (degrees against
 * GPU count and the like: the run layer's suite).  Data lives in
 * tests/data/config/; tests run from the source root. */
#include "config_common.h"

/* ---- scenario: the default ---------------------------------------------- */

START_TEST(scenario_default_values)
{
    mm_scenario *sc = load_ok(NULL, NULL, 0);
    ck_assert_str_eq(sc->source, "<default>");
    ck_assert_str_eq(sc->model, "models/llava-ov-qwen2.5-7b.yaml");
    ck_assert_str_eq(sc->topology, "topologies/dgx-h100.yaml");
    ck_assert_int_eq(sc->nodes, 2);
    ck_assert_int_eq(sc->train.global_batch, 64);
    ck_assert_int_eq(sc->train.micro_batch, 1);
    ck_assert_int_eq(sc->train.seq_len, 4096);
    ck_assert_int_eq(sc->train.precision, MM_PREC_BF16);
    ck_assert_int_eq(sc->train.recompute, MM_RECOMPUTE_SELECTIVE);
    ck_assert(!sc->train.sequence_parallel);
    ck_assert_int_eq(sc->train.zero, 1);
    ck_assert_int_eq(sc->train.schedule, MM_SCHED_1F1B);
    ck_assert_int_eq(sc->train.overlap_grad_reduce, MM_TOVL_AUTO);
    ck_assert_int_eq(sc->train.overlap_param_gather, MM_TOVL_AUTO);
    ck_assert(!sc->train.tp_comm_overlap);
    ck_assert_int_eq(sc->train.n_frozen, 0);
    const mm_module_layout *l = &sc->parallel.llm;
    ck_assert(l->present);
    ck_assert_int_eq(l->lay.tp, 4);
    ck_assert_int_eq(l->lay.pp, 2);
    ck_assert_int_eq(l->lay.dp, 2);
    ck_assert_int_eq(l->lay.cp, 1);
    ck_assert_int_eq(l->lay.vpp, 1);
    ck_assert_int_eq(l->lay.ep, 1);
    ck_assert_int_eq(l->zero, -1);
    ck_assert_int_eq(l->lay.n_layers_per_stage, 0);
    ck_assert(sc->parallel.vision.present);
    ck_assert(sc->parallel.vision.lay.tp == 1 && sc->parallel.vision.lay.pp == 1 && sc->parallel.vision.lay.dp == 16);
    ck_assert(!sc->parallel.audio.present);
    ck_assert_int_eq(sc->parallel.placement, MM_PLACE_COLOCATED);
    ck_assert_int_eq(sc->workload.kind, MM_WORKLOAD_FIXED);
    ck_assert(sc->workload.images == 1 && sc->workload.tiles == 5 && sc->workload.text_tokens == 300);
    ck_assert_int_eq(sc->batching, MM_BATCH_SEQUENTIAL);
    ck_assert_int_eq(sc->network, MM_NET_FLOW);
    ck_assert_int_eq(sc->iterations, 2);
    ck_assert_uint_eq(sc->seed, 1);
    /* Keys of the default are recorded with their lines in the default text. */
    int line = -1;
    const char *file = key_file(sc, "parallel.llm.tp", &line);
    ck_assert_ptr_nonnull(file);
    ck_assert_str_eq(file, "<default>");
    ck_assert_int_gt(line, 1);
    drop(sc);
}
END_TEST

START_TEST(scenario_name_tables)
{
    ck_assert_str_eq(mm_precision_names[MM_PREC_FP8], "fp8");
    ck_assert_ptr_null(mm_precision_names[MM_PREC_COUNT]);
    ck_assert_str_eq(mm_recompute_names[MM_RECOMPUTE_SELECTIVE], "selective");
    ck_assert_str_eq(mm_schedule_names[MM_SCHED_ZB_H1], "zb-h1");
    ck_assert_str_eq(mm_schedule_names[MM_SCHED_ZB_2P], "zb-2p");
    ck_assert_str_eq(mm_schedule_names[MM_SCHED_ZB_V], "zb-v");
    ck_assert_ptr_null(mm_schedule_names[MM_SCHED_ZB_V + 1]);
    ck_assert_str_eq(mm_placement_names[MM_PLACE_HOMOGENEOUS], "homogeneous");
    ck_assert_str_eq(mm_batching_names[MM_BATCH_POST_BALANCE], "post-balance");
    ck_assert_ptr_null(mm_batching_names[MM_BATCH_POST_BALANCE + 1]);
    ck_assert_str_eq(mm_network_names[MM_NET_ANALYTIC], "analytic");
}
END_TEST

/* ---- scenario: files ----------------------------------------------------- */

START_TEST(scenario_full_file)
{
    mm_scenario *sc = load_ok(DATA "full.yaml", NULL, 0);
    ck_assert_str_eq(sc->source, DATA "full.yaml");
    ck_assert_int_eq(sc->nodes, 8);
    ck_assert_int_eq(sc->train.global_batch, 192);
    ck_assert_int_eq(sc->train.micro_batch, 2);
    ck_assert_int_eq(sc->train.seq_len, 2048);
    ck_assert_int_eq(sc->train.precision, MM_PREC_FP8);
    ck_assert_int_eq(sc->train.recompute, MM_RECOMPUTE_FULL);
    ck_assert(sc->train.sequence_parallel);
    ck_assert_int_eq(sc->train.zero, 2);
    ck_assert_int_eq(sc->train.schedule, MM_SCHED_INTERLEAVED);
    ck_assert(sc->train.overlap_grad_reduce == MM_TOVL_TRUE && sc->train.overlap_param_gather == MM_TOVL_TRUE &&
              sc->train.tp_comm_overlap);
    ck_assert_int_eq(sc->train.n_frozen, 2); /* sorted, repeats dropped */
    ck_assert_str_eq(sc->train.frozen[0], "audio");
    ck_assert_str_eq(sc->train.frozen[1], "vision");
    const mm_module_layout *l = &sc->parallel.llm;
    ck_assert(l->lay.tp == 4 && l->lay.pp == 4 && l->lay.cp == 1 && l->lay.dp == 3 && l->lay.vpp == 2 &&
              l->lay.ep == 1 && l->zero == 1);
    ck_assert_int_eq(l->lay.n_layers_per_stage, 4);
    ck_assert(l->lay.layers_per_stage[0] == 7 && l->lay.layers_per_stage[1] == 9 &&
              l->lay.layers_per_stage[2] == 9 && l->lay.layers_per_stage[3] == 7);
    const mm_module_layout *v = &sc->parallel.vision;
    ck_assert(v->present);
    ck_assert(v->lay.tp == 1 && v->lay.pp == 1 && v->lay.dp == 16 && v->lay.cp == 1 && v->zero == -1);
    ck_assert(!sc->parallel.audio.present);
    ck_assert_int_eq(sc->parallel.placement, MM_PLACE_DISJOINT);
    ck_assert_int_eq(sc->workload.kind, MM_WORKLOAD_FIXED);
    ck_assert(sc->workload.images == 1 && sc->workload.tiles == 5 &&
              sc->workload.text_tokens == 300);
    ck_assert_int_eq(sc->batching, MM_BATCH_POST_BALANCE);
    ck_assert_int_eq(sc->network, MM_NET_FLOW);
    ck_assert_int_eq(sc->iterations, 8);
    ck_assert_uint_eq(sc->seed, 42);
    int line = 0;
    ck_assert_str_eq(key_file(sc, "train.seq_len", &line), DATA "full.yaml");
    ck_assert_int_eq(line, 7);
    ck_assert_str_eq(key_file(sc, "parallel.llm.dp", &line), DATA "full.yaml");
    ck_assert_int_eq(line, 22);
    ck_assert_str_eq(key_file(sc, "cluster.nodes", &line), DATA "full.yaml");
    ck_assert_int_eq(line, 3);
    ck_assert_str_eq(key_file(sc, "parallel.llm.layers_per_stage", &line), DATA "full.yaml");
    ck_assert_int_eq(line, 26);
    drop(sc);
}
END_TEST

START_TEST(scenario_minimal_defaults)
{
    mm_scenario *sc = load_ok(DATA "minimal.yaml", NULL, 0);
    ck_assert_int_eq(sc->nodes, 1);
    ck_assert_int_eq(sc->train.micro_batch, 1);
    ck_assert_int_eq(sc->train.global_batch, 1); /* micro_batch x llm.dp */
    ck_assert_int_eq(sc->train.seq_len, 4096);
    ck_assert_int_eq(sc->train.recompute, MM_RECOMPUTE_NONE);
    ck_assert_int_eq(sc->train.zero, 0);
    const mm_module_layout *l = &sc->parallel.llm;
    ck_assert(l->present && l->lay.tp == 1 && l->lay.pp == 1 && l->lay.dp == 1 && l->lay.cp == 1 &&
              l->lay.vpp == 1 && l->lay.ep == 1 && l->zero == -1);
    ck_assert_int_eq(sc->network, MM_NET_FLOW); /* the default when a file omits it */
    ck_assert_int_eq(sc->iterations, 1);
    /* a default key fails with the scenario file and line 0 */
    mm_err e;
    ck_assert_int_eq(mm_scenario_fail(sc, &e, "parallel.llm.tp", "needs %d GPUs", 8),
                     -MM_EINPUT);
    assert_err(&e, DATA "minimal.yaml", 0, "parallel.llm.tp", "needs 8 GPUs");
    const char *sets[] = {"parallel.llm.dp=4", "train.micro_batch=2"};
    drop(sc);
    sc = load_ok(DATA "minimal.yaml", sets, 2);
    ck_assert_int_eq(sc->train.global_batch, 8);
    drop(sc);
}
END_TEST

/* train.memory_reserve_gib: default 0 (the reserve is modeled), settable, in the canonical text,
 * and range-checked with the key named. */
START_TEST(scenario_memory_reserve)
{
    mm_scenario *sc = load_ok(NULL, NULL, 0);
    ck_assert(sc->train.memory_reserve_gib == 0.0);
    drop(sc);
    const char *sets[] = {"train.memory_reserve_gib=3.5"};
    sc = load_ok(NULL, sets, 1);
    ck_assert(sc->train.memory_reserve_gib == 3.5);
    char *text = canon(sc);
    ck_assert_ptr_nonnull(strstr(text, "  memory_reserve_gib: 3.5\n"));
    free(text);
    drop(sc);
    const char *bad[] = {"train.memory_reserve_gib=-1"};
    mm_err e = load_fail(NULL, bad, 1);
    ck_assert_str_eq(e.key, "train.memory_reserve_gib");
    ck_assert_str_eq(e.file, "--set");
}
END_TEST

START_TEST(scenario_missing_file)
{
    mm_err e = load_fail(DATA "missing.yaml", NULL, 0);
    assert_err(&e, DATA "missing.yaml", 0, "", "cannot open: No such file or directory");
}
END_TEST

START_TEST(scenario_syntax_error)
{
    stderr_trap t;
    trap_begin(&t);
    mm_err e = load_fail(DATA "syntax.yaml", NULL, 0);
    long printed = trap_end(&t);
    assert_err(&e, DATA "syntax.yaml", 4, "", "");
    ck_assert_int_eq(printed, 0);
}
END_TEST

START_TEST(scenario_unknown_root_key)
{
    mm_err e = load_fail(DATA "unknown_root.yaml", NULL, 0);
    assert_err(&e, DATA "unknown_root.yaml", 3, "trian",
               "unknown key 'trian' (did you mean 'train'?)");
}
END_TEST

START_TEST(scenario_unknown_layout_key)
{
    mm_err e = load_fail(DATA "unknown_llm.yaml", NULL, 0);
    assert_err(&e, DATA "unknown_llm.yaml", 5, "parallel.llm.tpp",
               "unknown key 'parallel.llm.tpp' (did you mean 'parallel.llm.tp'?)");
}
END_TEST

START_TEST(scenario_wrong_types)
{
    mm_err e = load_fail(DATA "seq_len_abc.yaml", NULL, 0);
    assert_err(&e, DATA "seq_len_abc.yaml", 5, "train.seq_len",
               "expected an integer, got 'abc'");
    e = load_fail(DATA "sp_3.yaml", NULL, 0);
    assert_err(&e, DATA "sp_3.yaml", 4, "train.sequence_parallel",
               "expected true or false, got '3'");
}
END_TEST

START_TEST(scenario_bad_degrees)
{
    mm_err e = load_fail(DATA "tp_0.yaml", NULL, 0);
    assert_err(&e, DATA "tp_0.yaml", 4, "parallel.llm.tp", "must be >= 1, got 0");
    e = load_fail(DATA "dp_neg.yaml", NULL, 0);
    assert_err(&e, DATA "dp_neg.yaml", 6, "parallel.llm.dp", "must be >= 1, got -2");
}
END_TEST

START_TEST(scenario_bad_enum)
{
    mm_err e = load_fail(DATA "schedule_bad.yaml", NULL, 0);
    assert_err(&e, DATA "schedule_bad.yaml", 4, "train.schedule",
               "unknown value '1f1c' (did you mean '1f1b'?)");
}
END_TEST

START_TEST(scenario_missing_model)
{
    mm_err e = load_fail(DATA "no_model.yaml", NULL, 0);
    assert_err(&e, DATA "no_model.yaml", 0, "model", "missing");
    /* ... which an override can supply */
    const char *sets[] = {"model=models/llama-3-8b.json"};
    mm_scenario *sc = load_ok(DATA "no_model.yaml", sets, 1);
    ck_assert_str_eq(sc->model, "models/llama-3-8b.json");
    ck_assert_int_eq(sc->train.seq_len, 1024);
    drop(sc);
}
END_TEST

/* ---- scenario: --set ------------------------------------------------------ */

START_TEST(set_values_parse)
{
    const char *sets[] = {
        "parallel.llm.layers_per_stage=[2,3,3,2]",
        "parallel.llm.pp=4",
        "model=models/qwen2.5-7b.json",
        "train.sequence_parallel=true",
        "train.frozen=[vision]",
        "workload={kind: fixed, images: 1, tiles: 5, text_tokens: 300}",
        "parallel.vision={tp: 1, dp: 4}",
        "seed=7",
    };
    mm_scenario *sc = load_ok(NULL, sets, 8);
    const mm_module_layout *l = &sc->parallel.llm;
    ck_assert_int_eq(l->lay.n_layers_per_stage, 4);
    ck_assert(l->lay.layers_per_stage[0] == 2 && l->lay.layers_per_stage[1] == 3 &&
              l->lay.layers_per_stage[2] == 3 && l->lay.layers_per_stage[3] == 2);
    ck_assert_int_eq(l->lay.pp, 4);
    ck_assert_int_eq(l->lay.tp, 4); /* untouched siblings stay */
    ck_assert_str_eq(sc->model, "models/qwen2.5-7b.json");
    ck_assert(sc->train.sequence_parallel);
    ck_assert_int_eq(sc->train.n_frozen, 1);
    ck_assert_str_eq(sc->train.frozen[0], "vision");
    ck_assert_int_eq(sc->workload.kind, MM_WORKLOAD_FIXED);
    ck_assert_int_eq(sc->workload.tiles, 5);
    ck_assert(sc->parallel.vision.present && sc->parallel.vision.lay.dp == 4);
    ck_assert_uint_eq(sc->seed, 7);
    int line = -1;
    ck_assert_str_eq(key_file(sc, "parallel.llm.pp", &line), "--set");
    ck_assert_int_eq(line, 0);
    ck_assert_str_eq(key_file(sc, "parallel.vision.dp", &line), "--set");
    ck_assert_str_eq(key_file(sc, "parallel.llm.tp", &line), "<default>");
    ck_assert_int_gt(line, 0);
    /* mm_scenario_fail names --set for an overridden key */
    mm_err e;
    mm_scenario_fail(sc, &e, "parallel.llm.layers_per_stage", "sums to %d, model has %d", 10,
                     32);
    assert_err(&e, "--set", 0, "parallel.llm.layers_per_stage", "sums to 10, model has 32");
    drop(sc);

    /* A later --set wins; a workload path is a string. */
    const char *sets2[] = {"train.seq_len=1024", "train.seq_len=2048",
                           "workload=workloads/mix.yaml"};
    sc = load_ok(NULL, sets2, 3);
    ck_assert_int_eq(sc->train.seq_len, 2048);
    ck_assert_int_eq(sc->workload.kind, MM_WORKLOAD_FILE);
    ck_assert_str_eq(sc->workload.path, "workloads/mix.yaml");
    drop(sc);
}
END_TEST

START_TEST(set_on_file)
{
    const char *sets[] = {"parallel.llm.dp=6", "cluster.nodes=16"};
    mm_scenario *sc = load_ok(DATA "full.yaml", sets, 2);
    ck_assert_int_eq(sc->parallel.llm.lay.dp, 6);
    ck_assert_int_eq(sc->parallel.llm.lay.tp, 4);
    ck_assert_int_eq(sc->nodes, 16);
    int line = -1;
    ck_assert_str_eq(key_file(sc, "parallel.llm.dp", &line), "--set");
    ck_assert_str_eq(key_file(sc, "parallel.llm.tp", &line), DATA "full.yaml");
    ck_assert_int_eq(line, 19);
    mm_err e;
    mm_scenario_fail(sc, &e, "parallel.llm.tp", "tp %d does not divide heads", 4);
    assert_err(&e, DATA "full.yaml", 19, "parallel.llm.tp", "tp 4 does not divide heads");
    drop(sc);
    /* an error in the file itself still names the file */
    const char *sets2[] = {"train.seq_len=512"};
    mm_err e2 = load_fail(DATA "tp_0.yaml", sets2, 1);
    assert_err(&e2, DATA "tp_0.yaml", 4, "parallel.llm.tp", "must be >= 1");
}
END_TEST

START_TEST(set_errors)
{
    const char *s1[] = {"parallel.llm.tp=0"};
    mm_err e = load_fail(NULL, s1, 1);
    assert_err(&e, "--set", 0, "parallel.llm.tp", "must be >= 1, got 0");

    const char *s2[] = {"parallel.llm.tpp=4"};
    e = load_fail(NULL, s2, 1);
    assert_err(&e, "--set", 0, "parallel.llm.tpp",
               "unknown key 'parallel.llm.tpp' (did you mean 'parallel.llm.tp'?)");

    const char *s3[] = {"trian.seq_len=4096"};
    e = load_fail(NULL, s3, 1);
    assert_err(&e, "--set", 0, "trian", "unknown key 'trian' (did you mean 'train'?)");

    const char *s4[] = {"train.seq_len"};
    e = load_fail(NULL, s4, 1);
    assert_err(&e, "--set", 0, "", "expected KEY=VALUE");

    const char *s5[] = {"=4"};
    e = load_fail(NULL, s5, 1);
    assert_err(&e, "--set", 0, "", "empty key");

    const char *s6[] = {"train.seq_len=abc"};
    e = load_fail(NULL, s6, 1);
    assert_err(&e, "--set", 0, "train.seq_len", "expected an integer, got 'abc'");

    const char *s7[] = {"train.schedule=1f1c"};
    e = load_fail(NULL, s7, 1);
    assert_err(&e, "--set", 0, "train.schedule", "did you mean '1f1b'?");

    const char *s8[] = {"parallel.llm.layers_per_stage=[2,3,"};
    stderr_trap t;
    trap_begin(&t);
    e = load_fail(NULL, s8, 1);
    long printed = trap_end(&t);
    assert_err(&e, "--set", 0, "parallel.llm.layers_per_stage", "cannot read the value");
    ck_assert_int_eq(printed, 0);

    const char *s9[] = {"train.seq_len="};
    e = load_fail(NULL, s9, 1);
    assert_err(&e, "--set", 0, "train.seq_len", "no value");

    const char *s10[] = {"train..seq_len=5"};
    e = load_fail(NULL, s10, 1);
    assert_err(&e, "--set", 0, "train..seq_len", "empty part");

    const char *s11[] = {"parallel.llm.layers_per_stage=[2,x]"};
    e = load_fail(NULL, s11, 1);
    assert_err(&e, "--set", 0, "parallel.llm.layers_per_stage", "expected an integer, got 'x'");

    const char *s12[] = {"parallel.llm={tp: 2, dp: -1}"};
    e = load_fail(NULL, s12, 1);
    assert_err(&e, "--set", 0, "parallel.llm.dp", "must be >= 1, got -1");

    const char *s13[] = {"train.zero=4"};
    e = load_fail(NULL, s13, 1);
    assert_err(&e, "--set", 0, "train.zero", "must be between 0 and 3, got 4");

    const char *s15[] = {"workload=3"};
    e = load_fail(NULL, s15, 1);
    assert_err(&e, "--set", 0, "workload", "expected `text`, a mixture or trace file");

    const char *s16[] = {"workload={kind: fixed}"};
    e = load_fail(NULL, s16, 1);
    assert_err(&e, "--set", 0, "workload", "needs images, text_tokens or audio_seconds");

    const char *s14[] = {"workload={kind: fixd, images: 1}"};
    e = load_fail(NULL, s14, 1);
    assert_err(&e, "--set", 0, "workload.kind", "did you mean 'fixed'?");
}
END_TEST

/* ---- canonical text -------------------------------------------------------- */

START_TEST(canonical_stable)
{
    mm_scenario *a = load_ok(NULL, NULL, 0);
    const char *same[] = {"train.seq_len=4096", "parallel.llm.zero=1", "parallel.llm.cp=1"};
    mm_scenario *b = load_ok(NULL, same, 3);
    const char *diff[] = {"train.seq_len=2048"};
    mm_scenario *c = load_ok(NULL, diff, 1);
    char *ta = canon(a), *tb = canon(b), *tc = canon(c);
    ck_assert_str_eq(ta, tb);
    ck_assert_str_ne(ta, tc);
    ck_assert_ptr_nonnull(strstr(ta, "  seq_len: 4096\n"));
    ck_assert_ptr_nonnull(strstr(tc, "  seq_len: 2048\n"));
    ck_assert_ptr_nonnull(strstr(ta, "model: \"models/llava-ov-qwen2.5-7b.yaml\"\n"));
    ck_assert_ptr_nonnull(
        strstr(ta, "  llm: {tp: 4, pp: 2, cp: 1, dp: 2, vpp: 1, ep: 1, zero: 1, recompute: selective, sp: false, "
                   "layers_per_stage: [], embedding_in_split: false, loss_in_split: false}\n"));
    ck_assert_ptr_nonnull(strstr(ta, "  vision: {tp: 1, pp: 1, cp: 1, dp: 16, vpp: 1, ep: 1, zero: 1, recompute: selective, sp: false, "
                                     "layers_per_stage: [], embedding_in_split: false, loss_in_split: false}\n"));
    /* a module's sequence parallelism is part of the text */
    const char *spv[] = {"parallel.vision.sp=true"};
    mm_scenario *d = load_ok(NULL, spv, 1);
    char *tsp = canon(d);
    ck_assert_ptr_nonnull(strstr(tsp, "dp: 16, vpp: 1, ep: 1, zero: 1, recompute: selective, sp: true,"));
    free(tsp);
    drop(d);
    ck_assert_ptr_nonnull(strstr(ta, "  audio: null\n"));
    /* A short buffer is filled as far as it goes and terminated. */
    char small[16];
    size_t need = mm_scenario_canonical(a, small, sizeof small);
    ck_assert_uint_eq(need, strlen(ta));
    ck_assert_uint_eq(strlen(small), sizeof small - 1);
    ck_assert_int_eq(strncmp(small, ta, sizeof small - 1), 0);
    free(ta);
    free(tb);
    free(tc);
    drop(a);
    drop(b);
    drop(c);
}
END_TEST

START_TEST(canonical_order_free_frozen)
{
    const char *s1[] = {"train.frozen=[vision, audio]"};
    const char *s2[] = {"train.frozen=[audio, vision, audio]"};
    mm_scenario *a = load_ok(NULL, s1, 1), *b = load_ok(NULL, s2, 1);
    char *ta = canon(a), *tb = canon(b);
    ck_assert_str_eq(ta, tb);
    ck_assert_ptr_nonnull(strstr(ta, "  frozen: [\"audio\", \"vision\"]\n"));
    free(ta);
    free(tb);
    drop(a);
    drop(b);
}
END_TEST

/* The canonical text is itself a scenario that loads to the same text. */
START_TEST(canonical_round_trip)
{
    const char *files[] = {NULL, DATA "full.yaml", DATA "minimal.yaml"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        mm_scenario *a = load_ok(files[i], NULL, 0);
        char *ta = canon(a);
        char path[] = "/tmp/mm_test_config_canon_XXXXXX";
        int fd = mkstemp(path);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, ta, strlen(ta)), (ssize_t)strlen(ta));
        close(fd);
        mm_scenario *b = load_ok(path, NULL, 0);
        unlink(path);
        char *tb = canon(b);
        ck_assert_str_eq(ta, tb);
        free(ta);
        free(tb);
        drop(a);
        drop(b);
    }
}
END_TEST

/* An inline model (`model:` a mapping): its canonical text is the same
 * whatever the key order and quoting of the config, reads back to itself,
 * and differs from another config's; the scenario's model path is empty. */
START_TEST(scenario_inline_model_canonical)
{
    const char *a = "model:\n  model_type: llama\n  hidden_size: 1024\n  num_hidden_layers: 4\n"
                    "  num_attention_heads: 16\n  intermediate_size: 2816\n  vocab_size: 32000\n"
                    "  architectures: [LlamaForCausalLM]\n  rope_scaling: null\n"
                    "cluster: {topology: topologies/dgx-h100.yaml}\n";
    const char *b = "cluster: {topology: topologies/dgx-h100.yaml}\n"
                    "model: {\"vocab_size\": 32000, \"rope_scaling\": null, \"num_attention_heads\": 16,\n"
                    "  \"architectures\": [\"LlamaForCausalLM\"], \"intermediate_size\": 2816,\n"
                    "  \"num_hidden_layers\": 4, \"hidden_size\": 1024, \"model_type\": \"llama\"}\n";
    mm_scenario sa, sb, back;
    mm_err e;
    ck_assert_int_eq(mm_scenario_load_text(&sa, "a.yaml", a, NULL, 0, &e), 0);
    ck_assert_int_eq(mm_scenario_load_text(&sb, "b.yaml", b, NULL, 0, &e), 0);
    ck_assert(mm_scenario_model_inline(&sa));
    ck_assert_str_eq(sa.model, "");
    char *ta = canon(&sa), *tb = canon(&sb);
    ck_assert_str_eq(ta, tb);
    const char *want = "model:\n  architectures: [LlamaForCausalLM]\n  hidden_size: 1024\n  intermediate_size: 2816\n"
                       "  model_type: llama\n  num_attention_heads: 16\n  num_hidden_layers: 4\n"
                       "  rope_scaling: null\n  vocab_size: 32000\ncluster:\n";
    ck_assert_msg(!strncmp(ta, want, strlen(want)), "%s", ta);
    ck_assert_int_eq(mm_scenario_load_text(&back, "<text>", ta, NULL, 0, &e), 0);
    char *tc = canon(&back);
    ck_assert_str_eq(ta, tc);
    /* another config, another text: a quoted number is not the number */
    const char *sets[] = {"model.num_hidden_layers=8"};
    mm_scenario sd;
    ck_assert_int_eq(mm_scenario_load_text(&sd, "a.yaml", a, sets, 1, &e), 0);
    char *td = canon(&sd);
    ck_assert_ptr_nonnull(strstr(td, "\n  num_hidden_layers: 8\n"));
    ck_assert_str_ne(ta, td);
    /* a path again replaces the inline model */
    const char *path[] = {"model=models/llama-2-7b.json"};
    mm_scenario sp;
    ck_assert_int_eq(mm_scenario_load_text(&sp, "a.yaml", a, path, 1, &e), 0);
    ck_assert(!mm_scenario_model_inline(&sp));
    char *tp = canon(&sp);
    ck_assert_ptr_nonnull(strstr(tp, "model: \"models/llama-2-7b.json\"\n"));
    free(ta);
    free(tb);
    free(tc);
    free(td);
    free(tp);
    mm_scenario_free(&sa);
    mm_scenario_free(&sb);
    mm_scenario_free(&back);
    mm_scenario_free(&sd);
    mm_scenario_free(&sp);
}
END_TEST

/* A bad key or value of an inline model names the scenario's file, the
 * line and the key under `model.`; an override's names --set. */
START_TEST(scenario_inline_model_errors)
{
    const char *head = "cluster: {topology: topologies/dgx-h100.yaml}\nmodel:\n  model_type: llama\n"
                       "  hidden_size: 1024\n  num_attention_heads: 16\n";
    struct {
        const char *tail;
        int line;
        const char *key, *msg;
    } bad[] = {
        {"  num_hiden_layers: 4\n", 6, "model.num_hiden_layers", "not modeled"},
        {"  num_hidden_layers: four\n", 6, "model.num_hidden_layers", "integer"},
        {"  num_hidden_layers: 4\n  hidden_act: quantum\n", 7, "model.hidden_act", "quantum"},
    };
    char text[1024];
    mm_scenario sc;
    mm_err e;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(text, sizeof text, "%s%s", head, bad[i].tail);
        mm_err_clear(&e);
        ck_assert_int_eq(mm_scenario_load_text(&sc, "job.yaml", text, NULL, 0, &e), -MM_EINPUT);
        assert_err(&e, "job.yaml", bad[i].line, bad[i].key, bad[i].msg);
    }
    ck_assert_int_eq(mm_scenario_load_text(&sc, "job.yaml", "model: [1, 2]\n", NULL, 0, &e), -MM_EINPUT);
    assert_err(&e, "job.yaml", 1, "model", "a model file path or the model's config keys");
    snprintf(text, sizeof text, "%s  num_hidden_layers: 4\n", head);
    const char *sets[] = {"model.num_attention_heads=0"};
    ck_assert_int_eq(mm_scenario_load_text(&sc, "job.yaml", text, sets, 1, &e), -MM_EINPUT);
    assert_err(&e, "--set", 0, "model.num_attention_heads", "");
}
END_TEST

static Suite *scenario_suite(void)
{
    Suite *s = suite_create("scenario");

    TCase *sc = tcase_create("scenario");
    tcase_add_test(sc, scenario_default_values);
    tcase_add_test(sc, scenario_inline_model_canonical);
    tcase_add_test(sc, scenario_inline_model_errors);
    tcase_add_test(sc, scenario_memory_reserve);
    tcase_add_test(sc, scenario_name_tables);
    tcase_add_test(sc, scenario_full_file);
    tcase_add_test(sc, scenario_minimal_defaults);
    tcase_add_test(sc, scenario_missing_file);
    tcase_add_test(sc, scenario_syntax_error);
    tcase_add_test(sc, scenario_unknown_root_key);
    tcase_add_test(sc, scenario_unknown_layout_key);
    tcase_add_test(sc, scenario_wrong_types);
    tcase_add_test(sc, scenario_bad_degrees);
    tcase_add_test(sc, scenario_bad_enum);
    tcase_add_test(sc, scenario_missing_model);
    suite_add_tcase(s, sc);

    TCase *set = tcase_create("set");
    tcase_add_test(set, set_values_parse);
    tcase_add_test(set, set_on_file);
    tcase_add_test(set, set_errors);
    suite_add_tcase(s, set);

    TCase *can = tcase_create("canonical");
    tcase_add_test(can, canonical_stable);
    tcase_add_test(can, canonical_order_free_frozen);
    tcase_add_test(can, canonical_round_trip);
    suite_add_tcase(s, can);
    return s;
}

int main(void)
{
    const char *src = getenv("MMSIM_SRCDIR");
    if (src && src[0] && chdir(src) != 0) {
        perror(src);
        return 1;
    }
    SRunner *sr = srunner_create(scenario_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
