#!/usr/bin/env python3
"""dflop.py - DFLOP (arXiv 2603.25120; code BDAI-Research/DFLOP) reproduced in mmsim:
  fig7   throughput of DFLOP against its Megatron-LM and PyTorch 3D baselines
         (and, labelled as an extra, mmsim's planner-best homogeneous layout)
         for the six models of Fig. 7 on 8 x 8 A100s, DFLOP's data mix (dflop-mix.yaml)
  fig8   DFLOP's gain against the encoder:LLM load ratio (two encoders x five LLMs)
  fig10  ablation: optimizer alone, scheduler alone, both
  fig13  pipeline idle time against its lower bound
Usage: dflop.py fig7|fig8|fig10|fig13  (scripts/reproduce runs them)

The systems, as mmsim runs them (the assumptions are written into each CSV):
  Megatron-LM   homogeneous placement (the encoder in the LLM's first pipeline
                stage, its layout inherited: Megatron-LM's LLaVA example),
                sequential batching, framework megatron-core, ZeRO 1
                (distributed optimizer), layout by the Megatron rule
                (common.megatron_rule_layout: least TP, then PP, that fits)
  PyTorch 3D    the same placement, batching and rule, torch.distributed
                without a distributed optimizer (ZeRO 0), framework fsdp
                (torchtitan's eager kernels, which DFLOP itself builds on)
  DFLOP         `mmsim plan --placement pipeline`, vpp 1 (common.plan_vpp1; the encoder on its own GPUs
                as pipeline stages ahead of the LLM: DFLOP's disjoint split,
                per-module TP/PP/DP), DFLOP's ILP batching (`balanced`),
                framework fsdp, padded to each micro-batch's longest sample
                (DFLOP passes per-micro-batch shapes; the baselines' pipelines
                pad to seq_len by their profiles' padding_pipelined).
                mmsim's planner is not DFLOP's closed form
                (it simulates its top candidates event by event, and also
                searches recomputation, ZeRO and the micro-batch size)
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import common as c  # noqa: E402

BASE = "scripts/repro/dflop/base.yaml"
M = "scripts/repro/dflop/models/"
GPUS = 64
# Fig. 7 models: (label, model file, published speedup over Megatron-LM; the two
# secondary summaries of the DFLOP paper disagree, both kept as "A/B")
FIG7 = [
    ("LLaVA-OV Qwen2.5-7B", "models/llava-ov-qwen2.5-7b.yaml", "1.2/1.3"),
    ("LLaVA-OV Llama-3-8B", M + "llava-ov-llama-3-8b.yaml", "-/2.3"),
    ("LLaVA-OV Qwen2.5-32B", M + "llava-ov-qwen2.5-32b.yaml", "2.3/2.7"),
    ("LLaVA-OV Llama-3-70B", M + "llava-ov-llama-3-70b.yaml", "-/-"),
    ("LLaVA-OV Qwen2.5-72B", "models/llava-ov-qwen2.5-72b.yaml", "3.6/3.6"),
    ("InternVL-2.5 Qwen2.5-72B", M + "internvit-qwen2.5-72b.yaml", "3.6/3.1"),
]


# InternVL-2.5-72B's baselines do not fit 64 A100s with InternViT-6B trained
# (docs/reproductions.md).  NVIDIA's NVLM recipe for the same pair freezes the
# tower (NVIDIA/Megatron-LM examples/multimodal/nvlm/sft_qwen20_72b_internvit_6b.sh
# @ d98e8a64dd: --freeze-ViT; docs/megatron.md), so these rows run both
# baselines that way, labelled.  DFLOP trains the tower (its cost model counts
# the vision backward: BDAI-Research/DFLOP dflop/prof_utils.py @ 60e86d8, the
# factor 3 of the vision FLOPs; nothing in its code freezes a module), so
# DFLOP is run both ways too: trained (the paper's setting) and frozen (the
# like-for-like comparison with the frozen baselines).
FROZEN_TOWER = ["train.frozen=[vision]"]
FROZEN_MODELS = ("InternVL-2.5 Qwen2.5-72B",)


# NVIDIA's published Megatron layouts for the same LLM in a VLM, where one
# exists: Megatron-Bridge's Qwen2.5-VL fine-tuning recipes
# (NVIDIA-NeMo/Megatron-Bridge @ 2eea3d1d5, 2025-10-17, before the DFLOP
# paper: src/megatron/bridge/recipes/qwen_vl/qwen25_vl.py,
# qwen25_vl_{7b,32b,72b}_finetune_config: tensor_parallelism 2 / 8 / 8,
# pipeline_parallelism 1 / 2 / 4, no recomputation set).  The paper does not
# print its Megatron-LM layouts, so these are a second reading of "what a
# Megatron-LM user runs" beside the rule, shown as their own rows; the rule
# stays the baseline of every other figure.  The recipe's sequence length
# (4,096) and micro-batch (2) are not taken: the base scenario's 8,192 and 1
# are DFLOP's setting for every system.  A recipe layout that does not fit at
# 8,192 gets the rule's fallback (the scenario's recomputation, then full).
# Pipelined recipe layouts pad every sample to seq_len through the
# megatron-core profile's padding_pipelined (LLaVAModel._preprocess_data).
# InternVL-2.5-72B (InternViT-6B + Qwen2.5-72B): NVIDIA's NVLM recipe for the
# pair runs TP 8 x PP 4 with the tower frozen (Megatron-LM
# examples/multimodal/nvlm/sft_qwen20_72b_internvit_6b.sh @ d98e8a64dd:
# --tensor-model-parallel-size 8 --pipeline-model-parallel-size 4
# --freeze-ViT), so its recipe row is frozen like the NVLM rows.
# No published NVIDIA layout pairs LLaVA-OV with Llama-3 (Megatron-LM's
# Llama-3.1 VLM example, llama_3p1_nemotron_nano_vl_8b_v1, packs samples with
# a RADIO tower: not this baseline), so Llama-3 rows have none.
# label: (tp, pp, extra sets, row name)
RECIPE_LAYOUTS = {
    "LLaVA-OV Qwen2.5-7B": (2, 1, [], "Megatron-Bridge"),
    "LLaVA-OV Qwen2.5-32B": (8, 2, [], "Megatron-Bridge"),
    "LLaVA-OV Qwen2.5-72B": (8, 4, [], "Megatron-Bridge"),
    "InternVL-2.5 Qwen2.5-72B": (8, 4, FROZEN_TOWER, "NVLM, tower frozen"),
}


def recipe_baseline(label, sets):
    """(result, layout string, row name) of Megatron-LM on NVIDIA's recipe
    layout for this LLM (RECIPE_LAYOUTS), or (None, None, None) where there
    is none."""
    if label not in RECIPE_LAYOUTS:
        return None, None, None
    tp, pp, extra, name = RECIPE_LAYOUTS[label]
    dp = GPUS // (tp * pp)
    lay = ["parallel.llm={tp: %d, pp: %d, dp: %d}" % (tp, pp, dp)]
    for rc in ("none", "selective", "full"):
        r = c.run(BASE, sets + extra + lay + ["train.recompute=" + rc])
        if c.ok(r):
            return r, "homogeneous | llm tp%d pp%d dp%d | %s recompute" % (tp, pp, dp, rc), name
    return r, "homogeneous | llm tp%d pp%d dp%d | does not fit" % (tp, pp, dp), name


def megatron(model):
    sets = ["model=" + model, "parallel.placement=homogeneous", "batching=sequential", "train.zero=1"] + \
        c.framework_sets("megatron-core")
    return sets


def pytorch3d(model):
    return ["model=" + model, "parallel.placement=homogeneous", "batching=sequential", "train.zero=0"] + \
        c.framework_sets("fsdp")


# DFLOP's own pipeline hands each micro-batch's shapes to its stages
# (BDAI-Research/DFLOP train.py @ 60e86d8; dflop/train.py @ 1ef6416: inp_meta
# and out_meta from the batch at every step) and its LLM collator pads to the
# micro-batch's longest sample (dflop/utils/data_sched_utils.py @ c641d61
# DataCollator: pad_sequence; its attention then unpads,
# dflop/torchtune_models.py flash_attn_varlen_func, which `longest` does not
# model): not the fixed shape the fsdp profile's pipelined default
# (torch.distributed.pipelining) pads to.
DFLOP_PADDING = ["train.padding=longest"]


def dflop_sets(model, batching="balanced"):
    return ["model=" + model, "batching=" + batching] + c.framework_sets("fsdp") + DFLOP_PADDING


def baseline(sets):
    """(result, layout string) of a homogeneous baseline under the Megatron rule."""
    lay = c.megatron_rule_layout(BASE, GPUS, [], sets)
    if lay is None:
        return {"error": "no tp x pp up to 8 x 16 fits"}, "none fits"
    r = c.run(BASE, sets + layout_set(lay))
    r["rule_layout"] = lay
    return r, "homogeneous | llm tp%d pp%d dp%d | %s recompute" % (lay[0], lay[1], lay[2],
                                                                   "full" if lay[3] == "full" else "selective")


def layout_set(lay):
    return ["parallel.llm={tp: %d, pp: %d, dp: %d}" % lay[:3]] + (["train.recompute=full"] if lay[3] == "full" else [])


# What the planner may vary for DFLOP: the encoder's and the LLM's GPUs, tp,
# pp and recompute, as DFLOP's optimizer splits the GPUs between them
# (BDAI-Research/DFLOP data_aware_optimizer.py); the settings the paper holds
# fixed stay the base scenario's (micro-batch 1, ZeRO 1, plain 1F1B without
# interleaving or context parallelism), which also keeps the plans over drawn
# data quick.
SPACE = ("micro_batch=1", "zero=1", "schedule=1f1b", "vpp=1", "cp=1")


def plan_dflop(model, batching="balanced", extra=()):
    r = c.plan_vpp1(BASE, GPUS, "pipeline", dflop_sets(model, batching) + list(extra), space=SPACE)
    return r, r.get("layout", r.get("error", ""))


def plan_homog(model):
    r = c.plan(BASE, GPUS, "homogeneous", ["model=" + model, "batching=sequential"] +
               c.framework_sets("megatron-core"), space=SPACE)
    return r, r.get("layout", r.get("error", ""))


NOTES = [
    "DFLOP reproduction in mmsim (scripts/repro/dflop/dflop.py); scenario scripts/repro/dflop/base.yaml "
    "(its comment lists what the paper leaves open and what is assumed)",
    "Megatron-LM / PyTorch 3D: homogeneous placement, sequential batching, the Megatron layout rule "
    "(least TP in 1,2,4,8 then PP in 1..16 that fits in memory, selective then full recomputation; DP the rest); ZeRO 1 / ZeRO 0",
    "DFLOP: mmsim plan --placement pipeline over vpp-1 candidates (DFLOP runs plain 1F1B; the encoder on its own "
    "GPUs ahead of the LLM), batching balanced (ILP), its top 4 by the planner's estimate simulated",
    "planner-best homogeneous: an extra comparison, not a paper baseline (mmsim plan --placement homogeneous)",
]


def tput(r):
    return r.get("tokens_per_s") if c.ok(r) else None


def ratio(a, b):
    return a / b if a and b else None


def fig7():
    rows, data, frozen, trained, recipe = [], [], [], [], []
    for label, model, pub in FIG7:
        meg, meg_l = baseline(megatron(model))
        pt, pt_l = baseline(pytorch3d(model))
        df, df_l = plan_dflop(model)
        ho, ho_l = plan_homog(model)
        base = tput(meg)
        trained.append((df, base))
        for system, r, lay, p in (("Megatron-LM", meg, meg_l, "1"), ("PyTorch 3D", pt, pt_l, ""),
                                  ("DFLOP", df, df_l, pub), ("planner-best homogeneous (extra)", ho, ho_l, "")):
            rows.append([label, system, lay, r.get("iteration_time_s") if c.ok(r) else r.get("error", "oom"),
                         tput(r), r.get("tflops_per_gpu") if c.ok(r) else None, ratio(tput(r), base), p])
        if label in FROZEN_MODELS:
            megf, megf_l = baseline(megatron(model) + FROZEN_TOWER)
            ptf, ptf_l = baseline(pytorch3d(model) + FROZEN_TOWER)
            dff, dff_l = plan_dflop(model, extra=FROZEN_TOWER)
            basef = tput(megf)
            for system, r, lay, p in (("Megatron-LM, tower frozen (NVLM)", megf, megf_l, "1"),
                                      ("PyTorch 3D, tower frozen (NVLM)", ptf, ptf_l, ""),
                                      ("DFLOP over the frozen-tower Megatron-LM", df, df_l, pub),
                                      ("DFLOP, tower frozen (like for like)", dff, dff_l, "")):
                rows.append([label, system, lay, r.get("iteration_time_s") if c.ok(r) else r.get("error", "oom"),
                             tput(r), r.get("tflops_per_gpu") if c.ok(r) else None, ratio(tput(r), basef), p])
            frozen.append((label, ratio(tput(df), basef), ratio(tput(dff), basef)))
            if base is None:
                df_ratio = ratio(tput(df), basef)
            else:
                df_ratio = ratio(tput(df), base)
        else:
            df_ratio = ratio(tput(df), base)
        rec, rec_l, rec_n = recipe_baseline(label, megatron(model))
        if rec is not None:
            recipe.append((label, ratio(tput(df), tput(rec))))
            systems = [("Megatron-LM, NVIDIA recipe layout (%s)" % rec_n, rec, rec_l, ""),
                       ("DFLOP over the recipe-layout Megatron-LM", df, df_l, pub)]
            if label in FROZEN_MODELS:
                systems.append(("DFLOP, tower frozen, over the recipe-layout Megatron-LM", dff, dff_l, ""))
            for system, r, lay, p in systems:
                rows.append([label, system, lay, r.get("iteration_time_s") if c.ok(r) else r.get("error", "oom"),
                             tput(r), r.get("tflops_per_gpu") if c.ok(r) else None, ratio(tput(r), tput(rec)), p])
        data.append([label.replace("LLaVA-OV ", "").replace("InternVL-2.5 Qwen2.5-72B", "InternVL-72B"),
                     ratio(tput(pt), base), df_ratio, ratio(tput(ho), base),
                     float(pub.split("/")[-1]) if pub.split("/")[-1] != "-" else None])
    sp = [ratio(tput(r), b) for r, b in trained if ratio(tput(r), b)]
    gap = ("mmsim's DFLOP/Megatron-LM speedup spans %.2f-%.2fx against the published 1.2-3.6x" % (min(sp), max(sp))
           if sp else "no DFLOP run fitted")
    for label, tr, fr in frozen:
        gap += ("; %s over the frozen-tower Megatron-LM (NVLM): DFLOP %s, DFLOP frozen too %s" %
                (label.replace("InternVL-2.5 Qwen2.5-72B", "InternVL-72B"),
                 "%.2fx" % tr if tr else "n/a", "%.2fx" % fr if fr else "n/a"))
    rs = [(lab, g) for lab, g in recipe if g]
    if rs:
        gap += ("; over Megatron-LM on NVIDIA's recipe layouts (Megatron-Bridge Qwen2.5-VL, NVLM): " +
                ", ".join("%s %.2fx" % (lab.replace("LLaVA-OV ", "").replace("InternVL-2.5 Qwen2.5-72B",
                                                                           "InternVL-72B (NVLM, frozen)"), g)
                          for lab, g in rs))
    gap += "; docs/reproductions.md names the mechanisms"
    c.write_csv("dflop-fig7", ["model", "system", "layout", "iteration_time_s", "tokens_per_s", "tflops_per_gpu",
                               "speedup_vs_megatron", "published"], rows,
                NOTES + [c.framework_note(), "published: speedup over Megatron-LM as the two summaries of "
                         "the DFLOP paper give it (A/B; - = not given); Llama-3-70B has none",
                         "InternVL-72B, tower frozen (NVLM): both baselines with InternViT-6B frozen, as NVIDIA's "
                         "NVLM recipe for this pair (Megatron-LM examples/multimodal/nvlm/sft_qwen20_72b_internvit_6b.sh "
                         "@ d98e8a64dd, --freeze-ViT); their speedup column is over the frozen-tower Megatron-LM; "
                         "DFLOP trains the tower (dflop/prof_utils.py @ 60e86d8), so it is shown trained and frozen",
                         "NVIDIA recipe layout: Megatron-LM on the layout NVIDIA publishes for the same Qwen2.5 LLM in a VLM "
                         "(NVIDIA-NeMo/Megatron-Bridge @ 2eea3d1d5 src/megatron/bridge/recipes/qwen_vl/qwen25_vl.py: "
                         "7B tp 2 pp 1, 32B tp 8 pp 2, 72B tp 8 pp 4, no recomputation; the rule's fallback where it does "
                         "not fit at 8,192), padded to seq_len when pipelined (megatron-core padding_pipelined); "
                         "InternVL-72B's is the NVLM recipe's tp 8 pp 4 with the tower frozen (Megatron-LM "
                         "examples/multimodal/nvlm/sft_qwen20_72b_internvit_6b.sh @ d98e8a64dd); "
                         "its speedup column is over that row; no such recipe for Llama-3"], gap)
    c.gnuplot("dflop-fig7", """
