#!/usr/bin/env bash
# shell-docs.sh - the manual page and the shell completion that meson builds
# from mmsim (sim/cli/meson.build), checked against mmsim itself.  meson
# test runs it (suite install-docs):
#   tests/shell-docs.sh MMSIM BUILDDIR/sim/cli SRCDIR
# The page: the same text scripts/gen-man makes now (so never stale), every
# command of --help in it, and groff reads it without a warning.  bash: the
# script completes commands, each command's options (every option its help
# text names), --set's scenario keys (every key of `mmsim help scenario`)
# and an enumerated key's values, the choices of collective's options.
# zsh (where it is installed): the script parses, with the same keys.
set -uo pipefail
mmsim=${1:?usage: shell-docs.sh MMSIM GENDIR SRCDIR}
gen=${2:?usage: shell-docs.sh MMSIM GENDIR SRCDIR}
src=${3:?usage: shell-docs.sh MMSIM GENDIR SRCDIR}
fails=0
check() { # NAME CONDITION...
    local name=$1
    shift
    if "$@"; then
        echo "ok   $name"
    else
        echo "FAIL $name"
        fails=$((fails + 1))
    fi
}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# ---- the manual page
page=$gen/mmsim.1
check "mmsim.1 was built" test -s "$page"
"$src/scripts/gen-man" "$mmsim" >"$tmp/mmsim.1"
check "mmsim.1 is what scripts/gen-man makes from this mmsim" cmp -s "$page" "$tmp/mmsim.1"
commands=$("$mmsim" --help | awk '/^commands:/ {on = 1; next} on && /^$/ {exit} on && /^  [a-z]/ {print $1}' |
    sort -u)
check "--help lists the commands" test "$(echo "$commands" | wc -w)" -ge 8
for c in $commands; do
    check "mmsim.1 has a section for $c" grep -q "^\.SS \"mmsim $c\"" "$page"
done
check "mmsim.1 lists every scenario key" bash -c "[ \$(grep -c '^[a-z]' <(\"$mmsim\" help scenario)) -gt 40 ] &&
    grep -q '^train\\\\-\\.precision\\|^train\\.precision' \"$page\""
if command -v groff >/dev/null; then
    groff -man -Tutf8 -ww -z "$page" 2>"$tmp/groff.err"
    check "groff reads mmsim.1 without a warning" test ! -s "$tmp/groff.err"
    cat "$tmp/groff.err"
    check "the rendered page shows the run usage" bash -c "groff -man -Tutf8 \"$page\" 2>/dev/null | col -b 2>/dev/null |
        grep -q 'usage: mmsim run \[SCENARIO.yaml\]'"
fi

# ---- bash
bashc=$gen/mmsim
check "the bash completion was built" test -s "$bashc"
check "it is what mmsim completion bash prints" cmp -s "$bashc" <("$mmsim" completion bash)
# comp LINE: the completions bash would offer at the end of LINE
comp() {
    bash -c 'source "$1"; COMP_LINE=$2; COMP_POINT=${#2}; COMP_WORDBREAKS=$'"'"' \t\n"\x27><=;|&(:'"'"'
             _mmsim; printf "%s\n" "${COMPREPLY[@]}"' _ "$bashc" "$1"
}
has() { # LINE WORD...: each WORD is among LINE's completions
    local line=$1 out
    shift
    out=$(comp "$line") || return 1
    for w in "$@"; do
        grep -qxF -- "$w" <<<"$out" || { echo "  '$line' does not offer '$w': $(echo $out)"; return 1; }
    done
}
only() { # LINE WORD...: exactly these
    local out
    out=$(comp "$1" | sort | tr '\n' ' ')
    shift
    local want
    want=$(printf '%s\n' "$@" | sort | tr '\n' ' ')
    [ "$out" = "$want" ] || { echo "  got '$out', want '$want'"; return 1; }
}
check "bash: commands" only "mmsim co" collective completion
check "bash: help topics" only "mmsim help sc" scenario
for c in $commands; do
    [ "$c" = help ] || [ "$c" = completion ] && continue
    # every option the command's help names (in its usage lines and the
    # lines that explain an option) completes
    for o in $("$mmsim" help "$c" | awk 'NR == 1, /^$/ {print; next} /^ +(-[a-zA-Z0-9],? )?--?[a-z]/' |
        grep -o -- '--[a-z][a-z_-]*[a-z]' | sort -u); do
        case $o in --opt) continue ;; esac # "--opt VALUE", a placeholder
        check "bash: $c $o" has "mmsim $c ${o:0:4}" "$o"
    done
done
keys=$("$mmsim" help scenario | awk '/^[a-z]/ {print $1}')
nkeys=0
for k in $keys; do
    has "mmsim run --set ${k}" "$k=" >/dev/null || { echo "  --set $k does not complete"; nkeys=-1000; }
    nkeys=$((nkeys + 1))
done
check "bash: --set completes every scenario key ($nkeys)" test "$nkeys" -gt 40
check "bash: --set KEY= completes an enum's values" only "mmsim run --set train.precision=" bf16 fp16 fp8
check "bash: --set=KEY=value in one word" only "mmsim plan --set=train.recompute=s" selective
check "bash: -s KEY" only "mmsim run -s parallel.llm.t" parallel.llm.tp=
check "bash: collective's operand" only "mmsim collective all" allreduce allgather alltoall
check "bash: collective --algo" only "mmsim collective --algo " auto ring tree hier nvls collnet
check "bash: collective -d" only "mmsim collective -d bf" bfloat16
check "bash: collective --datatype=" only "mmsim collective --datatype=f" float f8e4m3 f8e5m2
check "bash: collective -o" has "mmsim collective -o " sum prod max min avg mulsum all
check "bash: a file after --db" has "mmsim run --db $src/meson_opt" "$src/meson_options.txt"

# ---- zsh
zshc=$gen/_mmsim
check "the zsh completion was built" test -s "$zshc"
check "it is what mmsim completion zsh prints" cmp -s "$zshc" <("$mmsim" completion zsh)
check "zsh: it starts with #compdef mmsim" grep -qx '#compdef mmsim' <(head -1 "$zshc")
zkeys=$(sed -n 's/^    keys=(\(.*\))$/\1/p' "$zshc" | tr ' ' '\n' | grep -c .)
bkeys=$(sed -n "s/^_mmsim_keys='\(.*\)'$/\1/p" "$bashc" | tr ' ' '\n' | grep -c .)
check "zsh: the same --set keys as bash ($zkeys)" test "$zkeys" -eq "$bkeys" -a "$zkeys" -gt 40
if command -v zsh >/dev/null; then
    check "zsh: the script parses" zsh -n "$zshc"
fi

echo "$fails failed"
[ $fails -eq 0 ]
