#!/usr/bin/env bash
# Builds the real peers mansign's tests run against (issue 22) from the pinned Go module in
# tests/peers/ and prints where they are, one `NAME=ABSOLUTE_PATH` line each on stdout:
#
#   kubectl-sigstore   github.com/sigstore/k8s-manifest-sigstore/cmd/kubectl-sigstore
#   kubectl-kyverno    github.com/kyverno/kyverno/cmd/cli/kubectl-kyverno
#   yamloracle         tests/peers/yamloracle (kubectl apply's reading of a file)
#
# The binaries are built once into a cache outside the clone, keyed by sha256 of go.mod,
# go.sum, the package list and `go version`:
#   ${MANSIGN_TOOLS_CACHE:-$HOME/.cache/mansign-tools}/peers-<key>/bin/
# A build goes into a temporary directory renamed into place when complete, so a killed
# build never leaves a half cache. Progress goes to stderr. A missing Go toolchain or a
# failed build exits non-zero: the tests that need the peers fail, they never skip.
set -euo pipefail
cd "$(dirname "$0")/../tests/peers"

# name=package, in build order.
PEERS=(
  "kubectl-sigstore=github.com/sigstore/k8s-manifest-sigstore/cmd/kubectl-sigstore"
  "kubectl-kyverno=github.com/kyverno/kyverno/cmd/cli/kubectl-kyverno"
  "yamloracle=./yamloracle"
)

die() {
  echo "peers.sh: $*" >&2
  exit 1
}

command -v go >/dev/null 2>&1 ||
  die "the Go toolchain (go) is not on PATH; the peer tests need it (Go >= $(sed -n 's/^go //p' go.mod)), install it from https://go.dev/dl/"
go_version=$(go version) || die "\`go version\` failed"

key=$(
  {
    sha256sum go.mod go.sum yamloracle/*.go | cut -d' ' -f1
    printf '%s\n' "${PEERS[@]}"
    echo "$go_version"
  } | sha256sum | cut -c1-16
)
cache=${MANSIGN_TOOLS_CACHE:-$HOME/.cache/mansign-tools}
dir="$cache/peers-$key"

if [ ! -d "$dir/bin" ]; then
  mkdir -p "$cache"
  tmp=$(mktemp -d "$cache/.peers-$key.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  echo "peers.sh: building the peers into $dir ($go_version); the first build takes many minutes" >&2
  start=$(date +%s)
  mkdir -p "$tmp/bin"
  for entry in "${PEERS[@]}"; do
    name=${entry%%=*}
    pkg=${entry#*=}
    echo "peers.sh: go build $pkg" >&2
    # -mod=readonly: go.mod and go.sum are the pin; a build never rewrites them.
    GOFLAGS="-mod=readonly -buildvcs=false" go build -o "$tmp/bin/$name" "$pkg" ||
      die "building $name ($pkg) failed (module tests/peers, $go_version)"
  done
  printf '%s\n' "$go_version" "${PEERS[@]}" >"$tmp/built-with"
  # Another process may have finished the same build meanwhile: keep the first one.
  if ! mv -T "$tmp" "$dir" 2>/dev/null; then
    [ -d "$dir/bin" ] || die "cannot move the build into $dir"
  fi
  trap - EXIT
  rm -rf "$tmp"
  echo "peers.sh: built in $(($(date +%s) - start)) s" >&2
fi

for entry in "${PEERS[@]}"; do
  name=${entry%%=*}
  [ -x "$dir/bin/$name" ] || die "$dir/bin/$name is missing; remove $dir and run again"
  echo "$name=$dir/bin/$name"
done
