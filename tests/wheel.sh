#!/usr/bin/env bash
# wheel.sh - the Python package as pip installs it: builds the wheel from
# the working tree with meson-python (pyproject.toml; pip --no-build-isolation
# --no-index, so nothing is downloaded), installs it into a fresh venv
# (--system-site-packages, for Debian's python3-mesonpy), then from an empty
# folder, with no MMSIM_LIB, MMSIM_DATADIR or PYTHONPATH: `import mmsim`
# comes from the venv, finds the wheel's libmmsim.so and data files, runs
# the default scenario, reports a model and a workload by their relative
# paths, and gives the numbers of the mmsim command the same wheel
# installed (run from the same empty folder, MMSIM_DATADIR unset).  The wheel must hold the library, the package and every data
# folder (models, topologies with their kernel tables, workloads,
# frameworks), the data under the venv's prefix (VENV/mmsim: meson's
# datadir is the wheel's data scheme).  scripts/test runs it (one check);
# exit 0 pass, 1 fail.
#
#   tests/wheel.sh [--available]
#
# --available: exit 0 when a python3 with meson-python, venv and pip is
# there (Debian: python3-mesonpy patchelf python3-venv python3-pip), else 1 with why.
# The build goes to build-wheel/ (src/: a copy of the tree, build/: meson's
# folder, kept so that a second run is incremental).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

py=""
for c in /usr/bin/python3 python3; do
    if command -v "$c" >/dev/null && "$c" -c "import mesonpy, venv, ensurepip" 2>/dev/null; then
        py=$(command -v "$c")
        break
    fi
done
if [ "${1:-}" = "--available" ]; then
    [ -n "$py" ] && command -v patchelf >/dev/null && exit 0
    echo "no python3 with meson-python, venv and ensurepip, or no patchelf (apt-get install python3-mesonpy patchelf python3-venv python3-pip)"
    exit 1
fi
[ -n "$py" ] || { echo "FAIL wheel: no python3 with meson-python, venv and ensurepip"; exit 1; }

work=$root/build-wheel
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$work/src"
# the tree as git sees it (tracked and untracked, not ignored), times kept
(cd "$root" && git ls-files -co --exclude-standard -z) >"$tmp/files"
if command -v rsync >/dev/null; then
    rsync -a --delete --from0 --files-from="$tmp/files" "$root/" "$work/src/"
else
    rm -rf "$work/src" && mkdir -p "$work/src" &&
        (cd "$root" && xargs -0 cp -a --parents -t "$work/src" <"$tmp/files")
fi

echo "== wheel: pip wheel (meson-python, build folder $work/build)"
if ! "$py" -m pip wheel --no-build-isolation --no-index --no-deps -w "$tmp/dist" \
    --config-settings=builddir="$work/build" "$work/src" >"$work/wheel.log" 2>&1; then
    tail -40 "$work/wheel.log"
    echo "FAIL wheel: pip wheel failed (log: $work/wheel.log)"
    exit 1
fi
whl=$(ls "$tmp"/dist/mmsim-*.whl 2>/dev/null | head -1)
[ -n "$whl" ] || { echo "FAIL wheel: no wheel in $tmp/dist"; exit 1; }
echo "== wheel: $(basename "$whl")"

# what the wheel holds
if ! "$py" - "$whl" <<'EOS'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
need = {
    # the package at the root or (a wheel with native files) in .data/purelib
    "the package": lambda n: n.endswith("mmsim/__init__.py"),
    "the ctypes binding": lambda n: n.endswith("mmsim/_lib.py"),
    "libmmsim.so": lambda n: n.startswith(".mmsim.mesonpy.libs/libmmsim.so"),
    # meson's datadir is the wheel's data scheme: pip installs it to the prefix
    "a model": lambda n: n.endswith(".data/data/mmsim/models/llama-2-7b.json"),
    "a topology": lambda n: n.endswith(".data/data/mmsim/topologies/dgx-h100.yaml"),
    "a kernel table": lambda n: ".data/data/mmsim/topologies/kernels/" in n and n.endswith(".csv"),
    "a workload": lambda n: n.endswith(".data/data/mmsim/workloads/llava-ov-mix.yaml"),
    "a framework profile": lambda n: n.endswith(".data/data/mmsim/frameworks/fsdp.yaml"),
    "the mmsim command": lambda n: n.endswith(".data/scripts/mmsim"),
}
missing = [what for what, ok in need.items() if not any(ok(n) for n in names)]
if missing:
    print("FAIL wheel: the wheel lacks " + ", ".join(missing))
    sys.exit(1)
