# bash completion for terrafort; installed as share/bash-completion/completions/terrafort.
# What it offers comes from the program itself, so it never falls behind a new flag:
#   terrafort <TAB>             the commands `terrafort --help` lists
#   terrafort CMD -<TAB>        the options `terrafort CMD --help` names (every spelling)
#   terrafort CMD --ft <TAB>    the values an option's help line lists as A|B|C
#   anything else               file names
# zsh: `autoload -U bashcompinit && bashcompinit`, then source this file.

# The help text of `terrafort CMD` (CMD empty: the program's) into _terrafort_text, read
# from the program once per shell and command.
_terrafort_help() {
  local var=_terrafort_help_${1//-/_}
  if [[ -z ${!var+x} ]]; then
    # shellcheck disable=SC2086 # an empty CMD is no word
    printf -v "$var" '%s' "$("${COMP_WORDS[0]}" $1 --help 2>/dev/null)"
  fi
  _terrafort_text=${!var}
}

_terrafort() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]} words
  COMPREPLY=()
  if ((COMP_CWORD == 1)); then
    _terrafort_help ""
    words=$(awk '/^Commands:/ {on = 1; next} on && /^  [a-z]/ {print $1} /^$/ {on = 0}' <<<"$_terrafort_text")
    mapfile -t COMPREPLY < <(compgen -W "$words --help --version" -- "$cur")
    return
  fi
  local cmd help
  cmd=$(tr '[:upper:]' '[:lower:]' <<<"${COMP_WORDS[1]}")
  _terrafort_help "$cmd"
  help=$_terrafort_text
  if [[ $prev == -* ]]; then
    # "--ft off|dual|replay", "-alg Horn|ZevenbergenThorne": the choices after the option
    words=$(grep -oE -- "(^|[ ,])$prev [A-Za-z0-9_.]+(\|[A-Za-z0-9_.]+)+" <<<"$help" | head -n 1 |
            awk '{print $NF}' | tr '|' ' ')
    if [[ -n $words ]]; then
      mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
      return
    fi
  fi
  if [[ $cur == -* ]]; then
    # every flag the help names: in its option lines, usage lines and lists
    words=$(grep -oE -- '(^|[][ ,|(])-{1,2}[A-Za-z][-A-Za-z0-9_]*' <<<"$help" | sed -E 's/^[][ ,|(]+//' | sort -u)
    mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
    return
  fi
  mapfile -t COMPREPLY < <(compgen -f -- "$cur")
}
complete -o filenames -F _terrafort terrafort
