#!/bin/bash
# help_man.sh TERRAFORT SOURCE_DIR - each command's option table, its --help and its man page
# name the same options: every spelling of the table (`terrafort CMD --options`, the rows the
# parser and batch read) is one the help names and every flag the help names is one of the
# table's; every flag the help names is documented in man/terrafort-CMD.1 or, for the common
# options, man/terrafort.1; every option entry of the command's page (a .B/.BI/.BR line that
# starts with a flag) is one the help names, and every flag of its SYNOPSIS one of the table's. A row added without its help line or man page
# entry, or documented but gone from the program, fails here.
set -u
tf=$1 src=$2
flags_of_help() { # every word starting with '-' that the help names
  "$tf" "$1" --help | grep -oE -- '(^|[][ ,|(])-{1,2}[A-Za-z][-A-Za-z0-9_]*' | sed -E 's/^[][ ,|(]+//' | sort -u
}
flags_of_table() { # every spelling of every row of the command's option table
  "$tf" "$1" --options | grep -v '^#' | cut -f 1 | tr ' ' '\n' | grep . | sort -u
}
flags_of_synopsis() { # the flags of the page's SYNOPSIS (mpirun's own -n left out)
  awk '/^\.SH SYNOPSIS/ {on = 1; next} /^\.SH/ {on = 0} on && !/mpirun/' "$1" | sed 's/\\-/-/g; s/\\f[RPBI]/ /g' |
    grep -oE -- '(^|[][ "|(])-{1,2}[A-Za-z][-A-Za-z0-9_]*' | sed -E 's/^[][ "|(]+//' | sort -u
}
flags_of_man() { # every flag in the pages' macro lines (.B, .BI, .BR, .IR, .TP)
  grep -hE '^\.(B|BR|BI|IR|TP)' "$@" | sed 's/\\-/-/g; s/\\f[RPBI]/ /g' |
    grep -oE -- '(^|[ "])-{1,2}[A-Za-z][-A-Za-z0-9_]*' | sed -E 's/^[ "]+//' | sort -u
}
entries_of_man() { # the flags of option entries: a .TP's tag line that starts with a flag
  awk 'prev == ".TP" && /^\.(B|BI|BR) \\-/ {print} {prev = $0}' "$1" | sed 's/\\-/-/g; s/\\f[RPBI]/ /g' |
    grep -oE -- '(^\.[A-Z]+ |[ "])-{1,2}[A-Za-z][-A-Za-z0-9_]*' | sed -E 's/^(\.[A-Z]+ |[ "])//' | sort -u
}
cmds=$("$tf" --help | awk '/^Commands:/ {on = 1; next} on && /^  [a-z]/ {print $1} /^$/ {on = 0}')
[ "$(wc -w <<<"$cmds")" -ge 10 ] || { echo "help_man: too few commands in terrafort --help" >&2; exit 1; }
fails=0
for c in $cmds; do
  page=$src/man/terrafort-$c.1
  [ -f "$page" ] || { echo "help_man: no man page for $c" >&2; fails=$((fails + 1)); continue; }
  hidden=$(comm -23 <(flags_of_table "$c") <(flags_of_help "$c") | tr '\n' ' ')
  untabled=$(comm -13 <(flags_of_table "$c") <(flags_of_help "$c") | tr '\n' ' ')
  if [ -n "$hidden" ] || [ -n "$untabled" ]; then
    echo "help_man: $c: in the option table, not named by --help: '$hidden'; named by --help, not in the table: '$untabled'" >&2
    fails=$((fails + 1))
  fi
  stale=$(comm -23 <(flags_of_synopsis "$page") <(flags_of_table "$c") | tr '\n' ' ')
  if [ -n "$stale" ]; then
    echo "help_man: $c: in the SYNOPSIS of terrafort-$c(1), not in the option table: $stale" >&2
    fails=$((fails + 1))
  fi
  undocumented=$(comm -23 <(flags_of_help "$c") <(flags_of_man "$page" "$src/man/terrafort.1") | tr '\n' ' ')
  unknown=$(comm -13 <(flags_of_help "$c") <(entries_of_man "$page") | tr '\n' ' ')
  if [ -n "$undocumented" ]; then
    echo "help_man: $c: named by --help, not in its man page or terrafort(1): $undocumented" >&2
    fails=$((fails + 1))
  fi
  if [ -n "$unknown" ]; then
    echo "help_man: $c: documented in terrafort-$c(1), not named by --help: $unknown" >&2
    fails=$((fails + 1))
  fi
done
[ "$fails" -eq 0 ] && echo "help_man: $(wc -w <<<"$cmds") commands agree"
exit $((fails > 0))
