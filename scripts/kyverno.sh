#!/usr/bin/env bash
# kyverno.sh -- Kyverno's admission controller beside the test API server (issue 36), out of
# cluster the way Kyverno's own development setup runs it: the binary on this machine, a
# kubeconfig, a server IP on loopback for its webhook registrations, its CRDs applied first.
#
#   scripts/kyverno.sh build                 build github.com/kyverno/kyverno/cmd/kyverno and
#                                            cmd/reports-controller (once) from the Go module
#                                            tests/kyverno/ and print kyverno=PATH and
#                                            reports-controller=PATH (config/crds beside them,
#                                            in PATH/../../crds)
#   scripts/kyverno.sh start DIR KUBECONFIG  apply the CRDs, the namespaces and the ConfigMaps
#                                            it reads to the cluster of KUBECONFIG, start it on
#                                            a free 127.0.0.1 port, write DIR/kyverno.pid,
#                                            DIR/kyverno.log, DIR/env, and wait until it
#                                            answers /health/readiness and has registered its
#                                            policy and exception webhooks; with
#                                            KYVERNO_REPORTS_CONTROLLER=1 also its reports
#                                            controller (background scans, PolicyReports),
#                                            DIR/reports.pid and DIR/reports.log, ready once it
#                                            holds its leader-election Lease
#   scripts/kyverno.sh stop DIR              stop exactly the processes recorded in
#                                            DIR/kyverno.pid and DIR/reports.pid (the logs stay)
#
# PolicyExceptions are on, as Kyverno documents for production (kyverno.io/docs/exceptions):
# --enablePolicyException and --exceptionNamespace naming ONE namespace, by default
# `kyverno-exceptions` (KYVERNO_EXCEPTION_NAMESPACE). Kyverno ignores exceptions in every
# other namespace; mansign's webhook still verifies them there (deploy/ registers them all).
#
# The version is the one tests/peers/go.mod pins for the Kyverno CLI (this script checks that
# both modules require the same one). The binary is cached in
#   ${MANSIGN_TOOLS_CACHE:-$HOME/.cache/mansign-tools}/kyverno-<key>/bin/kyverno
# where <key> is the sha256 of go.mod, go.sum, the package, the link flags and `go version`:
# a changed pin or toolchain builds a new directory, published with one rename (a killed or
# concurrent build never leaves half a cache). The build flags are the peers' (scripts/peers.sh)
# plus `-s -w`, so the packages the Kyverno CLI build compiled come from Go's build cache.
# A missing `go`, a failed build or a start that does not become ready exits non-zero: the
# tests that need Kyverno fail, they never skip.
#
# Settings (environment): KYVERNO_READY_TIMEOUT (s, default 180), KYVERNO_EXCEPTION_NAMESPACE,
# KYVERNO_ARGS (extra flags, e.g. --httpAllowlist=...), KYVERNO_REPORTS_CONTROLLER (1: start
# the reports controller too), KYVERNO_REPORTS_ARGS (its extra flags; the http settings a
# ValidatingPolicy's background scan needs are its own, --httpBlocklist included), KUBECTL
# (default: the test cluster's, scripts/cluster.sh build), KYVERNO_OWNER_PID (stop Kyverno
# when that process exits).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MOD=$ROOT/tests/kyverno
CACHE=${MANSIGN_TOOLS_CACHE:-$HOME/.cache/mansign-tools}
PACKAGE=github.com/kyverno/kyverno/cmd/kyverno
# The reports controller: Kyverno's background scans and PolicyReports (issue 37).
REPORTS_PACKAGE=github.com/kyverno/kyverno/cmd/reports-controller
LDFLAGS="-s -w"
# Kyverno's own namespace and the names its cmd/internal/check.go requires in the environment.
NAMESPACE=kyverno
# The CRD groups of config/crds the admission controller watches.
CRD_DIRS=(kyverno policies.kyverno.io policyreport reports)

die() {
  echo "kyverno.sh: $*" >&2
  exit 1
}

