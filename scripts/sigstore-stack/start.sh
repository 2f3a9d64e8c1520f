#!/usr/bin/env bash
# start.sh [--env] STATE_DIR -- start a loopback Sigstore stack and write its trust material.
#
# By hand (README, "Quickstart: keyless, in CI", the paragraph on a local Sigstore): --env
# prints the exports instead of the status line (that goes to stderr), including
# SIGSTORE_ID_TOKEN, so that
#   eval "$(bash scripts/sigstore-stack/start.sh --env /tmp/mansign-stack)"
# leaves `mansign sign` and `mansign verify` pointed at the stack; stop it with
#   bash scripts/sigstore-stack/stop.sh /tmp/mansign-stack
#
# Starts (all on 127.0.0.1, ports chosen by the OS unless *_PORT is set):
#   oidc   node oidc-issuer.mjs   (npm oauth2-mock-server): discovery, JWKS, /token
#   mock   node mock-sigstore.js  (npm @sigstore/mock): Fulcio v2 + CT log, Rekor v1,
#          RFC 3161 TSA, plus the /__stats and /__faults test hooks
#   tuf    python3 -m http.server over a TUF repo made by make-tuf-repo.py  [WITH_TUF=1 only]
# Writes into STATE_DIR (created if missing):
#   env                  shell exports (SIGSTORE_*); `. STATE_DIR/env`
#   id_token             signed JWT (iss=issuer URL, sub=$OIDC_SUB, email=$OIDC_EMAIL, aud=sigstore)
#   trusted_root.json    Sigstore TrustedRoot (Fulcio root, CT log key, Rekor key, TSA chain)
#   signing_config.json  SigningConfig v0.2 (Fulcio / Rekor v1 / TSA / OIDC URLs)
#   trust_config.json    ClientTrustConfig v0.1 (sigstore-python --trust-config)
#   *.pem, stack.json, oidc.json
#   *.pid, *.log         one per process; stop.sh STATE_DIR stops exactly those PIDs
#   tuf/                 static TUF repo                                   [WITH_TUF=1 only]
# Settings (environment):
#   OIDC_SUB, OIDC_EMAIL, TOKEN_TTL (s, default 3600), SUBJECT_CLAIM (sub|email, default sub),
#   OIDC_PORT, FULCIO_PORT, REKOR_PORT, TSA_PORT, TUF_PORT (default 0 = any free port),
#   WITH_TUF (0|1, default 0; 1 needs the venv from install.sh), READY_TIMEOUT (s, default 30),
#   NODE (default node), PYTHON (default .venv/bin/python if present, else python3)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PRINT_ENV=0
if [ "${1:-}" = --env ]; then
  PRINT_ENV=1
  shift
fi
if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: $0 [--env] STATE_DIR" >&2
  exit 2
fi
mkdir -p "$1"
STATE=$(cd "$1" && pwd)
NODE=${NODE:-node}
if [ -z "${PYTHON:-}" ]; then
  if [ -x "$HERE/.venv/bin/python" ]; then PYTHON=$HERE/.venv/bin/python; else PYTHON=python3; fi
