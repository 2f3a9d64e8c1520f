#!/usr/bin/env bash
# cluster.sh -- a real Kubernetes API server on loopback for mansign's tests, the way
# controller-runtime's envtest runs one: etcd + kube-apiserver, no kubelet, no
# controller-manager, no containers.
#
#   scripts/cluster.sh build       build kube-apiserver, kubectl and etcd (once) from the Go
#                                  module tests/cluster/ and print NAME=PATH lines
#   scripts/cluster.sh start DIR   start etcd and kube-apiserver on free 127.0.0.1 ports with
#                                  key material made on the fly; write DIR/kubeconfig, DIR/env,
#                                  DIR/*.pid, DIR/*.log; wait for /readyz
#   scripts/cluster.sh stop DIR    stop exactly the processes recorded in DIR/*.pid and remove
#                                  DIR's data and keys (the logs stay)
#
# The binaries come from the Go module registry only (k8s.io/kubernetes with its staging
# modules replaced by their published versions, go.etcd.io/etcd/server/v3), pinned by
# tests/cluster/go.mod and go.sum, and are cached in
#   ${MANSIGN_TOOLS_CACHE:-$HOME/.cache/mansign-tools}/cluster-<key>/bin/
# where <key> is the sha256 of go.mod, go.sum, the helper mains, the package list, the
# link flags and `go version`: a changed pin or toolchain builds a new directory.
# A missing `go` or a failed build exits non-zero: tests that need the cluster fail.
#
# Settings (environment): READY_TIMEOUT (s, default 60), KUBE_APISERVER_ARGS (extra flags),
# CLUSTER_OWNER_PID (stop the cluster when that process exits).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MOD=$ROOT/tests/cluster
CACHE=${MANSIGN_TOOLS_CACHE:-$HOME/.cache/mansign-tools}
K8S_VERSION=v1.34.4
PACKAGES=(
  k8s.io/kubernetes/cmd/kube-apiserver
  k8s.io/kubernetes/cmd/kubectl
  ./cmd/etcd
  ./cmd/certgen
  ./cmd/freeport
)
# The version the binaries report (/version, `kubectl version`): a build from the module
# cache has no git tree for hack/lib/version.sh to read, so it is set the same way that
# script does, with -X on component-base's and client-go's version variables.
LDFLAGS="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  LDFLAGS+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=34"
  LDFLAGS+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

die() {
  echo "cluster.sh: $*" >&2
  exit 1
}