version_of() { # MODULE_DIR: the github.com/kyverno/kyverno version its go.mod requires
  sed -n 's/^\(require \)\{0,1\}[[:space:]]*github\.com\/kyverno\/kyverno \(v[^ ]*\).*/\2/p' "$1/go.mod" | head -n1
}

top_dir() {
  command -v go >/dev/null 2>&1 ||
    die "\`go\` is not on PATH; Kyverno's admission controller is built from Go modules (Go >= $(sed -n 's/^go //p' "$MOD/go.mod") needed)"
  local mine peers key
  mine=$(version_of "$MOD")
  peers=$(version_of "$ROOT/tests/peers")
  [ -n "$mine" ] || die "tests/kyverno/go.mod requires no github.com/kyverno/kyverno"
  [ "$mine" = "$peers" ] ||
    die "tests/kyverno/go.mod pins Kyverno $mine but tests/peers/go.mod (the CLI) pins $peers; pin one version in both"
  key=$(
    cd "$MOD"
    {
      cat go.mod go.sum tools.go
      printf '%s\n' "$PACKAGE" "$REPORTS_PACKAGE" "$LDFLAGS" "${CRD_DIRS[@]}"
      go version
    } | sha256sum | cut -c1-16
  ) || die "could not compute the cache key in $MOD"
  echo "$CACHE/kyverno-$key"
}

complete() { # TOP
  [ -x "$1/bin/kyverno" ] && [ -x "$1/bin/reports-controller" ] && [ -d "$1/crds/kyverno" ]
}

cmd_build() {
  local top
  top=$(top_dir)
  if ! complete "$top"; then
    local tmp start version src d
    mkdir -p "$CACHE"
    tmp=$(mktemp -d "$top.tmp.XXXXXX")
    # shellcheck disable=SC2064 # expand $tmp now: it is this build's directory
    trap "rm -rf '$tmp'" EXIT
    start=$(date +%s)
    version=$(version_of "$MOD")
    echo "kyverno.sh: building $PACKAGE and $REPORTS_PACKAGE ($version, $(go version)) into $top (first build: many minutes)" >&2
    # -mod=readonly: go.mod and go.sum are the pin; a build never rewrites them.
    # Both in one `go build` (each named after its package's last element): they link side by side.
    if ! (cd "$MOD" && GOFLAGS="-mod=readonly -buildvcs=false" go build -ldflags "$LDFLAGS" -o "$tmp/bin/" "$PACKAGE" "$REPORTS_PACKAGE") >&2; then
      die "go build $PACKAGE $REPORTS_PACKAGE in $MOD failed (see the messages above)"
    fi
    # The CRDs of that same module version, copied beside the binary (the tests never read
    # Go's module cache).
    src=$(cd "$MOD" && GOFLAGS=-mod=readonly go list -m -f '{{.Dir}}' github.com/kyverno/kyverno) ||
      die "cannot find github.com/kyverno/kyverno $version in Go's module cache"
    mkdir -p "$tmp/crds"
    for d in "${CRD_DIRS[@]}"; do
      [ -d "$src/config/crds/$d" ] || die "$src/config/crds/$d is missing"
      cp -R "$src/config/crds/$d" "$tmp/crds/$d"
    done
    chmod -R u+w "$tmp/crds"
    printf '%s\n' "$(go version)" "$PACKAGE $version" "$REPORTS_PACKAGE $version" "$LDFLAGS" >"$tmp/built-with"
    # Atomic publish: another build that finished first wins; ours is discarded.
    if ! mv -T "$tmp" "$top" 2>/dev/null; then
      complete "$top" || die "could not move the build into $top"
    fi
    rm -rf "$tmp"
    trap - EXIT
    echo "kyverno.sh: built in $(($(date +%s) - start)) s" >&2
  fi
  echo "kyverno=$top/bin/kyverno"
  echo "reports-controller=$top/bin/reports-controller"
}

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

# ours PID WORD: the process's command line contains WORD (true if /proc is absent)
ours() {
  [ -r "/proc/$1/cmdline" ] || return 0
  tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF -- "$2"
}

