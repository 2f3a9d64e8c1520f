#!/usr/bin/env bash
# Builds the real peers mansign's tests run against (issue 22) from the pinned Go module in
# tests/peers/ and prints where they are, one `NAME=ABSOLUTE_PATH` line each on stdout:
#
#   kubectl-sigstore          github.com/sigstore/k8s-manifest-sigstore/cmd/kubectl-sigstore
#   kubectl-kyverno           github.com/kyverno/kyverno/cmd/cli/kubectl-kyverno
#   yamloracle                tests/peers/yamloracle (kubectl apply's reading of a file)
#   kubectl-sigstore-v0.5.4   the same command at its last tag, from the module
#                             tests/peers/ks054 (one module graph cannot hold two versions)
#
# The binaries are built once into a cache outside the clone, one directory per module,
# keyed by sha256 of its go.mod, go.sum, sources, the package list and `go version`:
#   ${MANSIGN_TOOLS_CACHE:-$HOME/.cache/mansign-tools}/peers-<key>/bin/
#   ${MANSIGN_TOOLS_CACHE:-$HOME/.cache/mansign-tools}/peers-ks054-<key>/bin/
# A build goes into a temporary directory renamed into place when complete, so a killed
# build never leaves a half cache. Progress goes to stderr. A missing Go toolchain or a
# failed build exits non-zero: the tests that need the peers fail, they never skip.
set -euo pipefail
cd "$(dirname "$0")/../tests/peers"

# name=package. All of a module's packages build in one `go build -o DIR/` (which links
# them side by side) under their package's last path element, then take their name.
PEERS=(
  "kubectl-sigstore=github.com/sigstore/k8s-manifest-sigstore/cmd/kubectl-sigstore"
  "kubectl-kyverno=github.com/kyverno/kyverno/cmd/cli/kubectl-kyverno"
  "yamloracle=./yamloracle"
)
# name=package of the module in ks054/: kubectl-sigstore at its last tag, v0.5.4.
PEERS_054=(
  "kubectl-sigstore-v0.5.4=github.com/sigstore/k8s-manifest-sigstore/cmd/kubectl-sigstore"
)

die() {
  echo "peers.sh: $*" >&2
  exit 1
}

command -v go >/dev/null 2>&1 ||
  die "the Go toolchain (go) is not on PATH; the peer tests need it (Go >= $(sed -n 's/^go //p' go.mod)), install it from https://go.dev/dl/"
go_version=$(go version) || die "\`go version\` failed"
# No symbol table or DWARF: the tests only run these binaries, and linking the Kyverno CLI
# without them takes a fraction of the time (the cluster and Kyverno builds use the same flags).
LDFLAGS="-s -w"

cache=${MANSIGN_TOOLS_CACHE:-$HOME/.cache/mansign-tools}
tmp=
trap 'rm -rf "${tmp:-}"' EXIT

# build_into DIR MODULE_DIR NAME=PACKAGE...: builds each package of the module in MODULE_DIR
# into DIR/bin, unless DIR/bin exists.
build_into() {
  local dir=$1 module=$2
  shift 2
  [ -d "$dir/bin" ] && return 0
  mkdir -p "$cache"
  tmp=$(mktemp -d "$cache/.$(basename "$dir").XXXXXX")
  echo "peers.sh: building into $dir ($go_version); the first build takes many minutes" >&2
  local start entry name built pkgs=()
  start=$(date +%s)
  mkdir -p "$tmp/bin"
  for entry in "$@"; do
    pkgs+=("${entry#*=}")
  done
  echo "peers.sh: go build ${pkgs[*]} (module $module)" >&2
  # -mod=readonly: go.mod and go.sum are the pin; a build never rewrites them.
  (cd "$module" && GOFLAGS="-mod=readonly -buildvcs=false" go build -ldflags "$LDFLAGS" -o "$tmp/bin/" "${pkgs[@]}") ||
    die "building ${pkgs[*]} failed (module $module, $go_version)"
  for entry in "$@"; do
    name=${entry%%=*}
    built=$(basename "${entry#*=}")
    [ "$name" = "$built" ] || mv "$tmp/bin/$built" "$tmp/bin/$name" ||
      die "cannot name $tmp/bin/$built $name"
  done
  printf '%s\n' "$go_version" "$LDFLAGS" "$@" >"$tmp/built-with"
  # Another process may have finished the same build meanwhile: keep the first one.
  if ! mv -T "$tmp" "$dir" 2>/dev/null; then
    [ -d "$dir/bin" ] || die "cannot move the build into $dir"
  fi
  rm -rf "$tmp"
  tmp=
  echo "peers.sh: built in $(($(date +%s) - start)) s" >&2
}

key=$(
  {
    sha256sum go.mod go.sum yamloracle/*.go | cut -d' ' -f1
    printf '%s\n' "${PEERS[@]}" "$LDFLAGS"
    echo "$go_version"
  } | sha256sum | cut -c1-16
)
dir="$cache/peers-$key"
build_into "$dir" . "${PEERS[@]}"

key054=$(
  {
    sha256sum ks054/go.mod ks054/go.sum ks054/tools.go | cut -d' ' -f1
    printf '%s\n' "${PEERS_054[@]}" "$LDFLAGS"
    echo "$go_version"
  } | sha256sum | cut -c1-16
)
dir054="$cache/peers-ks054-$key054"
build_into "$dir054" ks054 "${PEERS_054[@]}"

for entry in "${PEERS[@]}"; do
  name=${entry%%=*}
  [ -x "$dir/bin/$name" ] || die "$dir/bin/$name is missing; remove $dir and run again"
  echo "$name=$dir/bin/$name"
done
for entry in "${PEERS_054[@]}"; do
  name=${entry%%=*}
  [ -x "$dir054/bin/$name" ] || die "$dir054/bin/$name is missing; remove $dir054 and run again"
  echo "$name=$dir054/bin/$name"
done
