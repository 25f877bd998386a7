#!/usr/bin/env bash
# moe-published.sh MMSIM - scripts/validate/moe against its target
# (docs/validation.md, "Megatron-Core MoE"): every published Megatron-Core
# MoE run of tests/data/moe-published within 15 % in model TFLOP/s per GPU.
# Then a malformed row must be refused with its file, line and key, exit
# status 2.
set -uo pipefail
mmsim=$(realpath "${1:?usage: $0 MMSIM}")
root=$(cd "$(dirname "$0")/.." && pwd)
out=$("$root/scripts/validate/moe" --mmsim "$mmsim") || { echo "FAIL moe-published: the script failed"; exit 1; }
fail=0 rows=0
while read -r _ name _ pub _ sim _ err; do
    rows=$((rows + 1))
    e=${err%\%}
    if ! awk -v e="$e" 'BEGIN { exit !(e < 15 && e > -15) }'; then
        echo "FAIL moe-published $name: $sim TFLOP/s against the published $pub ($err, target 15%)"; fail=1
    fi
done < <(echo "$out" | grep -E '^row ')
[ $rows -ge 1 ] || { echo "FAIL moe-published: no rows"; fail=1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
head -2 "$root/tests/data/moe-published/megatron-core.csv" | sed '2s/,1,256,4096,,/,1,256,4096,lots,/' >"$tmp/bad.csv"
err=$("$root/scripts/validate/moe" --mmsim "$mmsim" --data "$tmp" 2>&1 >/dev/null)
rc=$?
if [ $rc -ne 2 ] || ! echo "$err" | grep -q "bad.csv:2: key 'capacity_factor'"; then
    echo "FAIL moe-published: a bad capacity factor gave exit $rc: $err"; fail=1
fi
[ $fail -eq 0 ] && echo "ok moe-published: $rows rows within 15%"
exit $fail