# Stops the process recorded in DIR/NAME.pid (NAME: kyverno, the default, or reports):
# SIGTERM, SIGKILL after 10 s. Never matches by name; the PID is signalled only while its
# command line still names DIR.
stop_recorded() {
  local dir=$1 name=${2:-kyverno} pid
  [ -f "$dir/$name.pid" ] || return 0
  pid=$(cat "$dir/$name.pid")
  if [[ "$pid" =~ ^[0-9]+$ ]] && alive "$pid"; then
    if ! ours "$pid" "$dir"; then
      echo "kyverno.sh: pid $pid from $dir/$name.pid no longer runs in $dir; not signalling it" >&2
    else
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 200); do alive "$pid" || break; sleep 0.05; done
      if alive "$pid"; then
        echo "kyverno.sh: $name (pid $pid) ignored SIGTERM, sending SIGKILL" >&2
        kill -KILL "$pid" 2>/dev/null || return 1
      fi
    fi
  fi
  rm -f "$dir/$name.pid"
}

stop_both() { # DIR
  stop_recorded "$1" reports || true
  stop_recorded "$1" kyverno
}

# The reports controller beside the admission controller (called from cmd_start, whose
# locals it reads): the same kubeconfig and exception settings, its metrics on another
# loopback port, no webhook (it has none). Ready once it holds its leader-election Lease
# (Kyverno's scans start only then); its pod name is stable per DIR, so a restart takes the
# Lease back at once instead of waiting for the old holder's to lapse.
start_reports() {
  local pod
  pod="kyverno-reports-controller-$(basename "$dir")"
  # shellcheck disable=SC2086 # KYVERNO_REPORTS_ARGS is a list of flags
  env KYVERNO_NAMESPACE="$NAMESPACE" \
    KYVERNO_SERVICEACCOUNT_NAME=kyverno-reports-controller \
    KYVERNO_DEPLOYMENT=kyverno-reports-controller \
    KYVERNO_POD_NAME="$pod" \
    INIT_CONFIG=kyverno \
    METRICS_CONFIG=kyverno-metrics \
    "$reports" \
    --kubeconfig="$kubeconfig" \
    --metricsHost=127.0.0.1 \
    --metricsPort="$reports_metrics_port" \
    --enablePolicyException \
    --exceptionNamespace="$exceptions" \
    --autoMemLimitEnabled=false \
    --disableLogColor \
    ${KYVERNO_REPORTS_ARGS:-} \
    >"$dir/reports.log" 2>&1 </dev/null &
  echo $! >"$dir/reports.pid"
  echo "export KYVERNO_REPORTS_LOG='$dir/reports.log'" >>"$dir/env"
  local deadline=$(($(date +%s) + ready_timeout))
  until [ "$("${k[@]}" get lease kyverno-reports-controller -n "$NAMESPACE" -o 'jsonpath={.spec.holderIdentity}' 2>/dev/null)" = "$pod" ]; do
    if ! alive "$(cat "$dir/reports.pid")"; then
      echo "kyverno.sh: the reports controller exited during start-up; last lines of $dir/reports.log:" >&2
      tail -n 30 "$dir/reports.log" >&2 || true
      rm -f "$dir/reports.pid"
      stop_both "$dir" || true
      exit 1
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "kyverno.sh: the reports controller holds no Lease after ${ready_timeout} s; last lines of $dir/reports.log:" >&2
      tail -n 30 "$dir/reports.log" >&2 || true
      stop_both "$dir" || true
      exit 1
    fi
    sleep 0.5
  done
}