fi
HOST=127.0.0.1
READY_TIMEOUT=${READY_TIMEOUT:-30}
WITH_TUF=${WITH_TUF:-0}
OIDC_SUB=${OIDC_SUB:-https://github.com/acme/widget/.github/workflows/release.yml@refs/heads/main}
OIDC_EMAIL=${OIDC_EMAIL:-ci@example.com}

if [ ! -d "$HERE/node_modules/@sigstore/mock" ] || [ ! -d "$HERE/node_modules/oauth2-mock-server" ]; then
  echo "start.sh: npm packages missing; run $HERE/install.sh first" >&2
  exit 1
fi

# alive PID: running and not a zombie (kill -0 also succeeds on zombies)
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
for f in oidc mock tuf; do
  if [ -f "$STATE/$f.pid" ] && alive "$(cat "$STATE/$f.pid")"; then
    echo "start.sh: $f already running (pid $(cat "$STATE/$f.pid")); run stop.sh $STATE first" >&2
    exit 1
  fi
done
started_ok=0
# on any failure, stop whatever this run already started
trap '[ "$started_ok" = 1 ] || "$HERE/stop.sh" "$STATE" >/dev/null' EXIT
rm -f "$STATE"/*.pid "$STATE"/*.log "$STATE"/env "$STATE"/stack.json "$STATE"/oidc.json "$STATE"/id_token
rm -rf "$STATE/tuf"

# wait_ready NAME LOGFILE PID: wait for a "READY " line or for the process to die
wait_ready() {
  local name=$1 log=$2 pid=$3 i
  for ((i = 0; i < READY_TIMEOUT * 20; i++)); do
    if grep -q '^READY ' "$log" 2>/dev/null; then return 0; fi
    if ! alive "$pid"; then
      echo "start.sh: $name exited early; log:" >&2; cat "$log" >&2; return 1
    fi
    sleep 0.05
  done
  echo "start.sh: $name not ready after ${READY_TIMEOUT}s; log:" >&2; cat "$log" >&2; return 1
}

t0=$(date +%s%N)
# Both node processes start in parallel; each waits for its own READY line.
"$NODE" "$HERE/oidc-issuer.mjs" --out "$STATE" --host "$HOST" --port "${OIDC_PORT:-0}" \
  --sub "$OIDC_SUB" --email "$OIDC_EMAIL" --ttl "${TOKEN_TTL:-3600}" \
  </dev/null >"$STATE/oidc.log" 2>&1 &
echo $! >"$STATE/oidc.pid"
"$NODE" "$HERE/mock-sigstore.js" --out "$STATE" --host "$HOST" \
  --fulcio-port "${FULCIO_PORT:-0}" --rekor-port "${REKOR_PORT:-0}" --tsa-port "${TSA_PORT:-0}" \
  --subject-claim "${SUBJECT_CLAIM:-sub}" \
  </dev/null >"$STATE/mock.log" 2>&1 &
echo $! >"$STATE/mock.pid"
wait_ready oidc "$STATE/oidc.log" "$(cat "$STATE/oidc.pid")"
wait_ready mock "$STATE/mock.log" "$(cat "$STATE/mock.pid")"
# One node call: the mock started before the issuer's port was known, so add
# the issuer to the signing config; print the URLs for the env file.
{ read -r ISSUER; read -r FULCIO_URL; read -r REKOR_URL; read -r TSA_URL; read -r SUBJECT; } < <("$NODE" -e '
  const fs = require("fs"), path = require("path"), dir = process.argv[1];
  const rd = (f) => JSON.parse(fs.readFileSync(path.join(dir, f), "utf8"));
  const wr = (f, j) => fs.writeFileSync(path.join(dir, f), JSON.stringify(j, null, 2) + "\n");
  const { issuer } = rd("oidc.json"), st = rd("stack.json"), sc = rd("signing_config.json"), tc = rd("trust_config.json");
  const start = sc.caUrls[0].validFor.start;
  sc.oidcUrls = [{ url: issuer, majorApiVersion: 1, validFor: { start }, operator: "sigstore.mock" }];
  tc.signingConfig = sc;
  wr("signing_config.json", sc);
  wr("trust_config.json", tc);
  console.log([issuer, st.fulcioURL, st.rekorURL, st.tsaURL, st.subjectClaim].join("\n"));
' "$STATE")
[ -n "$SUBJECT" ] || { echo "start.sh: could not read $STATE/stack.json / oidc.json" >&2; exit 1; }

TUF_URL=
if [ "$WITH_TUF" = 1 ]; then
  "$PYTHON" "$HERE/make-tuf-repo.py" --trust-dir "$STATE" --out "$STATE/tuf" >"$STATE/tuf-make.log" 2>&1 ||
    { echo "start.sh: make-tuf-repo.py failed (WITH_TUF=1 needs the venv: install.sh); log:" >&2; cat "$STATE/tuf-make.log" >&2; exit 1; }
  "$PYTHON" -u -m http.server --bind "$HOST" "${TUF_PORT:-0}" --directory "$STATE/tuf" \
    </dev/null >"$STATE/tuf.log" 2>&1 &
  echo $! >"$STATE/tuf.pid"
  for ((i = 0; i < READY_TIMEOUT * 20; i++)); do
    grep -q 'Serving HTTP on' "$STATE/tuf.log" 2>/dev/null && break
    alive "$(cat "$STATE/tuf.pid")" || { cat "$STATE/tuf.log" >&2; exit 1; }
    sleep 0.05
  done
  TUF_PORT_REAL=$(sed -n 's/.*Serving HTTP on [0-9.]* port \([0-9]*\).*/\1/p' "$STATE/tuf.log" | head -1)
  [ -n "$TUF_PORT_REAL" ] || { echo "start.sh: tuf server not ready" >&2; cat "$STATE/tuf.log" >&2; exit 1; }
  TUF_URL=http://$HOST:$TUF_PORT_REAL
fi

if [ "$SUBJECT" = email ]; then IDENTITY=$OIDC_EMAIL; else IDENTITY=$OIDC_SUB; fi
{
  echo "# written by start.sh; source it: . $(printf %q "$STATE/env")"
  e() { printf 'export %s=%q\n' "$1" "$2"; }
  e SIGSTORE_STACK_DIR "$STATE"
  e SIGSTORE_OIDC_ISSUER "$ISSUER"
  e SIGSTORE_OIDC_TOKEN_URL "$ISSUER/token"
  e SIGSTORE_ID_TOKEN_FILE "$STATE/id_token"
  e SIGSTORE_IDENTITY "$IDENTITY"
  e SIGSTORE_FULCIO_URL "$FULCIO_URL"
  e SIGSTORE_REKOR_URL "$REKOR_URL"
  e SIGSTORE_TSA_URL "$TSA_URL"
  e SIGSTORE_TRUSTED_ROOT "$STATE/trusted_root.json"
  e SIGSTORE_SIGNING_CONFIG "$STATE/signing_config.json"
  e SIGSTORE_TRUST_CONFIG "$STATE/trust_config.json"
  e SIGSTORE_STATS_FULCIO_URL "$FULCIO_URL/__stats"
  e SIGSTORE_STATS_REKOR_URL "$REKOR_URL/__stats"
  e SIGSTORE_FAULTS_URL "$REKOR_URL/__faults"
  e SIGSTORE_MINT_TOKEN "$HERE/mint-token.sh"
  e SIGSTORE_TUF_URL "$TUF_URL"
  e SIGSTORE_TUF_ROOT "${TUF_URL:+$STATE/tuf/root.json}"
} >"$STATE/env.tmp"
mv "$STATE/env.tmp" "$STATE/env"
t1=$(date +%s%N)
started_ok=1
if [ "$PRINT_ENV" = 1 ]; then
  echo "sigstore stack up in $(((t1 - t0) / 1000000)) ms; state in $STATE; stop: bash $HERE/stop.sh $STATE" >&2
  cat "$STATE/env"
  printf 'export SIGSTORE_ID_TOKEN=%q\n' "$(cat "$STATE/id_token")"
else
  echo "sigstore stack up in $(((t1 - t0) / 1000000)) ms; state in $STATE (. $STATE/env)"
fi
