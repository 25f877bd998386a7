/* usage.c - the usage text of `mmsim` and of each subcommand, as
 * `mmsim --help`, `mmsim help CMD` and `CMD --help` print them.
 * Not for: parsing (each cmd_*.c parses its own options). */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"


const char mm_cli_usage_main[] =
    "usage: mmsim <command> [arguments]\n"
    "\n"
    "Discrete-event simulator of (multimodal) LLM training on GPU clusters.\n"
    "\n"
    "commands:\n"
    "  run [SCENARIO.yaml]   simulate training iterations of a scenario\n"
    "  model MODEL           parameters, FLOPs and per-GPU memory of a model\n"
    "  collective            nccl-tests-style table of one collective on a topology\n"
    "  workload stats FILE   statistics of a mixture spec or sample trace\n"
    "  sweep SWEEP.yaml      run a grid of scenarios into one database\n"
    "  report DB             tables (or CSV) of the runs and sweeps in a database\n"
    "  plan [SCENARIO.yaml]  rank parallel layouts of a scenario on N GPUs by simulated cost\n"
    "  profile --format dflop DIR  DFLOP's profiler tables from simulated costs\n"
    "  help [COMMAND]        show help for a command (mmsim help help: about help)\n"
    "  help scenario         every scenario key: type, default, built-in value, doc\n"
    "  completion bash|zsh   the shell completion script (installed with mmsim)\n"
    "\n"
    "options:\n"
    "  -h, --help            show this help\n"
    "  --version             print the version\n"
    "\n"
    "Every command takes -h/--help, and its options as --opt VALUE or --opt=VALUE,\n"
    "before or after its operands.\n"
    "Exit status: 0 success, 2 bad input, 1 internal error.\n";

static const char usage_help[] =
    "usage: mmsim help [COMMAND]\n"
    "\n"
    "Prints the usage of COMMAND (run, model, collective, workload, sweep, report,\n"
    "plan, profile, completion, help), or the list of commands without one.  `mmsim COMMAND --help`\n"
    "prints the same.  `mmsim help scenario` lists every scenario key with its\n"
    "type, default, built-in value and doc.  Exit status 2 for a command that\n"
    "does not exist.\n";