print("wheel holds %d files, among them: %s" % (len(names), ", ".join(need)))
EOS
then exit 1; fi

echo "== wheel: venv, pip install, import from an empty folder"
"$py" -m venv --system-site-packages "$tmp/v" >"$tmp/venv.log" 2>&1 || { cat "$tmp/venv.log"; echo "FAIL wheel: venv"; exit 1; }
"$tmp/v/bin/pip" install --no-index --no-deps "$whl" >"$tmp/pip.log" 2>&1 ||
    { cat "$tmp/pip.log"; echo "FAIL wheel: pip install"; exit 1; }
mkdir "$tmp/empty"
cd "$tmp/empty" || exit 1
env -u MMSIM_LIB -u MMSIM_DATADIR -u PYTHONPATH "$tmp/v/bin/python" - "$tmp/v" <<'EOS' || exit 1
import json, os, subprocess, sys
venv = os.path.realpath(sys.argv[1])
import mmsim
from mmsim import _lib

def check(ok, what):
    if not ok:
        print("FAIL wheel: " + what)
        sys.exit(1)

check(os.path.realpath(mmsim.__file__).startswith(venv + os.sep), "mmsim imported from %s, not the venv" % mmsim.__file__)
lib = os.path.realpath(_lib.find())
check(lib.startswith(venv + os.sep) and ".mmsim.mesonpy.libs" in lib, "libmmsim from %s, not the wheel's" % lib)
r = mmsim.run(sets={"iterations": 1})
check(r["gpus"] == 16 and r["iteration_time_s"] > 0 and not r["oom"], "default scenario: %r" % r)
datadir = os.environ.get("MMSIM_DATADIR", "")
check(os.path.realpath(datadir) == os.path.join(venv, "mmsim"), "data folder %r, not the venv's" % datadir)
m = mmsim.model("models/llama-2-7b.json", seq=2048)
check(m["params"] == 6738415616, "llama-2-7b params %r" % m.get("params"))
w = mmsim.workload_stats("workloads/llava-ov-mix.yaml", samples=100)
check(w["samples"] == 100, "workload stats %r" % w.get("samples"))
try:
    mmsim.run(sets={"train.recompute": "sometimes"})
    check(False, "a bad override raised nothing")
except ValueError as e:
    check(isinstance(e, mmsim.Error) and e.key == "train.recompute", "bad override: %r" % e)
# the wheel's own mmsim command, with MMSIM_DATADIR unset: it finds the data
# beside itself (VENV/bin/../mmsim) and gives the same numbers
env = {k: v for k, v in os.environ.items() if k != "MMSIM_DATADIR"}
cli = subprocess.run([os.path.join(venv, "bin", "mmsim"), "run", "--no-db", "--json", "--set", "iterations=1"],
                     capture_output=True, text=True, env=env)
check(cli.returncode == 0, "the venv's mmsim: %s" % cli.stderr)
strip = lambda d: {k: v for k, v in d.items() if not k.endswith("wall_s")}
check(strip(json.loads(cli.stdout)) == strip(r), "mmsim.run and the venv's mmsim differ")
print("wheel: import mmsim from an empty folder: %s; %s; iteration %.4f s, mfu %.3f" %
      (os.path.relpath(mmsim.__file__, venv), os.path.relpath(lib, venv), r["iteration_time_s"], r["mfu"]))
EOS
echo "wheel: ok"
