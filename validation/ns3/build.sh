#!/usr/bin/env bash
# Build the ns-3 programs of validation/ns3 (mesh7x7.cc, saturation.cc) against the ns-3 that
# PyPI ships (`pip install ns3`).
#
# The `ns3` wheel (3.44.post0 for CPython 3.11 / manylinux_2_28 at the time of writing) carries
# the C++ headers (site-packages/ns3/include/ns3/*.h) and the shared libraries
# (site-packages/ns3/lib64/libns3.44-<module>.so), next to its Python bindings. We compile our
# own program against those; nothing from ns-3 is copied into this repository.
#
# Usage:  bash validation/ns3/build.sh [--force] [PROGRAM ...]   (default: every program)
# Env:    PYTHON        interpreter whose site-packages holds (or will hold) ns3 (default: python3)
#         NS3_PIP_SPEC  requirement to install when ns3 is missing (default: "ns3==3.44.*")
#         CXX           C++ compiler (default: g++)
# Output: validation/ns3/build/<program> (git-ignored), validation/ns3/build/ns3-version.txt
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUILD="$HERE/build"
PYTHON="${PYTHON:-$(command -v python3 || command -v python || true)}"
NS3_PIP_SPEC="${NS3_PIP_SPEC:-ns3==3.44.*}"
CXX="${CXX:-g++}"
FORCE=0
PROGRAMS=()
for arg in "$@"; do
    case "$arg" in
        --force) FORCE=1;;
        *) PROGRAMS+=("$arg");;
    esac
done
[[ ${#PROGRAMS[@]} -gt 0 ]] || PROGRAMS=(mesh7x7 saturation)

die() { echo "build.sh: error: $*" >&2; exit 1; }
say() { echo "build.sh: $*" >&2; }

[[ -n "$PYTHON" ]] || die "no python3/python on PATH (set PYTHON=/path/to/python)"
command -v "$CXX" >/dev/null || die "C++ compiler '$CXX' not found (Debian: apt-get install g++)"
for prog in "${PROGRAMS[@]}"; do
    [[ -f "$HERE/$prog.cc" ]] || die "source $HERE/$prog.cc not found"
done

# --- 1. make sure the ns3 wheel is installed in this Python ------------------------------------
ns3_version() {
    "$PYTHON" - <<'EOF' 2>/dev/null
import importlib.metadata as m
print(m.version("ns3"))
EOF
}
VER="$(ns3_version || true)"
if [[ -z "$VER" ]]; then
    # --no-deps: the C++ headers and libraries we compile against are all in the ns3 wheel. Its
    # one dependency, cppyy, serves only the Python bindings, and where no cppyy wheel fits the
    # platform pip builds cppyy-cling (an LLVM) from source: hours on 2 cores (seen 2026-11-28).
    say "ns3 not installed in $PYTHON; running: $PYTHON -m pip install --no-deps '$NS3_PIP_SPEC'"
    if ! "$PYTHON" -m pip install --no-deps "$NS3_PIP_SPEC" >&2; then
        say "'$NS3_PIP_SPEC' could not be installed; trying the newest 'ns3' pip offers"
        "$PYTHON" -m pip install --no-deps ns3 >&2 || die "pip could not install ns3 at all (see pip's output above)"
    fi
    VER="$(ns3_version || true)"
    [[ -n "$VER" ]] || die "pip reported success but ns3 is still not importable by metadata in $PYTHON"
fi
case "$VER" in
    3.44*) ;;
    *) say "warning: installed ns3 is $VER, not 3.44 (the validation plan's reference version)";;
esac

# --- 2. discover the headers and libraries inside the installed wheel --------------------------
# Walk the wheel's RECORD instead of guessing paths: the header is include/ns3/core-module.h,
# the core library is lib*/libns3.<ver>-core[-<profile>].so.
read -r INC LIBDIR CORELIB < <("$PYTHON" - <<'EOF'
import importlib.metadata as m, os, re, sys
dist = m.distribution("ns3")
inc = lib = core = None
for f in dist.files or []:
    p = str(f).replace("\\", "/")
    if p.endswith("include/ns3/core-module.h"):
        inc = os.path.dirname(os.path.dirname(str(dist.locate_file(f))))
    name = os.path.basename(p)
    if re.fullmatch(r"libns3[.0-9a-z-]*?-core(-[a-z]+)?\.so", name):
        full = str(dist.locate_file(f))
        lib, core = os.path.dirname(full), name
if not (inc and lib):
    sys.exit(1)
print(os.path.realpath(inc), os.path.realpath(lib), core)
EOF
) || die "ns3 $VER is installed but its wheel has no include/ns3/core-module.h or libns3*-core*.so; \
this script needs the C++ headers and shared libraries that the PyPI wheel normally ships"

# libns3.44-core.so -> prefix "ns3.44", suffix "" (a release build; "-default"/"-optimized" otherwise)
STEM="${CORELIB#lib}"; STEM="${STEM%.so}"
PREFIX="${STEM%%-core*}"
SUFFIX="${STEM#"$PREFIX"-core}"
say "ns3 $VER: headers $INC, libraries $LIBDIR (lib$PREFIX-<module>$SUFFIX.so)"

MODULES=(core network mobility propagation spectrum energy wifi traffic-control internet applications)
LIBS=()
for m in "${MODULES[@]}"; do
    f="$LIBDIR/lib$PREFIX-$m$SUFFIX.so"
    [[ -f "$f" ]] || die "missing ns-3 module library $f"
    LIBS+=("-l$PREFIX-$m$SUFFIX")
done

# Compile definitions the wheel was built with (the cmake export lists them on ns3::core):
# they switch NS_LOG/NS_ASSERT code in the headers, so use the same ones as the libraries.
DEFS=()
TARGETS="$(ls "$LIBDIR"/cmake/ns3/ns3Targets.cmake 2>/dev/null || true)"
if [[ -n "$TARGETS" ]]; then
    line="$(awk '/add_library\(ns3::core /{f=1} f && /INTERFACE_COMPILE_DEFINITIONS/{print; exit}' "$TARGETS")"
    line="${line#*\"}"; line="${line%\"*}"
    IFS=';' read -r -a raw <<<"$line"
    for d in "${raw[@]}"; do
        case "$d" in PROJECT_SOURCE_PATH=*|"") ;; *) DEFS+=("-D$d");; esac
    done
