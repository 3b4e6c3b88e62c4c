# bash completion for terrafort; installed as share/bash-completion/completions/terrafort.
# What it offers comes from the program itself, so it never falls behind a new flag:
#   terrafort <TAB>             the commands `terrafort --help` lists
#   terrafort CMD -<TAB>        every spelling of the options in `terrafort CMD --options`, the
#                               command's option table (the one it parses with)
#   terrafort CMD --ft <TAB>    the choices the table gives that option (A|B|C)
#   anything else               file names
# zsh: `autoload -U bashcompinit && bashcompinit`, then source this file.

# The output of `terrafort CMD WHAT` (CMD empty: the program's; WHAT --help or --options)
# into _terrafort_text, read from the program once per shell, command and WHAT.
_terrafort_ask() {
  local var=_terrafort${2//-/_}_${1//-/_}
  if [[ -z ${!var+x} ]]; then
    # shellcheck disable=SC2086 # an empty CMD is no word
    printf -v "$var" '%s' "$("${COMP_WORDS[0]}" $1 "$2" 2>/dev/null)"
  fi
  _terrafort_text=${!var}
}

_terrafort() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]} words
  COMPREPLY=()
  if ((COMP_CWORD == 1)); then
    _terrafort_ask "" --help
    words=$(awk '/^Commands:/ {on = 1; next} on && /^  [a-z]/ {print $1} /^$/ {on = 0}' <<<"$_terrafort_text")
    mapfile -t COMPREPLY < <(compgen -W "$words --help --version" -- "$cur")
    return
  fi
  local cmd table
  cmd=$(tr '[:upper:]' '[:lower:]' <<<"${COMP_WORDS[1]}")
  _terrafort_ask "$cmd" --options
  table=$_terrafort_text # a row a line: spellings <TAB> kind <TAB> role <TAB> values <TAB> choices ...
  if [[ $prev == -* ]]; then
    # the choices of the option just typed ("--ft off|dual|replay")
    words=$(awk -F '\t' -v o="$prev" '!/^#/ {n = split($1, s, " "); for (i = 1; i <= n; i++) if (s[i] == o && $5 != "-") print $5}' \
            <<<"$table" | head -n 1 | tr '|' ' ')
    if [[ -n $words ]]; then
      mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
      return
    fi
  fi
  if [[ $cur == -* ]]; then
    words=$(grep -v '^#' <<<"$table" | cut -f 1 | tr ' ' '\n' | sort -u)
    mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
    return
  fi
  mapfile -t COMPREPLY < <(compgen -f -- "$cur")
}
complete -o filenames -F _terrafort terrafort
