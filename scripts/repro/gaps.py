#!/usr/bin/env python3
"""gaps.py - prints the `# gap:` line of every paper CSV in results/ (the
numbers files of scripts/repro/<paper>/), one per figure, for the block in
docs/reproductions.md that scripts/reproduce rewrites.  Reads, never runs."""
import glob
import os

root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
for p in sorted(glob.glob(os.path.join(root, "results", "*.csv"))):
    name = os.path.basename(p)[:-4]
    if name.split("-")[0] not in ("dflop", "hetero", "orchmllm", "megascale"):
        continue
    gap = [line[len("# gap: "):].strip() for line in open(p) if line.startswith("# gap: ")]
    print("%-18s %s" % (name, gap[-1] if gap else "(no gap line)"))
