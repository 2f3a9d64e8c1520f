#!/usr/bin/env bash
# ops-tools.sh -- build the programs mansign's operations tests run and print NAME=PATH lines:
#
#   helm=PATH        helm v3 (helm.sh/helm/v3/cmd/helm): `helm lint`, `helm template` of
#                    charts/mansign
#   rulecheck=PATH   tests/ops/rulecheck: the checks of `promtool check rules` (rulefmt
#                    parsing and validation, PromQL parsing of every expr, duplicate rules)
#                    without promtool's service-discovery dependencies
#
# Both come from the Go module registry only, pinned by tests/ops/go.mod and go.sum, and are
# built once into
#   ${MANSIGN_TOOLS_CACHE:-$HOME/.cache/mansign-tools}/ops-<key>/bin/
# where <key> is the sha256 of go.mod, go.sum, the helper mains, the package list, the link
# flags and `go version`: a changed pin or toolchain builds a new directory. The directory is published
# with one rename, so a concurrent or interrupted build never leaves a half-filled one.
# A missing `go` or a failed build exits non-zero: the tests that need these tools fail.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MOD=$ROOT/tests/ops
CACHE=${MANSIGN_TOOLS_CACHE:-$HOME/.cache/mansign-tools}
PACKAGES=(
  helm.sh/helm/v3/cmd/helm
  ./rulecheck
)
NAMES=(helm rulecheck)
HELM_VERSION=v3.22.0

die() {
  echo "ops-tools.sh: $*" >&2
  exit 1
}

command -v go >/dev/null 2>&1 ||
  die "\`go\` is not on PATH; helm and the rule checker are built from Go modules (Go >= 1.26.7 needed, see tests/ops/go.mod)"
grep -q "^	helm.sh/helm/v3 $HELM_VERSION\$" "$MOD/go.mod" ||
  die "tests/ops/go.mod does not require helm.sh/helm/v3 $HELM_VERSION (update HELM_VERSION here with it)"
# The link flags of helm's own Makefile (v3.22.0): the version `helm version` reports, and
# the Kubernetes version `helm template` and `helm lint` assume without a cluster (the
# client-go minor; unset, helm falls back to v1.20 and refuses the chart's kubeVersion).
k8s_minor=$(cd "$MOD" && go list -mod=readonly -m -f '{{.Version}}' k8s.io/client-go | cut -d. -f2) ||
  die "cannot read k8s.io/client-go's version from $MOD/go.mod"
LDFLAGS="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
LDFLAGS+=" -X helm.sh/helm/v3/internal/version.metadata= -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
  LDFLAGS+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$k8s_minor"
done
key=$(
  cd "$MOD"
  {
    cat go.mod go.sum rulecheck/*.go
    printf '%s\n' "${PACKAGES[@]}" "$LDFLAGS"
    go version
  } | sha256sum | cut -c1-16
) || die "could not compute the cache key in $MOD"
top=$CACHE/ops-$key
bin=$top/bin

complete() {
  local name
  for name in "${NAMES[@]}"; do
    [ -x "$bin/$name" ] || return 1
  done
}

if ! complete; then
  mkdir -p "$CACHE"
  tmp=$(mktemp -d "$top.tmp.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  start=$(date +%s)
  echo "ops-tools.sh: building ${NAMES[*]} into $top (first build: several minutes)" >&2
  if ! (cd "$MOD" && CGO_ENABLED=0 go build -mod=readonly -trimpath -ldflags "$LDFLAGS" -o "$tmp/bin/" "${PACKAGES[@]}") >&2; then
    die "go build in $MOD failed (see the messages above)"
  fi
  # Atomic publish: another build that finished first wins; ours is discarded.
  if ! mv -T "$tmp" "$top" 2>/dev/null; then
    complete || die "could not move the build into $top"
  fi
  trap - EXIT
  rm -rf "$tmp"
  echo "ops-tools.sh: built in $(($(date +%s) - start)) s" >&2
fi
for name in "${NAMES[@]}"; do
  echo "$name=$bin/$name"
done
