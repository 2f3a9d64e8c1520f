#!/usr/bin/env bash
# Renders plugins/mansign.yaml (the krew manifest template) for a release.
#
#   scripts/krew-manifest.sh VERSION DIST [OUT]
#
# DIST holds the release binaries mansign-<target> (as the release workflow builds them).
# For each target of the template, writes DIST/kubectl-mansign-<target>.tar.gz (one file,
# kubectl-mansign: krew installs archives only, and the plugin is found by that name), then
# writes the manifest with VERSION and each archive's SHA-256 to OUT (default
# DIST/mansign.yaml). A missing binary is an error: a manifest must not name an archive
# that does not exist.
set -euo pipefail

if [ "$#" -lt 2 ]; then
  echo "usage: $0 VERSION DIST [OUT]" >&2
  exit 2
fi
version=$1
dist=$2
out=${3:-$dist/mansign.yaml}
here=$(cd "$(dirname "$0")/.." && pwd)
template="$here/plugins/mansign.yaml"

case "$version" in
  v[0-9]*) ;;
  *) echo "VERSION must look like v1.2.3, got: $version" >&2; exit 2 ;;
esac

manifest=$(sed "s/@VERSION@/$version/g" "$template")
targets=$(grep -o '@SHA256:[a-z0-9_-]*@' "$template" | sed 's/@SHA256:\(.*\)@/\1/')
for target in $targets; do
  bin="$dist/mansign-$target"
  if [ ! -f "$bin" ]; then
    echo "$bin: missing (needed for kubectl-mansign-$target.tar.gz)" >&2
    exit 1
  fi
  stage=$(mktemp -d)
  cp "$bin" "$stage/kubectl-mansign"
  chmod 755 "$stage/kubectl-mansign"
  archive="$dist/kubectl-mansign-$target.tar.gz"
  # Reproducible: fixed owner, mode and time.
  tar -C "$stage" --owner=0 --group=0 --numeric-owner --mtime=@0 -cf - kubectl-mansign \
    | gzip -n > "$archive"
  rm -rf "$stage"
  sum=$(sha256sum "$archive" | cut -d' ' -f1)
  manifest=${manifest//"@SHA256:$target@"/$sum}
done
if printf '%s\n' "$manifest" | grep -q '@'; then
  echo "$template: a placeholder was left unrendered" >&2
  exit 1
fi
printf '%s\n' "$manifest" > "$out"
