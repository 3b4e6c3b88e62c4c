# Shared by the benchmark scripts: timing with peak memory, medians, JSON.
# measure NAME CMD...: runs CMD under /usr/bin/time (for peak RSS), appends
# "seconds peak_kb" to $tmp/NAME after a sync; seconds from bash's $EPOCHREALTIME
# (microseconds; /usr/bin/time only prints hundredths).
measure() {
  local name=$1; shift
  # the previous run's dirty pages are written back first, untimed, so that
  # no run pays for the one before it
  sync
  local t0=$EPOCHREALTIME
  /usr/bin/time -f "%M" -o "$tmp/last" "$@" >/dev/null 2>"$tmp/stderr" || {
    echo "bench: '$*' failed:" >&2; cat "$tmp/stderr" >&2; exit 1; }
  local t1=$EPOCHREALTIME
  echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f", b - a}') $(cat "$tmp/last")" >> "$tmp/$name"
}
# median_of NAME COLUMN: median of column 1 (seconds) or 2 (peak KB).
median_of() {
  sort -n -k"$2" "$tmp/$1" | awk -v c="$2" '{v[NR]=$c} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'
}
max_of() { sort -n -k"$2" "$tmp/$1" | tail -1 | awk -v c="$2" '{print $c}'; }