set title 'DFLOP Fig. 7 in mmsim: throughput over Megatron-LM, 64 A100s, DFLOP data mix (dflop-mix.yaml)'
set ylabel 'tokens/s relative to Megatron-LM'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set yrange [0:*]
set grid ytics
set xtics noenhanced
set key top left noenhanced
plot $data using 2:xtic(1) title 'PyTorch 3D', '' using 3 title 'DFLOP (mmsim)', \\
     '' using 4 title 'planner-best homogeneous (extra)', '' using 5 title 'DFLOP published (summary B)'
""", data)


# Fig. 8: encoders x LLMs of DFLOP's zoo that mmsim has configs for
FIG8_ENC = [("SigLIP-400M", "llava-ov-"), ("InternViT-6B", "internvit-")]
FIG8_LLM = ["qwen2.5-7b", "llama-3-8b", "qwen2.5-32b", "llama-3-70b", "qwen2.5-72b"]


def model_file(prefix, llm):
    if prefix == "llava-ov-" and llm in ("qwen2.5-7b", "qwen2.5-72b"):
        return "models/llava-ov-%s.yaml" % llm
    return M + prefix + llm + ".yaml"


def load_ratio(r):
    """Encoder:LLM compute of a homogeneous run (both on the same GPUs): the
    modules' compute seconds, as mmsim reports them."""
    if not c.ok(r):
        return None
    mods = {m["name"]: m["compute_s"] for m in r.get("modules", [])}
    return mods.get("vision", 0) / mods["llm"] if mods.get("llm") else None