cmd_start() {
  [ $# -eq 2 ] && [ -n "$1" ] && [ -f "$2" ] || die "usage: kyverno.sh start DIR KUBECONFIG (an existing file)"
  mkdir -p "$1"
  local dir kubeconfig
  dir=$(cd "$1" && pwd)
  # A copy in DIR: Kyverno's command line then names DIR, which is how stop knows its PID.
  cp "$2" "$dir/kubeconfig"
  kubeconfig=$dir/kubeconfig
  if [ -f "$dir/kyverno.pid" ] && alive "$(cat "$dir/kyverno.pid")"; then
    die "kyverno already running in $dir (pid $(cat "$dir/kyverno.pid")); run kyverno.sh stop $dir first"
  fi
  local tools kyverno reports crds cluster_tools kubectl freeport
  tools=$(cmd_build) || exit 1
  kyverno=$(sed -n 's/^kyverno=//p' <<<"$tools")
  reports=$(sed -n 's/^reports-controller=//p' <<<"$tools")
  crds=$(dirname "$(dirname "$kyverno")")/crds
  cluster_tools=$(bash "$ROOT/scripts/cluster.sh" build) || die "scripts/cluster.sh build failed"
  kubectl=${KUBECTL:-$(sed -n 's/^kubectl=//p' <<<"$cluster_tools")}
  freeport=$(sed -n 's/^freeport=//p' <<<"$cluster_tools")
  local k=("$kubectl" --kubeconfig="$kubeconfig" --request-timeout=30s)
  local exceptions=${KYVERNO_EXCEPTION_NAMESPACE:-kyverno-exceptions}
  local ready_timeout=${KYVERNO_READY_TIMEOUT:-180} t0
  t0=$(date +%s.%N)

  # CRDs (server-side apply: some are larger than the last-applied annotation allows; apply
  # again on a restart is a no-op), then wait until the API server serves them.
  local d names=()
  for d in "${CRD_DIRS[@]}"; do
    "${k[@]}" apply --server-side --force-conflicts -f "$crds/$d" >/dev/null ||
      die "applying Kyverno's CRDs from $crds/$d failed"
  done
  mapfile -t names < <(cat "$crds"/*/*.yaml | sed -n 's/^  name: \(.*\.\(kyverno\.io\|wgpolicyk8s\.io\|reports\.kyverno\.io\|openreports\.io\)\)$/crd\/\1/p' | sort -u)
  [ "${#names[@]}" -gt 0 ] || die "no CRD names found in $crds"
  # `kubectl wait` fails at once on a CRD whose status has no conditions yet: retry it.
  local crd_deadline=$(($(date +%s) + 60))
  until "${k[@]}" wait --for=condition=Established --timeout=30s "${names[@]}" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$crd_deadline" ] || die "Kyverno's CRDs did not become established within 60 s"
    sleep 0.5
  done

  # Its namespace, the exception namespace, and the two ConfigMaps it reads at start-up
  # (empty ones: Kyverno's defaults).
  "${k[@]}" apply -f - >/dev/null <<EOF || die "creating Kyverno's namespaces and ConfigMaps failed"
apiVersion: v1
kind: Namespace
metadata:
  name: $NAMESPACE
---
apiVersion: v1
kind: Namespace
metadata:
  name: $exceptions
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: kyverno
  namespace: $NAMESPACE
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: kyverno-metrics
  namespace: $NAMESPACE
EOF

  local ports webhook_port metrics_port reports_metrics_port
  mapfile -t ports < <("$freeport" 3)
  webhook_port=${ports[0]} metrics_port=${ports[1]} reports_metrics_port=${ports[2]}
  trap 'stop_both "$dir" || true' ERR
  # Everything it listens on is on loopback: the webhook server (its TLS pair from the Secrets
  # it creates, with 127.0.0.1 in the certificate), the metrics endpoint; profiling is off
  # by default and the controller-runtime metrics server is disabled ("0").
  # shellcheck disable=SC2086 # KYVERNO_ARGS is a list of flags
  env KYVERNO_NAMESPACE="$NAMESPACE" \
    KYVERNO_SERVICEACCOUNT_NAME=kyverno-admission-controller \
    KYVERNO_DEPLOYMENT=kyverno-admission-controller \
    KYVERNO_POD_NAME="kyverno-admission-controller-$(basename "$dir")" \
    KYVERNO_SVC=kyverno-svc \
    INIT_CONFIG=kyverno \
    METRICS_CONFIG=kyverno-metrics \
    "$kyverno" \
    --kubeconfig="$kubeconfig" \
    --serverIP="127.0.0.1:$webhook_port" \
    --webhookServerHost=127.0.0.1 \
    --webhookServerPort="$webhook_port" \
    --metricsHost=127.0.0.1 \
    --metricsPort="$metrics_port" \
    --controllerRuntimeMetricsAddress=0 \
    --caSecretName=kyverno-svc.kyverno.svc.kyverno-tls-ca \
    --tlsSecretName=kyverno-svc.kyverno.svc.kyverno-tls-pair \
    --backgroundServiceAccountName=system:serviceaccount:kyverno:kyverno-background-controller \
    --reportsServiceAccountName=system:serviceaccount:kyverno:kyverno-reports-controller \
    --enablePolicyException \
    --exceptionNamespace="$exceptions" \
    --autoMemLimitEnabled=false \
    --disableLogColor \
    ${KYVERNO_ARGS:-} \
    >"$dir/kyverno.log" 2>&1 </dev/null &
  echo $! >"$dir/kyverno.pid"
  {
    echo "export KYVERNO_URL='https://127.0.0.1:$webhook_port'"
    echo "export KYVERNO_METRICS_URL='http://127.0.0.1:$metrics_port/metrics'"
    echo "export KYVERNO_EXCEPTION_NAMESPACE='$exceptions'"
    echo "export KYVERNO_LOG='$dir/kyverno.log'"
  } >"$dir/env"

  # Ready: the webhook server answers its readiness probe and the webhook configurations
  # it registers point at it (the policy validation webhook and the exception webhook; the
  # resource webhooks are filled in as policies arrive).
  local deadline=$(($(date +%s) + ready_timeout)) url="127.0.0.1:$webhook_port"
  until curl -fsSk --max-time 2 "https://$url/health/readiness" >/dev/null 2>&1 &&
    "${k[@]}" get validatingwebhookconfiguration kyverno-policy-validating-webhook-cfg kyverno-exception-validating-webhook-cfg \
      -o 'jsonpath={.items[*].webhooks[*].clientConfig.url}' 2>/dev/null | grep -qF "https://$url/"; do
    if ! alive "$(cat "$dir/kyverno.pid")"; then
      echo "kyverno.sh: kyverno exited during start-up; last lines of $dir/kyverno.log:" >&2
      tail -n 30 "$dir/kyverno.log" >&2 || true
      rm -f "$dir/kyverno.pid"
      exit 1
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "kyverno.sh: kyverno not ready after ${ready_timeout} s; last lines of $dir/kyverno.log:" >&2
      tail -n 30 "$dir/kyverno.log" >&2 || true
      stop_both "$dir" || true
      exit 1
    fi
    sleep 0.5
  done
  if [ "${KYVERNO_REPORTS_CONTROLLER:-}" = 1 ]; then
    start_reports
  fi
  trap - ERR
  # KYVERNO_OWNER_PID: stop Kyverno when that process ends (a test binary killed midway
  # leaves nothing running). The watcher ends too once Kyverno is stopped.
  if [[ "${KYVERNO_OWNER_PID:-}" =~ ^[0-9]+$ ]]; then
    # shellcheck disable=SC2016 # the watcher's own positional parameters
    nohup bash -c 'while kill -0 "$1" 2>/dev/null && [ -f "$3/kyverno.pid" ]; do sleep 1; done
      [ -f "$3/kyverno.pid" ] && exec "$2" stop "$3"' \
      watch "$KYVERNO_OWNER_PID" "$ROOT/scripts/kyverno.sh" "$dir" >/dev/null 2>&1 </dev/null &
  fi
  printf 'kyverno.sh: ready at https://%s in %.1f s (exceptions read from namespace %s; log %s)\n' "$url" \
    "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')" "$exceptions" "$dir/kyverno.log" >&2
  echo "KYVERNO_URL=https://$url"
}

cmd_stop() {
  [ $# -eq 1 ] && [ -n "$1" ] || die "usage: kyverno.sh stop DIR"
  [ -d "$1" ] || return 0
  local dir
  dir=$(cd "$1" && pwd)
  stop_both "$dir"
}

case ${1:-} in
build) cmd_build ;;
start)
  shift
  cmd_start "$@"
  ;;
stop)
  shift
  cmd_stop "$@"
  ;;
*) die "usage: kyverno.sh build | start DIR KUBECONFIG | stop DIR" ;;
esac