static const char usage_run[] =
    "usage: mmsim run [SCENARIO.yaml] [--set KEY=VALUE]... [--json] [--db FILE]\n"
    "                 [--no-db] [--trace FILE] [--breakdown] [--no-symmetry] [-q | -v]\n"
    "       mmsim run [SCENARIO.yaml] (--megatron-args FILE | --megatron-script FILE.sh)\n"
    "                 [--megatron-model OUT.json]\n"
    "                 [--print-scenario] [--set KEY=VALUE]... [...]\n"
    "       mmsim run [SCENARIO.yaml] --torchtitan FILE.toml [--print-scenario]\n"
    "                 [--set KEY=VALUE]... [...]\n"
    "\n"
    "Simulates the scenario's iterations and prints a summary (or, with --json,\n"
    "one JSON object).  Without SCENARIO the built-in default runs.\n"
    "\n"
    "  -s, --set KEY=VALUE  override a dotted key of the scenario; VALUE is YAML,\n"
    "                   e.g. --set parallel.llm.tp=8 --set cluster.nodes=4\n"
    "                        --set parallel.llm.layers_per_stage=[2,3,3,2]\n"
    "  --json           print the metrics as one JSON object on stdout\n"
    "  --db FILE        SQLite database to append the run to\n"
    "                   (default " DEFAULT_DB ")\n"
    "  --no-db          do not store the run\n"
    "  --trace FILE     write the last iteration's timeline as Chrome-trace JSON\n"
    "                   (open in chrome://tracing or ui.perfetto.dev)\n"
    "  --breakdown      also print per layer and micro-batch the GEMM, attention\n"
    "                   and memory-bound time of the forward, input-gradient and\n"
    "                   weight-gradient passes, and the optimizer phase (--json\n"
    "                   always has it as \"breakdown\")\n"
    "  --no-symmetry    simulate every DP replica even where they are identical\n"
    "                   (docs/performance.md): the same metrics bit for bit under\n"
    "                   the analytic network, within 0.5 % under flow; slower\n"
    "  -q, --quiet      one line: iteration_time_s, tokens_per_s, mfu\n"
    "  -v, --verbose    also every iteration (and the Megatron or torchtitan\n"
    "                   mapping, on stderr)\n"
    "  --megatron-args FILE  a Megatron-LM argument list (as in a launch script)\n"
    "                   replaces the model by the GPT/Llama it describes, sets the\n"
    "                   layout, training keys and `workload: text`; dp comes from\n"
    "                   the cluster; --set still applies after it (docs/megatron.md)\n"
    "  --megatron-script FILE.sh  the same from a launch script, read, never run:\n"
    "                   its variables, arrays and quoted strings expanded, the\n"
    "                   arguments of its pretrain_gpt.py command taken; loops and\n"
    "                   command substitutions refused naming the line\n"
    "  --megatron-model OUT.json  also write the model's config.json there (the\n"
    "                   scenario holds the model inline either way)\n"
    "  --torchtitan FILE.toml  a torchtitan train config: the llama3 flavor's\n"
    "                   model, the layout under the fsdp profile (dp and ZeRO from\n"
    "                   the cluster), batch, sequence, recompute, precision and\n"
    "                   `workload: text`; every key it cannot map is refused at\n"
    "                   once; --set still applies after it (docs/torchtitan.md)\n"
    "  --print-scenario print the scenario --megatron-args, --megatron-script or\n"
    "                   --torchtitan made (YAML, with the mapping of each argument\n"
    "                   or key in comments) instead of running\n"
    "\n"
    "A progress line (iterations done, elapsed time) is drawn on stderr while it\n"
    "runs, when stderr is a terminal and neither -q nor --json is given.\n";

static const char usage_model[] =
    "usage: mmsim model MODEL [--seq N] [--images K] [--image HxW] [--set KEY=VALUE]... [--json]\n"
    "\n"
    "Parameters per module and in total, forward FLOPs per token and per sample,\n"
    "and per-GPU memory under a layout.  MODEL is an HF config.json (LLM,\n"
    "encoder or composite) or a model YAML (models/README.md).\n"
    "\n"
    "  --seq N          LLM tokens per sample (default train.seq_len)\n"
    "  --images K       images per sample for a vision model (default 1)\n"
    "  --image HxW      one image's size in pixels: its tokens at native resolution (Qwen2-VL towers)\n"
    "  --set KEY=VALUE  scenario key setting the layout, as for mmsim run,\n"
    "                   e.g. --set parallel.llm.tp=8 --set train.recompute=full\n"
    "  --json           one JSON object: params, modules, flops_fwd_per_token,\n"
    "                   memory_gib (per pipeline stage), oom, ...\n";

static const char usage_sweep[] =
    "usage: mmsim sweep SWEEP.yaml [--jobs N] [--db FILE] [--json] [--quiet]\n"
    "\n"
    "Runs every point of a sweep (a base scenario plus axes of --set style\n"
    "overrides, cartesian or zipped; see README) into one database.  Resumable:\n"
    "a point whose scenario is already in the database is skipped.  Progress\n"
    "goes to stderr.  Under mpirun (a build with -Dmpi=enabled) the points are\n"
    "shared among the ranks and rank 0 writes every result.\n"
    "\n"
    "  --jobs N    worker processes (default: the number of CPUs)\n"
    "  --db FILE   SQLite database (default " DEFAULT_DB ")\n"
    "  --json      print the sweep id, counts and each point's result as JSON\n"
    "  --quiet     no progress display\n";