def fig8():
    rows, data = [], []
    for enc, prefix in FIG8_ENC:
        for llm in FIG8_LLM:
            model = model_file(prefix, llm)
            meg, meg_l = baseline(megatron(model))
            df, df_l = plan_dflop(model)
            lr = load_ratio(meg)
            g = ratio(tput(df), tput(meg))
            rows.append([enc, llm, lr, meg_l, df_l, tput(meg), tput(df), g, ""])
            data.append([lr, g])
    data = sorted((d for d in data if d[0] and d[1]), key=lambda d: d[0])
    best = max(data, key=lambda d: d[1]) if data else None
    gap = ("published (◐): the benefit is largest when encoder and LLM loads are close; in mmsim the largest gain "
           "%.2fx is at load ratio %.3f" % (best[1], best[0]) if best else "no point ran")
    c.write_csv("dflop-fig8", ["encoder", "llm", "encoder_llm_load_ratio", "megatron_layout", "dflop_layout",
                               "megatron_tokens_per_s", "dflop_tokens_per_s", "speedup", "published"], rows,
                NOTES + [c.framework_note(), "load ratio: vision/LLM compute seconds of the Megatron-LM run "
                         "(the same GPUs run both); published gives no numbers, only the trend (DFLOP Fig. 8, per secondary summaries)"], gap)
    c.gnuplot("dflop-fig8", """
set title 'DFLOP Fig. 8 in mmsim: DFLOP over Megatron-LM vs encoder:LLM load (64 A100s)'
set xlabel 'encoder : LLM compute ratio (Megatron-LM run)'
set ylabel 'speedup over Megatron-LM'
set logscale x
set grid
unset key
plot $data using 1:2 with linespoints lw 2 pt 7
""", data)


