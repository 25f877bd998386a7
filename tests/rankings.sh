#!/usr/bin/env bash
# rankings.sh MMSIM - scripts/validate/rankings against the targets for
# ranking layouts (docs/validation.md, "Layout rankings"): in every group of
# tests/data/rankings that meets them today, Kendall's tau >= 0.8 and mmsim's
# pick is the measured best or within 3 % of it; the OOM verdicts match the
# sources' in >= 95 % of all layouts.  Groups that miss a target today are
# listed in KNOWN_MISSES (and in docs/validation.md with their numbers); none
# is excused from the OOM total.  Then a malformed row must be refused with
# its file, line and key (a bad recompute value, an unknown cluster), exit
# status 2.
set -uo pipefail
mmsim=$(realpath "${1:?usage: $0 MMSIM}")
root=$(cd "$(dirname "$0")/.." && pwd)
KNOWN_MISSES="bloom-200b-40n bloom-187b-40n bloom-181b-48n bloom-196b-48n bloom-182b-48n bloom-177b-48n bloom-181b-tp-48n bloom-181b-gbs2016-48n"  # docs/validation.md, "Layout rankings": their numbers
out=$("$root/scripts/validate/rankings" --mmsim "$mmsim") || { echo "FAIL rankings: the script failed"; exit 1; }
fail=0 groups=0
while read -r _ g _ tau _ best _ loss _; do
    groups=$((groups + 1))
    case " $KNOWN_MISSES " in *" $g "*) echo "known miss $g: tau $tau best $best loss $loss"; continue ;; esac
    l=${loss%\%}
    if ! awk -v t="$tau" 'BEGIN { exit !(t >= 0.8) }'; then echo "FAIL rankings $g: tau $tau < 0.8"; fail=1; fi
    if [ "$best" != yes ] && { [ "$l" = inf ] || ! awk -v l="$l" 'BEGIN { exit !(l <= 3) }'; }; then
        echo "FAIL rankings $g: pick loses $loss against the measured best (limit 3%)"; fail=1
    fi
done < <(echo "$out" | grep -E '^group [^ ]+ tau ')
[ $groups -eq 12 ] || { echo "FAIL rankings: $groups groups, expected 12"; fail=1; }
read -r agree all < <(echo "$out" | sed -n 's/.*OOM verdicts as measured in \([0-9]*\) of \([0-9]*\) layouts.*/\1 \2/p')
if [ -z "${all:-}" ] || [ $((100 * agree)) -lt $((95 * all)) ]; then
    echo "FAIL rankings: OOM verdicts as measured in ${agree:-?} of ${all:-?} layouts (target 95%)"; fail=1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
head -3 "$root/tests/data/rankings/korthikanti_table5.csv" | sed '3s/,selective,true,/,partial,true,/' >"$tmp/bad.csv"
err=$("$root/scripts/validate/rankings" --mmsim "$mmsim" --data "$tmp" 2>&1 >/dev/null)
rc=$?
if [ $rc -ne 2 ] || ! echo "$err" | grep -q "bad.csv:3: key 'recompute'"; then
    echo "FAIL rankings: a bad recompute value gave exit $rc: $err"; fail=1
fi
head -2 "$root/tests/data/rankings/korthikanti_table5.csv" | sed '2s/,dgx-a100,megatron-local,/,no-such-cluster,megatron-local,/' >"$tmp/bad.csv"
err=$("$root/scripts/validate/rankings" --mmsim "$mmsim" --data "$tmp" 2>&1 >/dev/null)
rc=$?
if [ $rc -ne 2 ] || ! echo "$err" | grep -q "bad.csv:2: key 'topology': no topologies/no-such-cluster.yaml"; then
    echo "FAIL rankings: an unknown topology gave exit $rc: $err"; fail=1
fi
[ $fail -eq 0 ] && echo "ok rankings: $groups groups, OOM verdicts $agree of $all"
exit $fail