bin_dir() {
  command -v go >/dev/null 2>&1 ||
    die "\`go\` is not on PATH; the test cluster is built from Go modules (Go >= 1.24 needed)"
  local key
  key=$(
    cd "$MOD"
    {
      cat go.mod go.sum cmd/*/main.go
      printf '%s\n' "${PACKAGES[@]}" "$LDFLAGS"
      go version
    } | sha256sum | cut -c1-16
  )
  echo "$CACHE/cluster-$key/bin"
}

cmd_build() {
  local bin
  bin=$(bin_dir)
  if [ ! -x "$bin/kube-apiserver" ] || [ ! -x "$bin/kubectl" ] || [ ! -x "$bin/etcd" ]; then
    local top tmp start
    top=$(dirname "$bin")
    mkdir -p "$(dirname "$top")"
    tmp=$(mktemp -d "$top.tmp.XXXXXX")
    start=$(date +%s)
    echo "cluster.sh: building kube-apiserver, kubectl ($K8S_VERSION) and etcd into $top (first build: several minutes)" >&2
    if ! (cd "$MOD" && CGO_ENABLED=0 go build -mod=readonly -trimpath -ldflags "$LDFLAGS" -o "$tmp/bin/" "${PACKAGES[@]}") >&2; then
      rm -rf "$tmp"
      die "go build in $MOD failed (see the messages above)"
    fi
    # Atomic publish: another build that finished first wins; ours is discarded.
    if ! mv -T "$tmp" "$top" 2>/dev/null; then
      rm -rf "$tmp"
      [ -x "$bin/kube-apiserver" ] || die "could not move the build into $top"
    fi
    echo "cluster.sh: built in $(($(date +%s) - start)) s" >&2
  fi
  for name in kube-apiserver kubectl etcd certgen freeport; do
    echo "$name=$bin/$name"
  done
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

# Stops the processes recorded in DIR/*.pid: SIGTERM, SIGKILL after 10 s. Never matches by
# name; a recorded PID is signalled only while its command line still names DIR (a stale
# pid file whose PID was reused is left alone).
stop_recorded() {
  local dir=$1 rc=0 f pid
  for f in kube-apiserver etcd; do
    [ -f "$dir/$f.pid" ] || continue
    pid=$(cat "$dir/$f.pid")
    if [[ "$pid" =~ ^[0-9]+$ ]] && alive "$pid"; then
      if ! ours "$pid" "$dir"; then
        echo "cluster.sh: pid $pid from $dir/$f.pid no longer runs in $dir; not signalling it" >&2
      else
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 200); do alive "$pid" || break; sleep 0.05; done
        if alive "$pid"; then
          echo "cluster.sh: $f (pid $pid) ignored SIGTERM, sending SIGKILL" >&2
          kill -KILL "$pid" 2>/dev/null || rc=1
        fi
      fi
    fi
    rm -f "$dir/$f.pid"
  done
  return $rc
}

cmd_start() {
  [ $# -eq 1 ] && [ -n "$1" ] || die "usage: cluster.sh start DIR"
  mkdir -p "$1"
  local dir
  dir=$(cd "$1" && pwd)
  local f
  for f in kube-apiserver etcd; do
    if [ -f "$dir/$f.pid" ] && alive "$(cat "$dir/$f.pid")"; then
      die "$f already running in $dir (pid $(cat "$dir/$f.pid")); run cluster.sh stop $dir first"
    fi
  done
  local tools
  tools=$(cmd_build) || exit 1
  local KUBE_APISERVER KUBECTL ETCD CERTGEN FREEPORT
  KUBE_APISERVER=$(sed -n 's/^kube-apiserver=//p' <<<"$tools")
  KUBECTL=$(sed -n 's/^kubectl=//p' <<<"$tools")
  ETCD=$(sed -n 's/^etcd=//p' <<<"$tools")
  CERTGEN=$(sed -n 's/^certgen=//p' <<<"$tools")
  FREEPORT=$(sed -n 's/^freeport=//p' <<<"$tools")

  local t0 ready_timeout=${READY_TIMEOUT:-60}
  t0=$(date +%s.%N)
  trap 'stop_recorded "$dir" || true' ERR
  "$CERTGEN" "$dir/pki"
  local ports etcd_port peer_port api_port
  mapfile -t ports < <("$FREEPORT" 3)
  etcd_port=${ports[0]} peer_port=${ports[1]} api_port=${ports[2]}

  # etcd: one member, plain HTTP on loopback (as envtest runs it), no fsync (test data).
  "$ETCD" \
    --name=mansign-test \
    --data-dir="$dir/etcd" \
    --listen-client-urls="http://127.0.0.1:$etcd_port" \
    --advertise-client-urls="http://127.0.0.1:$etcd_port" \
    --listen-peer-urls="http://127.0.0.1:$peer_port" \
    --initial-advertise-peer-urls="http://127.0.0.1:$peer_port" \
    --initial-cluster="mansign-test=http://127.0.0.1:$peer_port" \
    --unsafe-no-fsync=true \
    --log-level=warn \
    >"$dir/etcd.log" 2>&1 </dev/null &
  echo $! >"$dir/etcd.pid"

  # kube-apiserver: the flags envtest passes (controller-runtime
  # pkg/internal/testing/controlplane/apiserver.go, v0.22: secure serving on loopback, RBAC,
  # a client CA, service-account keys, a service IP range) plus what kubeadm sets on top:
  # authorization Node,RBAC and the admission plugins it enables beside the defaults (the
  # defaults already include
  # NamespaceLifecycle, ServiceAccount, MutatingAdmissionWebhook,
  # ValidatingAdmissionPolicy and ValidatingAdmissionWebhook).
  local pki=$dir/pki
  # shellcheck disable=SC2086 # KUBE_APISERVER_ARGS is a list of flags
  "$KUBE_APISERVER" \
    --cert-dir="$dir/apiserver-certs" \
    --advertise-address=127.0.0.1 \
    --bind-address=127.0.0.1 \
    --secure-port="$api_port" \
    --etcd-servers="http://127.0.0.1:$etcd_port" \
    --tls-cert-file="$pki/apiserver.crt" \
    --tls-private-key-file="$pki/apiserver.key" \
    --client-ca-file="$pki/ca.crt" \
    --authorization-mode=Node,RBAC \
    --service-account-issuer="https://127.0.0.1:$api_port" \
    --service-account-key-file="$pki/sa.pub" \
    --service-account-signing-key-file="$pki/sa.key" \
    --service-cluster-ip-range=10.0.0.0/24 \
    --allow-privileged=true \
    --enable-admission-plugins=NamespaceLifecycle,LimitRanger,ServiceAccount,DefaultStorageClass,DefaultTolerationSeconds,ResourceQuota,NodeRestriction,MutatingAdmissionWebhook,ValidatingAdmissionWebhook \
    --enable-priority-and-fairness=false \
    --profiling=false \
    --v=1 \
    ${KUBE_APISERVER_ARGS:-} \
    >"$dir/kube-apiserver.log" 2>&1 </dev/null &
  echo $! >"$dir/kube-apiserver.pid"

  local server="https://127.0.0.1:$api_port"
  cat >"$dir/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: mansign-test
  cluster:
    server: $server
    certificate-authority: $pki/ca.crt
users:
- name: admin
  user:
    client-certificate: $pki/admin.crt
    client-key: $pki/admin.key
contexts:
- name: mansign-test
  context:
    cluster: mansign-test
    user: admin
current-context: mansign-test
EOF
  {
    echo "export KUBECONFIG='$dir/kubeconfig'"
    echo "export CLUSTER_SERVER='$server'"
    echo "export CLUSTER_CA='$pki/ca.crt'"
    echo "export CLUSTER_ADMIN_CERT='$pki/admin.crt'"
    echo "export CLUSTER_ADMIN_KEY='$pki/admin.key'"
    echo "export KUBECTL='$KUBECTL'"
    echo "export KUBE_APISERVER='$KUBE_APISERVER'"
    echo "export ETCD='$ETCD'"
  } >"$dir/env"

  local deadline=$(($(date +%s) + ready_timeout))
  until "$KUBECTL" --kubeconfig="$dir/kubeconfig" --request-timeout=2s get --raw=/readyz >/dev/null 2>&1; do
    for f in etcd kube-apiserver; do
      if ! alive "$(cat "$dir/$f.pid")"; then
        echo "cluster.sh: $f exited during start-up; last lines of $dir/$f.log:" >&2
        tail -n 30 "$dir/$f.log" >&2 || true
        stop_recorded "$dir" || true
        exit 1
      fi
    done
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "cluster.sh: kube-apiserver not ready after ${ready_timeout} s; last lines of $dir/kube-apiserver.log:" >&2
      tail -n 30 "$dir/kube-apiserver.log" >&2 || true
      stop_recorded "$dir" || true
      exit 1
    fi
    sleep 0.2
  done
  trap - ERR
  # CLUSTER_OWNER_PID: stop the cluster when that process ends (a test binary that holds a
  # cluster in a static, or is killed, still leaves nothing running). The watcher also ends
  # once the cluster is stopped (its pid file is gone).
  if [[ "${CLUSTER_OWNER_PID:-}" =~ ^[0-9]+$ ]]; then
    # shellcheck disable=SC2016 # the watcher's own positional parameters
    nohup bash -c 'while kill -0 "$1" 2>/dev/null && [ -f "$3/kube-apiserver.pid" ]; do sleep 1; done
      [ -f "$3/kube-apiserver.pid" ] && exec "$2" stop "$3"' \
      watch "$CLUSTER_OWNER_PID" "$ROOT/scripts/cluster.sh" "$dir" >/dev/null 2>&1 </dev/null &
  fi
  printf 'cluster.sh: ready at %s in %.1f s (kubeconfig %s)\n' "$server" \
    "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')" "$dir/kubeconfig" >&2
  echo "KUBECONFIG=$dir/kubeconfig"
}

cmd_stop() {
  [ $# -eq 1 ] && [ -n "$1" ] || die "usage: cluster.sh stop DIR"
  [ -d "$1" ] || return 0
  local dir rc=0
  dir=$(cd "$1" && pwd)
  stop_recorded "$dir" || rc=1
  rm -rf "$dir/etcd" "$dir/pki" "$dir/apiserver-certs" "$dir/kubeconfig" "$dir/env"
  return $rc
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
*) die "usage: cluster.sh build | start DIR | stop DIR" ;;
esac
