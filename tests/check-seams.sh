#!/usr/bin/env bash
# check-seams.sh - scripts/check-seams on a small made-up tree, so that the
# checker is seen to fail where it must: two files of one folder that call
# each other (one through a macro), a cycle of three, an include up a layer;
# and to pass once the back call is gone.  meson test runs it (suite seams):
#   tests/check-seams.sh SCRIPT [COMPILER COMMAND...]
set -uo pipefail
script=${1:?usage: check-seams.sh SCRIPT [COMPILER COMMAND...]}
shift
cc=("$@")
[ ${#cc[@]} -gt 0 ] || cc=(cc)
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
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

mkdir -p "$tmp/src/sim/util" "$tmp/src/sim/engine" "$tmp/src/sim/hw" "$tmp/build/obj"
cat >"$tmp/src/meson.build" <<'EOF'
foreach layer : ['util', 'engine',
                 'hw']
  subdir('sim' / layer)
endforeach
EOF
# util: a.c and b.c call each other (b.c through a macro); c.c calls a.c,
# which names c_fn only in a comment and in a macro it never expands (no
# call, so no edge a -> c and no cycle a -> c -> a).
cat >"$tmp/src/sim/util/a.c" <<'EOF'
int a_fn(int);
int b_fn(int);
/* c_fn(1) would be a call; this comment is none */
#define UP(x) c_fn(x)
int a_fn(int x) { return x > 0 ? b_fn(x - 1) : 0; }
EOF
cat >"$tmp/src/sim/util/b.c" <<'EOF'
int a_fn(int);
int b_fn(int);
#define DOWN(x) a_fn(x)
int b_fn(int x) { return DOWN(x); }
EOF
cat >"$tmp/src/sim/util/c.c" <<'EOF'
int a_fn(int);
int c_fn(int);
int c_fn(int x) { return a_fn(x); }
EOF
# engine: x -> y -> z -> x; engine/e.h includes a header of hw, above it.
cat >"$tmp/src/sim/engine/x.c" <<'EOF'
int x_fn(void);
int y_fn(void);
int x_fn(void) { return y_fn(); }
EOF
cat >"$tmp/src/sim/engine/y.c" <<'EOF'
int y_fn(void);
int z_fn(void);
int y_fn(void) { return z_fn(); }
EOF
cat >"$tmp/src/sim/engine/z.c" <<'EOF'
int z_fn(void);
int x_fn(void);
int z_fn(void) { return x_fn() + 1; }
EOF
printf '#include "util/u.h"\n' >"$tmp/src/sim/engine/ok.h"
printf '#include <stdio.h>\n#include "hw/h.h"\n' >"$tmp/src/sim/engine/e.h"
printf 'int u;\n' >"$tmp/src/sim/util/u.h"
printf 'int h;\n' >"$tmp/src/sim/hw/h.h"

# compile_commands.json as meson writes it, one object per source
compile() {
    local f first=1
    echo "[" >"$tmp/build/compile_commands.json"
    for f in util/a util/b util/c engine/x engine/y engine/z; do
        local o=obj/sim_${f/\//_}.c.o
        (cd "$tmp/build" && "${cc[@]}" -c -o "$o" "../src/sim/$f.c") || return 1
        [ $first -eq 1 ] || echo "," >>"$tmp/build/compile_commands.json"
        first=0
        printf '{"directory": "%s", "file": "../src/sim/%s.c", "output": "%s"}\n' \
            "$tmp/build" "$f" "$o" >>"$tmp/build/compile_commands.json"
    done
    echo "]" >>"$tmp/build/compile_commands.json"
}
check "the made-up tree compiles" compile

out=$("$script" --src "$tmp/src" --build "$tmp/build" calls 2>&1)
rc=$?
echo "$out"
check "calls: exit status 1 on a cycle" [ $rc -eq 1 ]
has() { grep -qxF -- "$1" <<<"$out"; }
check "calls: a.c <-> b.c reported" has "cycle in sim/util: a.c -> b.c -> a.c"
check "calls: the functions on each edge (the macro's call too)" \
    eval 'has "    a.c -> b.c: b_fn" && has "    b.c -> a.c: a_fn"'
check "calls: the cycle of three reported once" \
    eval '[ "$(grep -c "^cycle in sim/engine" <<<"$out")" -eq 1 ] && has "cycle in sim/engine: x.c -> y.c -> z.c -> x.c"'
check "calls: a one-way call, a comment and an unused macro are no cycle" eval '! grep -q "c\.c" <<<"$out"'
check "calls: the count" has "calls: FAIL (2 cycle(s))"

out=$("$script" --src "$tmp/src" includes 2>&1)
rc=$?
echo "$out"
check "includes: exit status 1 on an include up a layer" [ $rc -eq 1 ]
check "includes: the file, the line and the layers" has "sim/engine/e.h:2: includes sim/hw/h.h: layer hw is above engine"
check "includes: the order from meson.build's list (across lines)" has "layers: util engine hw "
check "includes: one violation only" has "includes: FAIL (1 include(s) up a layer)"

# the back calls gone: calls holds
printf 'int b_fn(int);\nint b_fn(int x) { return x; }\n' >"$tmp/src/sim/util/b.c"
printf 'int z_fn(void);\nint z_fn(void) { return 1; }\n' >"$tmp/src/sim/engine/z.c"
printf '#include "util/u.h"\n' >"$tmp/src/sim/engine/e.h"
compile
out=$("$script" --src "$tmp/src" --build "$tmp/build" 2>&1)
rc=$?
echo "$out"
check "all: exit status 0 without cycles or upward includes" [ $rc -eq 0 ]
check "all: both rules ok" eval 'has "includes: ok" && has "calls: ok (6 objects)"'

"$script" --src "$tmp/src" --build "$tmp/nowhere" calls >/dev/null 2>&1
check "calls: exit status 2 without a build" [ $? -eq 2 ]

echo "$fails failed"
[ $fails -eq 0 ]