static const char usage_report[] =
    "usage: mmsim report DB [--sweep ID|last] [--csv] [--metrics a,b,c]\n"
    "       mmsim report DB --dp-load RUN|last [--csv]\n"
    "\n"
    "Prints the runs of a database as a table (the sweeps first, when there\n"
    "are any); with --sweep, the points of one sweep with their swept values;\n"
    "with --dp-load, each LLM DP rank's compute seconds per iteration of one\n"
    "run (run --json's dp_rank_load_s).\n"
    "\n"
    "  --sweep ID   one sweep (its id, or 'last')\n"
    "  --dp-load R  one run's per-DP-rank loads (its id, or 'last')\n"
    "  --csv        comma-separated values with a header row, on stdout\n"
    "  --metrics L  metrics to show, e.g. iteration_time_s,tokens_per_s,mfu\n"
    "               (default iteration_time_s,tokens_per_s,mfu,peak_memory_gib)\n";

static const char usage_collective[] =
    "usage: mmsim collective COLLECTIVE --cluster FILE [--nodes N] [-g N]\n"
    "                        [-b 8] [-e 8G] [-f 2 | -i BYTES] [-o OP] [-d TYPE]\n"
    "                        [-n N] [-w N] [-c N] [-z N] [-a N] [--algo ALGO]\n"
    "                        [--network flow|analytic] [--show-algo] [--json]\n"
    "                        [-J FILE.json] [--comm-ranks N]\n"
    "\n"
    "Time of one collective over the first N GPUs of a topology, for sizes from\n"
    "-b to -e (K, M, G = powers of 1024), each -f times the last (or -i bytes\n"
    "more), printed in nccl-tests' output format (so its parsers read it): '#'\n"
    "headers; columns size, count, type, redop, root, then out-of-place and\n"
    "in-place time (us), algbw = size/time, busbw = algbw x the nccl-tests bus\n"
    "factor (all-reduce 2(n-1)/n for every algorithm, NVLS too) and #wrong (N/A:\n"
    "simulated); the '# Avg bus bandwidth' footer.  The algorithm chosen per size\n"
    "is in a '#' line at the end.  The flags are nccl-tests' own, with their\n"
    "meanings; what costs nothing in a simulator is accepted and changes nothing.\n"
    "\n"
    "  COLLECTIVE          allreduce | allgather | reducescatter | alltoall |\n"
    "                      broadcast | sendrecv (GPU 0 to the last node's first\n"
    "                      GPU); nccl-tests' names work too (all_reduce_perf ...);\n"
    "                      or --collective NAME, or --op NAME\n"
    "  --cluster FILE      topology file; --nodes N: nodes (default: the file's)\n"
    "  -g, --ngpus N       GPUs (default: all; --gpus N too)\n"
    "  -b, --minbytes S    smallest size (default 8; --min too)\n"
    "  -e, --maxbytes S    largest size (default 8G; --max too)\n"
    "  -f, --stepfactor F  multiply by F (default 2; --factor too); 1: add -i\n"
    "  -i, --stepbytes S   add S bytes per step (given alone: -f 1; default 1M)\n"
    "  -o, --op OP         reduction: sum (default) | prod | max | min | avg | mulsum\n"
    "                      | all (a row each); NVLS runs sum, and min/max of 16-bit\n"
    "                      and integer types only, so others fall back to ring/tree\n"
    "  -d, --datatype T    int8 | uint8 | int32 | uint32 | int64 | uint64 | half |\n"
    "                      float (default) | double | bfloat16 | f8e4m3 | f8e5m2 |\n"
    "                      all: the element size (count column, 16-byte rounding)\n"
    "  -n, --iters N       operations timed back to back (the time is per one)\n"
    "  -w, --warmup_iters N, -c, --check N, -z, --blocking 0-3, -a, --average 0-3\n"
    "                      accepted; no effect (no warm-up effect is modeled,\n"
    "                      nothing is moved to check, the ranks finish together)\n"
    "  --algo ALGO         auto (default) | ring | tree | hier | nvls | collnet\n"
    "                      (collnet: in-network all-reduce across nodes, SHARP in\n"
    "                      the switches, with NVLS inside each node when it has it;\n"
    "                      the topology's fabric.sharp enables it)\n"
    "  --network M         flow (default: max-min sharing) | analytic (alpha-beta)\n"
    "  --show-algo         add the algorithm as a last column of each row\n"
    "  --comm-ranks N      sendrecv: on a communicator of the first N GPUs (Megatron's\n"
    "                      batched pipeline sends use the PP group's), which sets\n"
    "                      NCCL's p2p channel count; default: the pair alone\n"
    "  --json              print nccl-tests' -J JSON (file version 3) instead of\n"
    "                      the table\n"
    "  -J, --output_file F also write that JSON to F (a name ending in .json)\n";