fi
if [[ ${#DEFS[@]} -eq 0 ]]; then
    say "warning: could not read the wheel's compile definitions; using NS3_LOG_ENABLE NS3_ASSERT_ENABLE"
    DEFS=(-DNS3_LOG_ENABLE -DNS3_ASSERT_ENABLE)
fi

# --- 3. compile ---------------------------------------------------------------------------------
mkdir -p "$BUILD"
FLAGS="$CXX -std=c++20 -O2 ${DEFS[*]} -isystem $INC -L$LIBDIR ${LIBS[*]} rpath=$LIBDIR ns3=$VER"
for prog in "${PROGRAMS[@]}"; do
    SRC="$HERE/$prog.cc"
    OUT="$BUILD/$prog"
    STAMP="$BUILD/$prog-build-flags.txt"
    if [[ $FORCE -eq 0 && -x "$OUT" && "$OUT" -nt "$SRC" && -f "$STAMP" && "$(cat "$STAMP")" == "$FLAGS" ]]; then
        say "up to date: $OUT"
        continue
    fi
    say "compiling $SRC (ns-3 headers are heavy: 10-60 s)"
    "$CXX" -std=c++20 -O2 -Wall "${DEFS[@]}" "-DXL_NS3_VERSION=\"$VER\"" -isystem "$INC" "$SRC" -o "$OUT.tmp" \
        -L"$LIBDIR" "${LIBS[@]}" -Wl,-rpath,"$LIBDIR" -Wl,-rpath-link,"$LIBDIR" -lpthread \
        || die "compilation failed (command above); the wheel's libraries were built with the \
new libstdc++ ABI and C++20, so an old g++ (< 10) will not do"
    mv -f "$OUT.tmp" "$OUT"
    echo "$FLAGS" >"$STAMP"
    say "built $OUT against ns3 $VER"
done
echo "$VER" >"$BUILD/ns3-version.txt"
