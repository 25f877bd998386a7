# common.sh - shared by scripts/quickstart, scripts/test and scripts/bench:
# installs the Debian packages mmsim needs when some are missing, and
# configures a meson build folder.  Sourced, not run.

# Every package the build, the tests and the scripts use (Debian 12 names).
# libyaml-dev: libyaml, the YAML and JSON parser of sim/util/doc.c.
# libglpk-dev: GLPK, the integer program of `batching: balanced`.
# libopenmpi-dev, openmpi-bin: the optional -Dmpi=enabled build (mpirun mmsim sweep).
# python3-mesonpy, python3-venv, python3-pip: the Python wheel (pyproject.toml,
# tests/wheel.sh); patchelf: meson-python reads and sets the RPATH of the
# ELF files it puts in the wheel with it (a missing patchelf fails the
# wheel's metadata step); python3-mypy: the package's type hints checked
# (python/tests).
MMSIM_PACKAGES="gcc meson ninja-build pkg-config libgsl-dev libsqlite3-dev sqlite3
libcsv-dev check libsubunit-dev libyaml-dev gnuplot-nox libglpk-dev
libopenmpi-dev openmpi-bin python3-mesonpy python3-venv python3-pip patchelf python3-mypy"

mmsim_missing_packages() {
    local p missing=""
    for p in $MMSIM_PACKAGES; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
            missing="$missing $p"
        fi
    done
    echo "$missing"
}

# Installs what is missing: directly as root, through sudo without a
# password prompt otherwise; a user without either gets the list to install.
mmsim_ensure_packages() {
    local missing
    missing=$(mmsim_missing_packages)
    [ -z "$missing" ] && return 0
    echo "mmsim: installing missing packages:$missing"
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
            sudo="sudo -n"
        else
            echo "mmsim: missing packages:$missing" >&2
            echo "mmsim: install them as root: apt-get install$missing" >&2
            exit 1
        fi
    fi
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -q
    # shellcheck disable=SC2086
    $sudo apt-get install -y -q --no-install-recommends $missing
}

# mmsim_setup DIR [meson options...]: configure DIR, or reconfigure it when
# it exists (so changed options take effect).
mmsim_setup() {
    local dir=$1
    shift
    if [ -f "$dir/build.ninja" ]; then
        meson setup --reconfigure "$dir" "$@" >/dev/null
    else
        meson setup "$dir" "$@" >/dev/null
    fi
}