FIG10 = [("Llama-3-8B", M + "llava-ov-llama-3-8b.yaml", "optimizer"),
         ("Qwen2.5-32B", M + "llava-ov-qwen2.5-32b.yaml", "scheduler"),
         ("InternVL-72B", M + "internvit-qwen2.5-72b.yaml", "both")]


def fig10():
    rows, data = [], []
    for label, model, pub in FIG10:
        base, base_l = baseline(pytorch3d(model))
        sched = {"error": "baseline does not fit"}
        if "rule_layout" in base:
            sched = c.run(BASE, pytorch3d(model) + ["batching=balanced"] + layout_set(base["rule_layout"]))
        opt, opt_l = plan_dflop(model, "sequential")
        both, both_l = plan_dflop(model, "balanced")
        b = tput(base)
        g = [ratio(tput(x), b) for x in (sched, opt, both)]
        for name, r, lay in (("baseline (PyTorch 3D)", base, base_l), ("scheduler alone", sched, base_l),
                             ("optimizer alone", opt, opt_l), ("both (DFLOP)", both, both_l)):
            rows.append([label, name, lay, tput(r), ratio(tput(r), b), pub if name == "both (DFLOP)" else ""])
        data.append([label] + g)
    dom = []
    for d in data:
        if d[1] and d[2]:
            dom.append("%s: %s" % (d[0], "optimizer" if d[2] > d[1] else "scheduler"))
    gap = ("published (◐) larger contributor: Llama-3-8B optimizer, Qwen2.5-32B scheduler, InternVL-72B both; "
           "mmsim: " + ", ".join(dom))
    c.write_csv("dflop-fig10", ["model", "variant", "layout", "tokens_per_s", "speedup_vs_baseline", "published"],
                rows, NOTES + [c.framework_note(), "scheduler alone: the baseline's layout with batching balanced; "
                               "optimizer alone: the pipeline plan with sequential batching",
                               "published: which component contributes more (DFLOP Fig. 10, per secondary summaries; no numbers)"], gap)
    c.gnuplot("dflop-fig10", """
set title 'DFLOP Fig. 10 in mmsim: ablation over the PyTorch 3D baseline, 64 A100s'
set ylabel 'speedup over the baseline'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set yrange [0:*]
set grid ytics
set key top left
plot $data using 2:xtic(1) title 'scheduler alone', '' using 3 title 'optimizer alone', '' using 4 title 'both'
""", data)


