# shellcheck shell=bash
# Helpers shared by the action's step scripts (scripts/action-*.sh); sourced, never run.
# They speak the runner's file commands ($GITHUB_OUTPUT, $GITHUB_STEP_SUMMARY, $GITHUB_PATH)
# and workflow commands (::error::), and never evaluate input text as code.

# die CODE MESSAGE: an ::error:: annotation, then exit CODE.
die() {
  local code=$1
  shift
  echo "::error::$(escape_data "$*")" >&2
  exit "$code"
}

# escape_data TEXT: the text of a workflow command (`%`, CR and LF escaped), so that input
# text cannot end the command early or start another one.
escape_data() {
  local s=$1
  s=${s//'%'/'%25'}
  s=${s//$'\r'/'%0D'}
  s=${s//$'\n'/'%0A'}
  printf '%s' "$s"
}

# escape_property TEXT: a workflow command property value (also `:` and `,`).
escape_property() {
  local s
  s=$(escape_data "$1")
  s=${s//':'/'%3A'}
  s=${s//','/'%2C'}
  printf '%s' "$s"
}

# set_output NAME VALUE: one step output; multi-line values use the heredoc form with a
# random delimiter that the value does not contain.
set_output() {
  local name=$1 value=$2 delim
  local out=${GITHUB_OUTPUT:-/dev/null}
  if [[ $value != *$'\n'* && $value != *$'\r'* ]]; then
    printf '%s=%s\n' "$name" "$value" >>"$out"
    return
  fi
  while :; do
    delim="ghadelimiter_$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')"
    [[ $value != *"$delim"* ]] && break
  done
  printf '%s<<%s\n%s\n%s\n' "$name" "$delim" "$value" "$delim" >>"$out"
}

# summary TEXT...: appends lines to the job summary (when the runner gives one).
summary() {
  if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
    printf '%s\n' "$@" >>"$GITHUB_STEP_SUMMARY"
  fi
}

# read_lines TEXT: splits an input holding one item per line into the array LINES,
# trimming surrounding spaces and dropping empty lines. (Bash 3.2 compatible: macOS runners.)
read_lines() {
  local line
  LINES=()
  while IFS= read -r line || [ -n "$line" ]; do
    line=${line%$'\r'}
    line="${line#"${line%%[![:space:]]*}"}"
    line="${line%"${line##*[![:space:]]}"}"
    if [ -n "$line" ]; then LINES+=("$line"); fi
  done <<<"$1"
}

# check_bool NAME VALUE: VALUE must be `true` or `false`, else a usage error naming the input.
check_bool() {
  case $2 in
    true | false) ;;
    *) die 2 "input $1 must be true or false, not '$2'" ;;
  esac
}

# refuse_inputs COMMAND NAME=VALUE...: inputs that mean nothing for COMMAND must be empty
# (a verify step given `output:` or a sign step given `policy:` is a mistake, not a no-op).
refuse_inputs() {
  local command=$1 pair
  shift
  for pair in "$@"; do
    if [ -n "${pair#*=}" ]; then
      die 2 "input ${pair%%=*} does not apply to command '$command'"
    fi
  done
}

# md TEXT: TEXT as literal Markdown inline text for the job summary: Markdown and HTML
# punctuation backslash-escaped, line breaks as spaces (manifests are untrusted input).
md() {
  printf '%s' "$1" | tr '\r\n' '  ' | sed -e 's/[][\\`*_<>|~&#]/\\&/g'
}
