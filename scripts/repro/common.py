"""common.py - what the paper reproductions under scripts/repro/<paper>/ share:
running mmsim (run and plan, JSON out), the baseline layout rule, writing a
numbers file (CSV with `#` lines for the assumptions and the gap) and a
gnuplot figure.  Not for: deciding anything a paper's number could tune; every
choice here is a stated rule, applied the same way to every model.

Python 3 standard library only.  The mmsim binary is $MMSIM (scripts/reproduce
sets it), else build-release/mmsim.
"""
import csv
import json
import os
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
OUT = os.environ.get("REPRO_OUT", os.path.join(ROOT, "results"))


def mmsim():
    exe = os.environ.get("MMSIM") or os.path.join(ROOT, "build-release", "mmsim")
    if not os.access(exe, os.X_OK):
        sys.exit("repro: no mmsim binary at %s (run scripts/reproduce, or set MMSIM)" % exe)
    return exe


def path(rel):
    """A repository path, as mmsim is run from the repository root."""
    return os.path.join(ROOT, rel)


_KEYS = None


def has_key(key):
    """Whether this build's scenario knows KEY (train.framework arrives with the
    frameworks issue; the scripts run with and without it and say which)."""
    global _KEYS
    if _KEYS is None:
        out = subprocess.run([mmsim(), "help", "scenario"], capture_output=True, text=True).stdout
        _KEYS = {line.split()[0] for line in out.splitlines() if line and not line[0].isspace() and line[0] != "#"}
    return key in _KEYS


def sets_args(sets):
    args = []
    for s in sets:
        args += ["--set", s]
    return args


def run(scenario, sets):
    """mmsim run SCENARIO --set ... --json; the metrics dict, or {"error": msg}
    when mmsim refuses the scenario (the message is kept for the numbers file)."""
    cmd = [mmsim(), "run", path(scenario), "--no-db", "--json"] + sets_args(sets)
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]}
    return json.loads(p.stdout)


def run_db(scenario, sets, db):
    """mmsim run into database DB (for the per-iteration table); the metrics."""
    cmd = [mmsim(), "run", path(scenario), "--db", db, "--json"] + sets_args(sets)
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]}
    return json.loads(p.stdout)


def plan(scenario, gpus, placements, sets, top=2, iterations=1, max_pp=16, space=()):
    """mmsim plan: the rank-1 candidate (dict with layout, sets, metrics) of the
    given placements, or {"error": ...} when none fits.  space: --space
    narrowings ("DIM=V1,V2"), for a plan over the whole space that would be
    too slow."""
    cmd = [mmsim(), "plan", path(scenario), "--no-db", "--json", "--gpus", str(gpus), "--top", str(top),
           "--iterations", str(iterations), "--placement", placements, "--max-pp", str(max_pp)] + sets_args(sets)
    for sp in space:
        cmd += ["--space", sp]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]}
    j = json.loads(p.stdout)
    ranked = [r for r in j.get("ranked", []) if r.get("status") == "simulated" and r.get("iteration_time_s")]
    if not ranked:
        why = ", ".join("%s %s" % (b["reason"], b["count"]) for b in j.get("pruned_by", []))
        return {"error": "no layout fits (of %s candidates pruned: %s)" % (j.get("candidates"), why)}
    best = min(ranked, key=lambda r: r["iteration_time_s"])
    return best


def plan_vpp1(scenario, gpus, placements, sets, top=4, iterations=1, max_pp=16, space=()):
    """The planner restricted to non-interleaved candidates (vpp 1): mmsim plan
    enumerates, prunes and pre-scores (--top 0 --all), this keeps the vpp-1
    candidates it estimated, and runs the best TOP by the planner's estimate
    event by event (what plan's rescoring does).  Used for DFLOP, whose
    runtime is plain 1F1B (no interleaving); it also kept the DFLOP figures
    running while an interleaved pipeline-placement candidate deadlocked the
    simulation (fixed since; docs/reproductions.md).  space: --space
    narrowings, as for plan()."""
    cmd = [mmsim(), "plan", path(scenario), "--no-db", "--json", "--all", "--gpus", str(gpus), "--top", "0",
           "--iterations", str(iterations), "--placement", placements, "--max-pp", str(max_pp)] + sets_args(sets)
    for sp in space:
        cmd += ["--space", sp]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]}
    j = json.loads(p.stdout)
    est = sorted((r for r in j["ranked"] if r["status"] == "estimated" and r["llm"]["vpp"] == 1),
                 key=lambda r: (r["estimate_s"], r["candidate"]))
    best = None
    for cand in est[:top]:
        r = run(scenario, sets + cand["sets"] + ["iterations=%d" % iterations])
        if ok(r) and (best is None or r["iteration_time_s"] < best["iteration_time_s"]):
            r["layout"], r["sets"] = cand["layout"], cand["sets"]
            best = r
    return best or {"error": "no vpp-1 layout fits (%d estimated)" % len(est)}


