#!/usr/bin/env bash
# stop.sh STATE_DIR -- stop exactly the processes start.sh recorded in
# STATE_DIR/*.pid: SIGTERM, then SIGKILL after 5 s. It never matches processes
# by name; a recorded PID is only signalled while its command line still names
# the program start.sh ran there (guards against a stale pid file whose PID
# was reused). Safe to call twice or from a trap. Leaves the other files.
set -uo pipefail
if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: $0 STATE_DIR" >&2
  exit 2
fi
STATE=$1
rc=0
# alive PID: running and not a zombie (an exited child of PID 1 can stay a
# zombie for a while before it is reaped; kill -0 still succeeds on it)
alive() {
  local line st
  if [ -r "/proc/$1/stat" ]; then
    read -r line <"/proc/$1/stat" 2>/dev/null || return 1
    st=${line##*) }
    [ "${st%% *}" != Z ]
  else
    kill -0 "$1" 2>/dev/null
  fi
}
# ours PID WORD: the process's command line contains WORD (true if /proc is absent)
ours() {
  [ -r "/proc/$1/cmdline" ] || return 0
  tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF -- "$2"
}
for f in tuf mock oidc; do
  pf=$STATE/$f.pid
  [ -f "$pf" ] || continue
  pid=$(cat "$pf")
  case $f in tuf) word=http.server ;; mock) word=mock-sigstore.js ;; oidc) word=oidc-issuer.mjs ;; esac
  if [[ "$pid" =~ ^[0-9]+$ ]] && alive "$pid"; then
    if ! ours "$pid" "$word"; then
      echo "stop.sh: pid $pid from $pf is no longer $word; not signalling it" >&2
    else
      kill -TERM "$pid" 2>/dev/null
      for _ in $(seq 100); do alive "$pid" || break; sleep 0.05; done
      if alive "$pid"; then
        echo "stop.sh: $f (pid $pid) ignored SIGTERM, sending SIGKILL" >&2
        kill -KILL "$pid" 2>/dev/null || rc=1
      fi
    fi
  fi
  rm -f "$pf"
done
exit $rc
