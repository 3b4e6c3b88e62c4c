#!/bin/bash
# completion.sh TERRAFORT SOURCE_DIR - the bash completion (tools/terrafort.bash) as a user's
# shell runs it: sourced, it is registered for terrafort; the candidates for partial
# commands, flags and option values come from the program's own help; file names
# otherwise. Each line below is one case: the words typed, then the candidates wanted.
set -u
tf=$1 src=$2
# shellcheck source=../terrafort.bash
source "$src/tools/terrafort.bash"
complete -p terrafort | grep -q -- '-F _terrafort' || { echo "completion: not registered" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
touch "$tmp/dem_a.tif" "$tmp/dem_b.tif"
fails=0
check() { # want, then the words after "terrafort" (the last is the one being completed)
  local want=$1
  shift
  COMP_WORDS=("$tf" "$@")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  _terrafort
  local got
  got=$(printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' ')
  if [[ $got != "$want" ]]; then
    echo "completion: terrafort $*<TAB>: got '$got', want '$want'" >&2
    fails=$((fails + 1))
  fi
}
check "slope " sl
check "smooth " sm
check "color-relief " col
check "fill flowgraph " f
check "--tile-size " slope --til
check "-alg " slope -al
check "Horn ZevenbergenThorne " slope -alg ""
check "dual off replay " aspect --ft ""
check "auto cpu gpu " hillshade --device ""
check "complete constrained selective " breach --mode ""
check "--max-depth --max-length " breach --max-
check "-multidirectional " hillshade -mu
check "--acc --acc-in --acc-type " flowgraph --ac
check "-ad8 " flowgraph -ad
check "Float32 Float64 " flowgraph --acc-type F
check "links " flowgraph --basins-by li
check "--stats --stats-json " TRI --stat
check "$tmp/dem_a.tif $tmp/dem_b.tif " fill "$tmp/dem"
check "$tmp/dem_a.tif " slope -q "$tmp/dem_a"
[ "$fails" -eq 0 ] && echo "completion: 17 cases ok"
exit $((fails > 0))
