#!/usr/bin/env bash
# h100-clock.sh MMSIM - scripts/validate/h100-clock (docs/validation.md,
# "Dense H100"): at ratio 1 the MoE and Megatron-Bridge rows' errors are
# those the validate scripts print on the shipped file (the key set to 1
# changes nothing); at 0.8 every run is slower (each throughput or TFLOP/s
# error falls; the FP8-LM speed-up ratios are printed, not held); a ratio
# outside (0, 1] is refused with exit status 2.
set -uo pipefail
mmsim=$(realpath "${1:?usage: $0 MMSIM}")
root=$(cd "$(dirname "$0")/.." && pwd)
fail=0
out=$("$root/scripts/validate/h100-clock" --mmsim "$mmsim" 1.0 0.8) || { echo "FAIL h100-clock: the script failed"; exit 1; }
ref=$({ "$root/scripts/validate/moe" --mmsim "$mmsim"; "$root/scripts/validate/megatron-bridge" --mmsim "$mmsim"; } |
      awk '$1 == "row" && $3 == "published" { print $2, $8 }')
n=0
while read -r name err; do
    n=$((n + 1))
    got=$(echo "$out" | awk -v k="$name" '$1 == k { print $2 }')
    [ "$got" = "$err" ] || { echo "FAIL h100-clock $name: $got at ratio 1.0, the validate script says $err"; fail=1; }
done <<<"$ref"
[ $n -eq 8 ] || { echo "FAIL h100-clock: $n reference rows, expected 8"; fail=1; }
while read -r name a b; do
    case $name in
    check) continue ;;
    *-te-speedup) ;;
    *) awk -v a="${a%\%}" -v b="${b%\%}" 'BEGIN { exit !(b < a) }' ||
           { echo "FAIL h100-clock $name: $a at 1.0, $b at 0.8 (a slower clock must slow the run)"; fail=1; } ;;
    esac
done <<<"$out"
[ "$(echo "$out" | wc -l)" -eq 15 ] || { echo "FAIL h100-clock: $(echo "$out" | wc -l) lines, expected 15"; fail=1; }
"$root/scripts/validate/h100-clock" --mmsim "$mmsim" 1.2 >/dev/null 2>&1
rc=$?
[ $rc -eq 2 ] || { echo "FAIL h100-clock: ratio 1.2 gave exit $rc, expected 2"; fail=1; }
[ $fail -eq 0 ] && echo "ok h100-clock: $n rows as shipped at 1.0, every run slower at 0.8"
exit $fail
