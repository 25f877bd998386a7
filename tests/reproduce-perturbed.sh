#!/usr/bin/env bash
# reproduce-perturbed.sh MMSIM - shows that `scripts/reproduce --check` can
# fail: in a copy of the working tree (what git tracks plus untracked,
# non-ignored files), the committed numbers of a quick target first match
# (exit 0); then one model constant is changed -- Qwen2.5-7B's FFN width
# (intermediate_size 18944 -> 20480 in models/qwen2.5-7b.json, the LLM of
# the LLaVA-OV-7B-like model the target runs) -- and the same check must
# exit 1 naming a number.  scripts/test runs it; it counts as one check.
set -uo pipefail
mmsim=$(realpath "${1:?usage: $0 MMSIM}")
root=$(cd "$(dirname "$0")/.." && pwd)
target=${REPRODUCE_TARGET:-placements-quick}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$root" && git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$tmp")
cd "$tmp"
if ! scripts/reproduce --check --mmsim "$mmsim" "$target" >check.log 2>&1; then
    echo "FAIL reproduce-perturbed: the unchanged copy does not match:"; cat check.log; exit 1
fi
grep -q '"intermediate_size": 18944' models/qwen2.5-7b.json || { echo "FAIL reproduce-perturbed: constant not found"; exit 1; }
sed -i 's/"intermediate_size": 18944/"intermediate_size": 20480/' models/qwen2.5-7b.json
scripts/reproduce --check --mmsim "$mmsim" "$target" >perturbed.log 2>&1
rc=$?
if [ $rc -ne 1 ] || ! grep -q "committed" perturbed.log; then
    echo "FAIL reproduce-perturbed: a changed model constant was not caught (exit $rc):"; cat perturbed.log; exit 1
fi
echo "ok reproduce-perturbed: unchanged copy matches; intermediate_size 20480 fails the check:"
grep -m2 "committed" perturbed.log