def ok(r):
    return r and "error" not in r and not r.get("oom") and r.get("iteration_time_s")


def megatron_rule_layout(scenario, gpus, worst_sets, sets, tps=(1, 2, 4, 8), pps=(1, 2, 4, 8, 16)):
    """The layout rule a Megatron-LM user follows (and the one these scripts
    assume for every homogeneous baseline the papers do not print): the
    least model parallelism, TP inside a node first (1, 2, 4, 8), then PP,
    whose *largest* sample fits in memory -- the baseline cannot know the
    data, so it is configured for what the first iteration's data needs
    -- and DP over the rest; each (tp, pp) is tried with the scenario's
    recomputation, then with full recomputation (what a user turns on
    when it does not fit).  worst_sets: extra --set for the fit test.
    Returns (tp, pp, dp, recompute) or None."""
    cands = sorted(((tp * pp, pp, tp) for tp in tps for pp in pps if gpus % (tp * pp) == 0))
    for _, pp, tp in cands:
        dp = gpus // (tp * pp)
        lay = ["parallel.llm={tp: %d, pp: %d, dp: %d}" % (tp, pp, dp)]
        for rc in ([], ["train.recompute=full"]):
            r = run(scenario, sets + worst_sets + lay + rc + ["iterations=1"])
            if ok(r):
                return tp, pp, dp, ("full" if rc else "scenario")
    return None


def fmt(x, nd=4):
    if x is None or x == "":
        return ""
    if isinstance(x, float):
        return ("%." + str(nd) + "g") % x
    return str(x)


def write_csv(name, header, rows, notes, gap):
    """results/NAME.csv: `# ` lines with the assumptions first, the table, and
    a last `# gap: ` line.  Returns the path."""
    os.makedirs(OUT, exist_ok=True)
    p = os.path.join(OUT, name + ".csv")
    with open(p, "w", newline="") as f:
        for n in notes:
            f.write("# " + n + "\n")
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        for r in rows:
            w.writerow([fmt(v) for v in r])
        f.write("# gap: " + gap + "\n")
    print("wrote", os.path.relpath(p, ROOT))
    return p


def gnuplot(name, script, data_rows):
    """results/NAME.png from a gnuplot script; the script reads the data as
    '$data' (whitespace-separated rows given here, strings quoted)."""
    os.makedirs(OUT, exist_ok=True)
    png = os.path.join(OUT, name + ".png")
    lines = []
    for r in data_rows:
        lines.append(" ".join('"%s"' % v if isinstance(v, str) else ("%.6g" % v if v is not None else "NaN")
                              for v in r))
    text = ("set terminal pngcairo size 1000,560 font 'sans,10'\nset output '%s'\n$data << EOD\n%s\nEOD\n%s\n"
            % (png, "\n".join(lines), script))
    p = subprocess.run(["gnuplot"], input=text, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("repro: gnuplot failed for %s: %s" % (name, p.stderr.strip()))
    print("wrote", os.path.relpath(png, ROOT))


def framework_sets(name):
    """--set for a framework profile when this build has train.framework, else
    nothing (both baselines then share mmsim's default kernels: the notes say so)."""
    return ["train.framework=%s" % name] if has_key("train.framework") else []


def framework_note():
    if has_key("train.framework"):
        return ("frameworks: Megatron-LM = train.framework megatron-core; PyTorch 3D and DFLOP "
                "(torchtitan-based) = fsdp (torchtitan's eager kernels)")
    return ("frameworks: this build has no train.framework key, so Megatron-LM, PyTorch 3D and DFLOP run "
            "the same kernels; PyTorch 3D differs from Megatron-LM only by what the notes say")
