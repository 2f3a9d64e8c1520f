#!/usr/bin/env bash
# release-checksums.sh DIR: writes DIR/SHA256SUMS for every release asset in DIR (regular
# files; SHA256SUMS itself and Sigstore bundles *.sigstore.json excluded), sorted by name,
# in `sha256sum` format ("<64 hex>  <name>"), which `sha256sum --check` and the action's
# install step (scripts/action-install.sh) read.
set -euo pipefail
dir=${1:?usage: release-checksums.sh DIR}
cd "$dir"
sum() {
  if command -v sha256sum >/dev/null 2>&1; then sha256sum "$1"; else shasum -a 256 "$1"; fi
}
tmp=$(mktemp SHA256SUMS.XXXXXX)
trap 'rm -f "$tmp"' EXIT
count=0
while IFS= read -r name; do
  case $name in SHA256SUMS | SHA256SUMS.* | *.sigstore.json) continue ;; esac
  case $name in *[[:space:]]* | *\\*) echo "release-checksums.sh: refusing asset name with spaces or backslashes: '$name'" >&2; exit 2 ;; esac
  sum "$name" | awk '{ print $1 "  " $2 }' >>"$tmp"
  count=$((count + 1))
done < <(find . -maxdepth 1 -type f -print | sed 's|^\./||' | LC_ALL=C sort)
[ "$count" -gt 0 ] || { echo "release-checksums.sh: no assets in $dir" >&2; exit 2; }
mv -f "$tmp" SHA256SUMS
trap - EXIT
echo "SHA256SUMS: $count asset(s)"