static const char usage_completion[] =
    "usage: mmsim completion bash|zsh\n"
    "\n"
    "Prints the completion script of the shell, made from the commands' option\n"
    "tables and the scenario keys: commands, options, the keys and values of\n"
    "--set, the choices of options such as collective's --algo, files elsewhere.\n"
    "meson install puts them where the shells look (bash-completion's\n"
    "share/bash-completion/completions/mmsim, zsh's share/zsh/site-functions/\n"
    "_mmsim); without installing: source <(mmsim completion bash).\n";

static const char usage_plan[] =
    "usage: mmsim plan [SCENARIO.yaml] [--gpus N] [--top K] [--json] [--all]\n"
    "                  [--db FILE | --no-db] [--iterations I] [--jobs N]\n"
    "                  [--placement LIST] [--max-pp N] [--space DIM=LIST]...\n"
    "                  [--explain] [--prove N] [--emit FORMAT FILE]\n"
    "                  [--set KEY=VALUE]...\n"
    "\n"
    "Finds the fastest parallel layout of the scenario's model, workload and\n"
    "training settings on N GPUs: enumerates the whole space the layout\n"
    "arithmetic allows (the encoder's placement, GPUs, tp, pp and recompute;\n"
    "the LLM's tp, cp, pp, vpp, dp, ep, the micro-batch size, recompute, ZeRO\n"
    "stage and schedule); prunes what does not validate or fit in memory\n"
    "(saying why); pre-scores the rest analytically; simulates the best K event\n"
    "by event; prints them ranked with the margin to the next.\n"
    "\n"
    "  --gpus N         GPUs (the cluster is resized to N / GPUs-per-node nodes;\n"
    "                   default: the scenario's cluster)\n"
    "  --top K          candidates simulated event by event (default 8)\n"
    "  --iterations I   iterations of each event-level run (default: the scenario's)\n"
    "  --json           one JSON object on stdout\n"
    "  --all            with --json: every candidate, pruned ones with the reason\n"
    "  --db FILE        database for the runs and the plan (default " DEFAULT_DB ")\n"
    "  --no-db          store nothing (the K runs happen in this process)\n"
    "  --jobs N         worker processes for the K runs (default: the CPUs);\n"
    "                   under mpirun (a build with -Dmpi=enabled) the runs are\n"
    "                   shared among the ranks instead and rank 0 alone prints\n"
    "                   and writes the database (--no-db refused)\n"
    "  --placement L    encoder placements to try, comma-separated (default all:\n"
    "                   pipeline,colocated,disjoint,homogeneous)\n"
    "  --max-pp N       largest LLM pipeline depth tried (default 32)\n"
    "  --space DIM=LIST keep only these values of one dimension, e.g. tp=4,8 or\n"
    "                   recompute=selective,full (dimensions: placement, enc_gpus,\n"
    "                   enc_tp, enc_pp, enc_recompute, tp, cp, pp, vpp, ep,\n"
    "                   micro_batch, recompute, zero, schedule); repeatable\n"
    "  --explain        also the size of the space per dimension\n"
    "  --prove N        up to N more event-level runs, after the K, of the\n"
    "                   candidates whose lower bound is below the best simulated\n"
    "                   time (lowest bound first), until none is left (default 0)\n"
    "  --emit FORMAT FILE  write the pick as the launch configuration of FORMAT:\n"
    "                   megatron (Megatron-LM's pretrain_gpt.py arguments, what\n"
    "                   mmsim run --megatron-args reads back), torchtitan (a train\n"
    "                   config TOML, what mmsim run --torchtitan reads back) or\n"
    "                   deepspeed (a DeepSpeed config JSON, and the Hugging Face\n"
    "                   Trainer's arguments beside it in FILE's stem.trainer.json);\n"
    "                   what FORMAT cannot express is refused by name (exit 2)\n"
    "                   and FILE is left as it was\n"
    "  -s, --set KEY=VALUE  scenario override, as for mmsim run\n"
    "  -q, --quiet      only the best layout and its time, on one line\n"
    "  -v, --verbose    also every candidate with its status and reason\n"
    "\n"
    "A status line is drawn on stderr while it plans, when stderr is a terminal.\n";

