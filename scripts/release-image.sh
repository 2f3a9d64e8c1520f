#!/usr/bin/env bash
# release-image.sh TAG BINDIR OUT: builds and pushes the release's container image
# (ghcr.io/mansign/mansign:X.Y.Z for linux/amd64 and linux/arm64) from the static Linux
# binaries the build jobs made (BINDIR/mansign-<target>), with Dockerfile.release, and writes
# OUT: one line, the image reference pinned by digest,
#   ghcr.io/mansign/mansign:X.Y.Z@sha256:<64 hex>
# OUT is a release asset: listed in SHA256SUMS and signed by mansign like every other asset,
# so a user verifies the digest before pinning it (docs/releases.md, "The container image").
#
# Needs docker with buildx (GitHub's ubuntu runners have it) and a `docker login ghcr.io`.
# No RUN step in the image, so no emulation is needed to build the arm64 image.
set -euo pipefail
tag=${1:?usage: release-image.sh TAG BINDIR OUT}
bindir=${2:?usage: release-image.sh TAG BINDIR OUT}
out=${3:?usage: release-image.sh TAG BINDIR OUT}
# The repository the chart (charts/mansign/values.yaml) and deploy/base/kustomization.yaml
# name; tests/it/release.rs checks the three agree.
repository=ghcr.io/mansign/mansign
case $tag in
  v[0-9]*.[0-9]*.[0-9]*) version=${tag#v} ;;
  *) echo "release-image.sh: '$tag' is not a release tag vX.Y.Z" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
# Docker's platform architecture names for the musl targets the build jobs produce.
for pair in amd64:x86_64-unknown-linux-musl arm64:aarch64-unknown-linux-musl; do
  arch=${pair%%:*} target=${pair#*:}
  test -f "$bindir/mansign-$target" || { echo "release-image.sh: $bindir/mansign-$target is missing" >&2; exit 2; }
  install -D -m 0755 "$bindir/mansign-$target" "$context/bin/$arch/mansign"
done
docker buildx create --use --name mansign-release >/dev/null 2>&1 || docker buildx use mansign-release
docker buildx build \
  --platform linux/amd64,linux/arm64 \
  --file "$root/Dockerfile.release" \
  --label "org.opencontainers.image.version=$version" \
  --label "org.opencontainers.image.source=https://github.com/mansign/mansign" \
  --tag "$repository:$version" \
  --metadata-file "$context/metadata.json" \
  --push \
  "$context"
digest=$(jq -r '."containerimage.digest" // empty' "$context/metadata.json")
case $digest in
  sha256:????????????????????????????????????????????????????????????????) ;;
  *) echo "release-image.sh: buildx reported no image digest (got '$digest')" >&2; exit 1 ;;
esac
printf '%s:%s@%s\n' "$repository" "$version" "$digest" >"$out.tmp"
mv -f "$out.tmp" "$out"
echo "pushed $(cat "$out")"
