#!/usr/bin/env bash
# install.sh -- install the loopback Sigstore test stack next to this script.
#
#   npm: @sigstore/mock + oauth2-mock-server, exact pins from package-lock.json, into ./node_modules
#   pip: sigstore-python (requirements.txt, frozen) into ./.venv      [SKIP_PY=1 skips it]
#
# Idempotent: `npm ci` runs only if node_modules is missing or package.json /
# package-lock.json changed since the last successful install; the venv is
# (re)built only if .venv/bin/sigstore is missing or requirements.txt changed.
# FORCE=1 reinstalls both. Quiet on success (one line per step); on failure it
# prints the step's output and exits non-zero.
#
# Needs node + npm (Node 20 works: the packages declare node >= 22 and npm only
# warns) and, unless SKIP_PY=1, python3 with the venv module (Debian:
# apt-get install python3-venv).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE"

die() { echo "install.sh: $*" >&2; exit 1; }
# run LOG CMD...: run quietly; on failure show the output and stop
run() {
  local log=$1; shift
  if ! "$@" >"$log" 2>&1; then
    echo "install.sh: failed: $*" >&2
    cat "$log" >&2
    exit 1
  fi
}
stamp_of() { cat "$@" | sha256sum | cut -d' ' -f1; }
now_ms() { date +%s%3N; }

command -v node >/dev/null || die "node not found (need Node 20 or later)"
command -v npm >/dev/null || die "npm not found"
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT

# ---- npm -------------------------------------------------------------------
NPM_STAMP=node_modules/.mansign-install-stamp
want=$(stamp_of package.json package-lock.json)
if [ "${FORCE:-0}" = 1 ] || [ ! -f "$NPM_STAMP" ] || [ "$(cat "$NPM_STAMP")" != "$want" ]; then
  t0=$(now_ms)
  run "$LOG" npm ci --no-audit --no-fund --loglevel=error
  echo "$want" >"$NPM_STAMP"
  echo "npm: $(grep -o 'added [0-9]* packages' "$LOG" || echo installed) in $(( $(now_ms) - t0 )) ms"
else
  echo "npm: up to date"
fi

# ---- python ----------------------------------------------------------------
if [ "${SKIP_PY:-0}" = 1 ]; then
  echo "python: skipped (SKIP_PY=1)"
  exit 0
fi
command -v python3 >/dev/null || die "python3 not found (or set SKIP_PY=1)"
PY_STAMP=.venv/.mansign-install-stamp
want=$(stamp_of requirements.txt)
if [ "${FORCE:-0}" = 1 ] || [ ! -x .venv/bin/sigstore ] || [ ! -f "$PY_STAMP" ] || [ "$(cat "$PY_STAMP")" != "$want" ]; then
  t0=$(now_ms)
  if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c '' 2>/dev/null; then
    rm -rf .venv
    if ! python3 -m venv .venv >"$LOG" 2>&1; then
      cat "$LOG" >&2
      rm -rf .venv
      die "python3 -m venv failed (Debian: apt-get install python3-venv)"
    fi
  fi
  run "$LOG" .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-input -r requirements.txt
  .venv/bin/sigstore --version >/dev/null 2>&1 || die ".venv/bin/sigstore does not run after pip install"
  echo "$want" >"$PY_STAMP"
  echo "python: $(.venv/bin/sigstore --version) installed in $(( $(now_ms) - t0 )) ms"
else
  echo "python: up to date ($(.venv/bin/sigstore --version))"
fi
