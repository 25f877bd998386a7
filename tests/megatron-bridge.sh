#!/usr/bin/env bash
# megatron-bridge.sh MMSIM - scripts/validate/megatron-bridge against its
# target (docs/validation.md, "Context parallelism"): every published
# Megatron-Bridge H100 run of tests/data/megatron-bridge within 10 % in
# tokens/s per GPU; the rows that miss today are listed in KNOWN_MISSES
# (with their numbers in docs/validation.md), each still required to run
# (no out-of-memory verdict) and to stay within its stated error.  Then a
# malformed row must be refused with its file, line and key, exit status 2.
set -uo pipefail
mmsim=$(realpath "${1:?usage: $0 MMSIM}")
root=$(cd "$(dirname "$0")/.." && pwd)
# docs/validation.md, "Context parallelism": NAME:WORST (the error today, in %)
KNOWN_MISSES="llama31-405b-cp2-gbs512:23 llama31-405b-cp2-gbs1536:18"
out=$("$root/scripts/validate/megatron-bridge" --mmsim "$mmsim") || { echo "FAIL megatron-bridge: the script failed"; exit 1; }
fail=0 rows=0
while read -r _ name _ pub _ sim _ err; do
    rows=$((rows + 1))
    e=${err%\%}
    if awk -v e="$e" 'BEGIN { exit !(e < 10 && e > -10) }'; then continue; fi
    worst=""
    for k in $KNOWN_MISSES; do [ "${k%%:*}" = "$name" ] && worst=${k#*:}; done
    if [ -z "$worst" ]; then
        echo "FAIL megatron-bridge $name: $sim tokens/s per GPU against the published $pub ($err, target 10%)"; fail=1
    elif ! awk -v e="$e" -v w="$worst" 'BEGIN { exit !(e < w && e > -w) }'; then
        echo "FAIL megatron-bridge $name: $err, worse than its known miss ($worst%)"; fail=1
    else
        echo "known miss $name: $sim tokens/s per GPU against the published $pub ($err)"
    fi
done < <(echo "$out" | grep -E '^row ')
[ $rows -eq 4 ] || { echo "FAIL megatron-bridge: $rows rows, expected 4"; fail=1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
head -2 "$root/tests/data/megatron-bridge/h100.csv" | sed '2s/,fp8,current,true,/,fp8,current,maybe,/' >"$tmp/bad.csv"
err=$("$root/scripts/validate/megatron-bridge" --mmsim "$mmsim" --data "$tmp/bad.csv" 2>&1 >/dev/null)
rc=$?
if [ $rc -ne 2 ] || ! echo "$err" | grep -q "bad.csv:2: key 'fp8_param_gather'"; then
    echo "FAIL megatron-bridge: a bad fp8_param_gather gave exit $rc: $err"; fail=1
fi
head -2 "$root/tests/data/megatron-bridge/h100.csv" | sed '2s/,737,292,/,737,,/' >"$tmp/bad2.csv"
err=$("$root/scripts/validate/megatron-bridge" --mmsim "$mmsim" --data "$tmp/bad2.csv" 2>&1 >/dev/null)
rc=$?
if [ $rc -ne 2 ] || ! echo "$err" | grep -q "bad2.csv:2: key 'published_tokens_per_gpu'"; then
    echo "FAIL megatron-bridge: an empty published_tokens_per_gpu gave exit $rc: $err"; fail=1
fi
[ $fail -eq 0 ] && echo "ok megatron-bridge: $rows rows"
exit $fail
