#!/usr/bin/env bash
# moe-published.sh MMSIM - scripts/validate/moe against its target
# (docs/validation.md, "Megatron-Core MoE"): every published Megatron-Core
# MoE run of tests/data/moe-published within 15 % in model TFLOP/s per GPU
# (in tokens/s per GPU where the source publishes them);
# the runs that miss today are listed in KNOWN_MISSES with the error they
# must stay within (their numbers in docs/validation.md), and so is the
# dropless/token-dropping pair.  Then a malformed row must be refused with
# its file, line and key, exit status 2.
set -uo pipefail
mmsim=$(realpath "${1:?usage: $0 MMSIM}")
root=$(cd "$(dirname "$0")/.." && pwd)
out=$("$root/scripts/validate/moe" --mmsim "$mmsim") || { echo "FAIL moe-published: the script failed"; exit 1; }
# NAME:BOUND (the error today, in %); the pair's BOUND is mmsim's ratio over
# the published one
KNOWN_MISSES="qwen3-30b-a3b-dropless:109 qwen3-30b-a3b-ep16-bf16-dropless:19 qwen3-30b-a3b:1.9"
bound() { for k in $KNOWN_MISSES; do [ "${k%%:*}" = "$1" ] && echo "${k#*:}"; done; }
fail=0 rows=0
while read -r _ name _ pub _ sim _ err; do
    rows=$((rows + 1))
    e=${err%\%}
    if awk -v e="$e" 'BEGIN { exit !(e < 15 && e > -15) }'; then continue; fi
    w=$(bound "$name")
    if [ -z "$w" ]; then
        echo "FAIL moe-published $name: $sim against the published $pub ($err, target 15%)"; fail=1
    elif ! awk -v e="$e" -v w="$w" 'BEGIN { exit !(e < w && e > -w) }'; then
        echo "FAIL moe-published $name: $err, worse than its known miss ($w%)"; fail=1
    else
        echo "known miss $name: $sim against the published $pub ($err)"
    fi
done < <(echo "$out" | grep -E '^row ')
[ $rows -eq 4 ] || { echo "FAIL moe-published: $rows rows, expected 4"; fail=1; }
while read -r _ name _ _ pub _ sim; do
    r=$(awk -v a="$sim" -v b="$pub" 'BEGIN { printf "%.3f", a / b }')
    if awk -v r="$r" 'BEGIN { exit !(r < 1.15 && r > 0.85) }'; then continue; fi
    w=$(bound "$name")
    if [ -z "$w" ] || ! awk -v r="$r" -v w="$w" 'BEGIN { exit !(r < w) }'; then
        echo "FAIL moe-published $name: dropless/tokendrop $sim against the published $pub"; fail=1
    else
        echo "known miss $name: dropless/tokendrop $sim against the published $pub (x$r)"
    fi
done < <(echo "$out" | grep -E '^pair ')
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
head -2 "$root/tests/data/moe-published/megatron-core.csv" | sed '2s/,bf16,aux_loss,,false,/,bf16,aux_loss,lots,false,/' >"$tmp/bad.csv"
err=$("$root/scripts/validate/moe" --mmsim "$mmsim" --data "$tmp" 2>&1 >/dev/null)
rc=$?
if [ $rc -ne 2 ] || ! echo "$err" | grep -q "bad.csv:2: key 'capacity_factor'"; then
    echo "FAIL moe-published: a bad capacity factor gave exit $rc: $err"; fail=1
fi
{ head -1 "$root/tests/data/moe-published/megatron-core.csv"
  grep '^qwen3-30b-a3b-dropless,' "$root/tests/data/moe-published/megatron-core.csv" | sed 's/,121,5275,/,121,-5,/'; } >"$tmp/bad.csv"
err=$("$root/scripts/validate/moe" --mmsim "$mmsim" --data "$tmp" 2>&1 >/dev/null)
rc=$?
if [ $rc -ne 2 ] || ! echo "$err" | grep -q "bad.csv:2: key 'published_tokens_per_gpu'"; then
    echo "FAIL moe-published: a bad published_tokens_per_gpu gave exit $rc: $err"; fail=1
fi
{ head -1 "$root/tests/data/moe-published/megatron-core.csv"
  grep '^qwen3-30b-a3b-ep16-bf16-dropless,' "$root/tests/data/moe-published/megatron-core.csv" | sed 's/,,6338.1,/,,,/'; } >"$tmp/bad.csv"
err=$("$root/scripts/validate/moe" --mmsim "$mmsim" --data "$tmp" 2>&1 >/dev/null)
rc=$?
if [ $rc -ne 2 ] || ! echo "$err" | grep -q "bad.csv:2: key 'published_tflops' is empty and so is 'published_tokens_per_gpu'"; then
    echo "FAIL moe-published: a row with neither published figure gave exit $rc: $err"; fail=1
fi
[ $fail -eq 0 ] && echo "ok moe-published: $rows rows"
exit $fail
