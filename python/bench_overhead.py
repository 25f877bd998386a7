#!/usr/bin/env python3
"""What scoring a layout through the Python package adds to the simulation
itself: median over N runs of mmsim.run(sets=...) minus the median of the
same scenario opened, run and closed through the bare C calls (ctypes, no
conversion of the overrides, no JSON).  A benchmark, not a test.

    python3 python/bench_overhead.py [N]
"""
import ctypes
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mmsim  # noqa: E402
from mmsim import _lib  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 50
SETS = {"parallel.llm": {"tp": 2, "pp": 2, "dp": 4}, "iterations": 1}
lib = mmsim._lib_handle()


def bare():
    strs = [s.encode() for s in ("parallel.llm={\"tp\": 2, \"pp\": 2, \"dp\": 4}", "iterations=1")]
    arr = (ctypes.c_char_p * 2)(*strs)
    t0 = time.perf_counter()
    h = lib.mmsim_open(None, arr, 2)
    assert lib.mmsim_run(h) == 0
    lib.mmsim_close(h)
    return time.perf_counter() - t0


def package():
    t0 = time.perf_counter()
    r = mmsim.run(sets=SETS)
    dt = time.perf_counter() - t0
    assert r["iteration_time_s"] > 0
    return dt


for f in (bare, package):  # warm the page cache and the library
    f()
# interleaved pairs, so that a change of machine load hits both alike
b, p = [], []
for _ in range(N):
    b.append(bare())
    p.append(package())
mb, mp = statistics.median(b), statistics.median(p)
lo = min(p) - min(b)
print("library %s (%s), default scenario with %s, %d interleaved pairs" % (mmsim.version(), _lib.find(), SETS, N))
print("bare C calls (open+run+close): median %.3f ms, min %.3f ms" % (1e3 * mb, 1e3 * min(b)))
print("mmsim.run():                   median %.3f ms, min %.3f ms" % (1e3 * mp, 1e3 * min(p)))
print("added by the package:          %.3f ms (medians), %.3f ms (minima)" % (1e3 * (mp - mb), 1e3 * lo))
