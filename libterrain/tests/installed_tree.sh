#!/bin/sh
# installed_tree.sh BUILD_DIR SOURCE_DIR TESTDATA - the installed library as a
# user of it sees it (package/library.cmake): `cmake --install` into a fresh
# prefix, then
#   - libterrafort.so has a versioned SONAME, needs no CUDA or MPI library,
#     and exports exactly the functions the installed terrain.h declares;
#   - a C program (installed_consumer.c) built with `pkg-config --cflags
#     --libs terrafort`, and again as a CMake project with
#     find_package(terrafort), runs against the installed library and writes
#     the same bytes as `terrafort slope` and `terrafort fill`; the first
#     also runs a batch (tr_batch) with the installed program on PATH, and
#     its job's output is the command's bytes too;
#   - the Python package, installed beside the library, loads it and writes
#     the command's bytes.
set -eu
build=$1 src=$2 data=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "installed_tree: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$tmp/p" >/dev/null
so=$(find "$tmp/p" -name 'libterrafort.so.*.*' -type f)
[ -n "$so" ] || fail "no libterrafort.so installed"
lib=$(dirname "$so")
hdr=$tmp/p/include/terrafort/terrain.h
[ -f "$hdr" ] || fail "terrain.h not installed"
[ -f "$lib/pkgconfig/terrafort.pc" ] || fail "terrafort.pc not installed"
[ -f "$lib/cmake/terrafort/terrafortConfig.cmake" ] || fail "no CMake package"

readelf -d "$so" > "$tmp/dyn"
grep -q 'Library soname: \[libterrafort.so.0\]' "$tmp/dyn" || fail "SONAME is not libterrafort.so.0"
grep NEEDED "$tmp/dyn" | grep -i -E 'cuda|mpi' && fail "the library needs CUDA or MPI"
# the header's functions: every declaration of a tr_ function at the start of a line (the
# name is the one before '(': a return type may be a tr_ name too, tr_json *)
grep -o -E '^[a-z][a-z_ *]*[ *]tr_[a-z0-9_]+\(' "$hdr" | grep -o -E 'tr_[a-z0-9_]+\(' | tr -d '(' | sort > "$tmp/declared"
nm -D --defined-only "$so" | awk '$2 ~ /^[TDRBVW]$/ {print $3}' | sort > "$tmp/exported"
[ "$(wc -l < "$tmp/declared")" -gt 20 ] || fail "too few declarations found in terrain.h"
diff "$tmp/declared" "$tmp/exported" > "$tmp/diff" || { cat "$tmp/diff" >&2; fail "exports differ from terrain.h (< declared only, > exported only)"; }

dem=$data/demo.tif
"$build/tools/terrafort" slope -q "$dem" "$tmp/slope_cli.tif"
"$build/tools/terrafort" fill -q "$dem" "$tmp/fill_cli.tif"

PKG_CONFIG_PATH=$lib/pkgconfig
export PKG_CONFIG_PATH
# shellcheck disable=SC2046 # pkg-config's words are meant to split
cc -o "$tmp/consumer_pc" "$src/libterrain/tests/installed_consumer.c" $(pkg-config --cflags --libs terrafort) \
  $(pkg-config --cflags --libs gdal) -Wl,-rpath,"$lib"
ldd "$tmp/consumer_pc" | grep -q "$so\|$lib/libterrafort.so.0" || fail "the program does not load the installed library"
mkdir "$tmp/batch"
PATH="$tmp/p/bin:$PATH" "$tmp/consumer_pc" "$dem" "$tmp/slope_pc.tif" "$tmp/fill_pc.tif" "$tmp/batch" ||
  fail "the library's calls (slope, fill, batch) failed"
cmp "$tmp/slope_cli.tif" "$tmp/batch/slope.tif" || fail "slope as a job of tr_batch differs from the command's"
cmp "$tmp/slope_cli.tif" "$tmp/slope_pc.tif" || fail "slope through the library differs from the command's"
cmp "$tmp/fill_cli.tif" "$tmp/fill_pc.tif" || fail "fill through the library differs from the command's"

mkdir "$tmp/proj"
cat > "$tmp/proj/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.18)
project(consumer C)
find_package(terrafort 0.1 REQUIRED)
find_package(GDAL REQUIRED)
add_executable(consumer $src/libterrain/tests/installed_consumer.c)
target_link_libraries(consumer PRIVATE terrafort::terrafort GDAL::GDAL)
CM
cmake -S "$tmp/proj" -B "$tmp/proj/b" -DCMAKE_PREFIX_PATH="$tmp/p" -DCMAKE_BUILD_RPATH="$lib" >/dev/null ||
  fail "find_package(terrafort) failed"
cmake --build "$tmp/proj/b" >/dev/null || fail "the CMake project did not build"
"$tmp/proj/b/consumer" "$dem" "$tmp/slope_cm.tif" "$tmp/fill_cm.tif"
cmp "$tmp/slope_cli.tif" "$tmp/slope_cm.tif" || fail "slope (CMake build) differs from the command's"
cmp "$tmp/fill_cli.tif" "$tmp/fill_cm.tif" || fail "fill (CMake build) differs from the command's"
# the Python package, installed beside the library, finds it there
init=$(find "$tmp/p" -path '*dist-packages/terrafort/__init__.py')
[ -n "$init" ] || fail "the Python package is not installed"
pkgs=$(dirname "$(dirname "$init")")
env -u TERRAFORT_LIBRARY PYTHONPATH="$pkgs" PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -c '
import sys, terrafort, terrafort._lib as l
assert terrafort.__file__.startswith(sys.argv[1]), terrafort.__file__
terrafort.slope(sys.argv[2], sys.argv[3])' "$pkgs" "$dem" "$tmp/slope_py.tif" || fail "the installed Python package failed"
cmp "$tmp/slope_cli.tif" "$tmp/slope_py.tif" || fail "slope (installed Python package) differs from the command's"
echo "installed_tree: ok ($(wc -l < "$tmp/declared") functions exported, pkg-config and find_package)"