def idle(r):
    """(idle fraction, its lower bound), averaged over pipeline stages.
    idle: stage s's idle seconds over the iteration time (mmsim's per-stage
    accounting).  Lower bound: a pipeline whose busiest stage takes B over m
    micro-batches cannot finish before T = B (m + S - 1) / m (fill and drain
    at that stage's pace), and every stage then idles at least T - its own
    busy time; as a fraction of T.  Fractions, so that pipelines of
    different depths compare.  Not strict: stages faster than the busiest
    fill and drain faster, so a run can sit slightly below it."""
    st = r.get("stages") or []
    if not c.ok(r) or not st:
        return None, None
    m, S, T = r["micro_batches"], len(st), r["iteration_time_s"]
    bmax = max(s["busy_s"] for s in st)
    t_lb = bmax * (m + S - 1) / m
    frac = sum(s["idle_s"] for s in st) / (S * T)
    lb = sum(max(0.0, t_lb - s["busy_s"]) for s in st) / (S * t_lb)
    return round(frac, 4), round(lb, 4)


def fig13():
    rows, data = [], []
    for label, model, _ in FIG7:
        meg, meg_l = baseline(megatron(model))
        df, df_l = plan_dflop(model)
        im, lm = idle(meg)
        i_d, ld = idle(df)
        red = round(1 - i_d / im, 4) if im and i_d is not None else None
        rows.append([label, "Megatron-LM", meg_l, im, lm, ""])
        rows.append([label, "DFLOP", df_l, i_d, ld, "idle -82..-84 % vs the baseline, near its bound"])
        data.append([label.replace("LLaVA-OV ", "").replace("InternVL-2.5 Qwen2.5-72B", "InternVL-72B"),
                     im, lm, i_d, ld])
        rows.append([label, "idle reduction", "", red, "", "0.82-0.84"])
    reds = [r[3] for r in rows if r[1] == "idle reduction" and r[3] is not None]
    gap = ("mmsim's idle reduction spans %.0f-%.0f %% against the published 82-84 %%" %
           (100 * min(reds), 100 * max(reds)) if reds else "no pair ran")
    c.write_csv("dflop-fig13", ["model", "system", "layout", "idle_fraction", "idle_lower_bound_fraction", "published"], rows,
                NOTES + ["idle fraction: mmsim's per-stage idle seconds over the iteration time, mean over stages; "
                         "lower bound: busiest stage B over m micro-batches, T >= B (m+S-1)/m, each stage idles "
                         ">= T - its busy time, as a fraction of T (dflop.py idle()); it is the idle of equal micro-batches at "
                         "the busiest stage's pace, not a strict bound: stages faster than the busiest fill and drain "
                         "faster, so a run can sit slightly under it"], gap)
    c.gnuplot("dflop-fig13", """
set title 'DFLOP Fig. 13 in mmsim: pipeline idle time and its lower bound, 64 A100s'
set ylabel 'idle fraction of the iteration (mean over stages)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set yrange [0:*]
set grid ytics
set xtics noenhanced
set key top left
plot $data using 2:xtic(1) title 'Megatron-LM idle', '' using 3 title 'Megatron-LM bound', \\
     '' using 4 title 'DFLOP idle', '' using 5 title 'DFLOP bound'
""", data)


if __name__ == "__main__":
    figs = {"fig7": fig7, "fig8": fig8, "fig10": fig10, "fig13": fig13}
    if len(sys.argv) != 2 or sys.argv[1] not in figs:
        sys.exit("usage: dflop.py fig7|fig8|fig10|fig13")
    figs[sys.argv[1]]()