static const char usage_profile[] =
    "usage: mmsim profile [SCENARIO.yaml] --format dflop DIR [--names M,V,VS,L,LS]\n"
    "                     [--set KEY=VALUE]... [-q]\n"
    "\n"
    "Writes DFLOP's profiler tables into DIR from simulated costs of the\n"
    "scenario's model on its GPU, topology, framework and precision, so that\n"
    "DFLOP's data-aware optimizer plans a cluster that is not there: the\n"
    "throughput tables of the vision module by image count (1..64) and of the\n"
    "LLM by sequence length (1024..8192, and without the attention core), and\n"
    "the memory tables, at tensor parallelism 1, 2, 4 and 8, in DFLOP's file\n"
    "names, columns and units (ms, GiB); and the pickle of its data analysis,\n"
    "10000 samples' image crops and LLM tokens drawn from the scenario's\n"
    "workload (none for a text workload).  A model without a vision encoder,\n"
    "or with an MoE LLM, is refused (exit 2).\n"
    "\n"
    "  --format dflop DIR   the format (dflop only) and the folder (made if missing)\n"
    "  --names M,V,VS,L,LS  the names in the files: DFLOP's models.mllm,\n"
    "                       vision.name, vision.size, llm.name, llm.size\n"
    "                       (default llavaov,siglip,6b,qwen2.5,7b: its shipped config)\n"
    "  -s, --set KEY=VALUE  scenario override, as for mmsim run\n"
    "  -q, --quiet          print nothing on success\n";

static const char usage_workload[] =
    "usage: mmsim workload stats FILE [--model MODEL] [--samples N] [--seed S] [--json]\n"
    "                              [--tokens-per-tile N] [--tokens-per-frame N] [--max-tokens N]\n"
    "\n"
    "Counts by modality, mean, sd, p50/p90/p99 and text histograms of the LLM\n"
    "sequence length and the encoder load (tiles + frames + audio clips) of a\n"
    "workload: a mixture spec (workloads/*.yaml; N samples drawn with seed S,\n"
    "default 10000 and 1) or a trace (.csv; the whole file, or its first N\n"
    "samples, wrapping).\n"
    "\n"
    "  --model MODEL         take LLM tokens per tile/frame/audio second from a\n"
    "                        model config (default: 256 per tile and frame as\n"
    "                        InternVL, 25 per audio second as Qwen2-Audio)\n"
    "  --tokens-per-tile N   override tokens per image tile\n"
    "  --tokens-per-frame N  override tokens per video frame\n"
    "  --max-tokens N        truncate LLM sequences at N (model_max_length)\n"
    "  --json                one JSON object instead of the tables\n";

static const struct {
    const char *name, *usage;
} usages[] = {
    {"run", usage_run},       {"model", usage_model},   {"collective", usage_collective},
    {"workload", usage_workload}, {"sweep", usage_sweep}, {"report", usage_report},
    {"plan", usage_plan},     {"profile", usage_profile}, {"help", usage_help},     {"completion", usage_completion},
};

const char *mm_cli_usage_of(const char *cmd)
{
    for (size_t i = 0; i < sizeof usages / sizeof usages[0]; i++)
        if (!strcmp(cmd, usages[i].name))
            return usages[i].usage;
    return NULL;
}

int mm_cli_help(const char *cmd)
{
    const char *u = mm_cli_usage_of(cmd);
    fputs(u ? u : mm_cli_usage_main, stdout);
    return 0;
}
