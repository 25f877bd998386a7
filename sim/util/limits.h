/* limits.h - the documented bounds on what one mmsim process will take
 * (docs/reliability.md): sizes past them are refused with exit 2 and a message
 * naming the key, rather than run for hours or until the memory is gone.
 * They are far above any real training run the simulator models (the
 * largest in the papers it reproduces: Megatron-LM's 1T model on 3,072
 * GPUs, global batch 3,072); raise one here, with a test, when a real
 * scenario needs it.  File and document bounds are in util/file.h and
 * util/doc.h.
 * Not for: the checks themselves (hw/cluster.c, scenario/limits.c, the CLI). */
#ifndef MM_LIMITS_H
#define MM_LIMITS_H

/* GPUs of one simulated cluster (nodes x GPUs per node): a flow-level
 * all-reduce on 32,768 GPUs takes ~1 s per message size (scripts/bench). */
#define MM_LIMIT_GPUS 65536
/* Simulated iterations of one run (each is one event-level replay). */
#define MM_LIMIT_ITERATIONS 10000
/* Micro-batches per DP replica and iteration (the op graph grows with
 * them: ops ~ micro-batches x layers x stages). */
#define MM_LIMIT_MICRO_BATCHES 16384
/* Samples of one global batch (drawn and batched every iteration). */
#define MM_LIMIT_GLOBAL_BATCH (1 << 24)

#endif
