#!/usr/bin/env bash
# The `install` step of action.yml: provides the mansign binary the next step runs, and puts
# its directory on the job's PATH for later steps. In order:
#
#   1. input `mansign` (a local binary: tests, air-gapped runners): used as is;
#   2. the runner tool cache ($RUNNER_TOOL_CACHE/mansign/<version>/<arch>), when an earlier
#      job on this runner installed that release and the binary still has the digest that
#      was checked then;
#   3. the release asset for the runner's OS/architecture, downloaded from
#      $MANSIGN_RELEASE_BASE_URL/<version>/ (default: this repository's GitHub releases) and
#      used only if its SHA-256 equals the one the release's SHA256SUMS lists; a mismatch
#      fails the step and installs nothing;
#   4. `cargo install --locked` of the action's own source ($GITHUB_ACTION_PATH, i.e. the
#      action's ref), only when there is no release for the ref or no asset for the platform.
#
# <version> is input `version`, else the action's own ref (ACTION_REF, from
# ${{ github.action_ref }}): `uses: mansign/mansign@v1.2.3` installs release v1.2.3.
# MANSIGN_RELEASE_BASE_URL is for mirrors and tests; it must be https (plain http only on
# loopback), since SHA256SUMS comes from the same place as the asset.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/action-lib.sh
. "$here/action-lib.sh"

DEFAULT_BASE_URL=https://github.com/mansign/mansign/releases/download

# asset_name OS ARCH: the release asset for a runner ($RUNNER_OS, $RUNNER_ARCH), or nothing.
# The names are the Rust targets .github/workflows/release.yml builds.
asset_name() {
  case "$1/$2" in
    Linux/X64) echo mansign-x86_64-unknown-linux-musl ;;
    Linux/ARM64) echo mansign-aarch64-unknown-linux-musl ;;
    macOS/X64) echo mansign-x86_64-apple-darwin ;;
    macOS/ARM64) echo mansign-aarch64-apple-darwin ;;
    *) ;;
  esac
}

sha256_of() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d' ' -f1
  else
    shasum -a 256 "$1" | cut -d' ' -f1
  fi
}

# use_binary PATH SOURCE: smoke-tests the binary, then publishes it.
use_binary() {
  local bin=$1 source=$2 version
  version=$("$bin" version 2>/dev/null | head -n1) || die 1 "$bin does not run ('mansign version' failed)"
  case $version in
    "mansign "*) ;;
    *) die 1 "$bin is not mansign ('mansign version' printed '$version')" ;;
  esac
  set_output bin "$bin"
  # `mansign 0.1.0 (commit ..., built ..., target)`: the version is the second word
  version=${version#mansign }
  version=${version%% *}
  set_output version "$version"
  set_output source "$source"
  if [ -n "${GITHUB_PATH:-}" ]; then
    dirname "$bin" >>"$GITHUB_PATH"
  fi
  echo "mansign $version from $source: $bin"
}

build_from_source() {
  local why=$1 root
  : "${GITHUB_ACTION_PATH:?GITHUB_ACTION_PATH is not set}"
  if [ -n "${INPUT_VERSION:-}" ] && [ "$INPUT_VERSION" != "${ACTION_REF:-}" ]; then
    die 1 "$why; mansign $INPUT_VERSION cannot be built here: the action's source is ref '${ACTION_REF:-}' (use a released version, or omit input version)"
  fi
  echo "::notice::$(escape_data "$why"): building mansign from the action's source with cargo install --locked (several minutes)"
  command -v cargo >/dev/null 2>&1 || die 1 "$why, and cargo is not installed to build mansign from source"
  root="$RUNNER_TEMP/mansign-cargo"
  cargo install --locked --quiet --path "$GITHUB_ACTION_PATH" --root "$root"
  use_binary "$root/bin/mansign" cargo
}

# fetch URL FILE: the HTTP status (curl follows redirects; retries transient failures).
fetch() {
  local proto=(--proto '=https' --proto-redir '=https')
  case $1 in http://127.0.0.1[:/]* | http://localhost[:/]* | http://\[::1\][:/]*) proto=() ;; esac
  curl -sSL --retry 3 --connect-timeout 20 --max-time 300 ${proto[@]+"${proto[@]}"} \
    -o "$2" -w '%{http_code}' "$1" || echo "curl-failed"
}

if [ -n "${INPUT_MANSIGN:-}" ]; then
  [ -f "$INPUT_MANSIGN" ] && [ -x "$INPUT_MANSIGN" ] || die 2 "input mansign: $INPUT_MANSIGN is not an executable file"
  bin=$(cd "$(dirname "$INPUT_MANSIGN")" && pwd)/$(basename "$INPUT_MANSIGN")
  use_binary "$bin" input
  exit 0
fi

: "${RUNNER_TEMP:?RUNNER_TEMP is not set}"
version=${INPUT_VERSION:-${ACTION_REF:-}}
asset=$(asset_name "${RUNNER_OS:-}" "${RUNNER_ARCH:-}")
if [ -z "$version" ]; then
  build_from_source "the action's ref is unknown (used from a local path?) and input version is empty"
  exit 0
fi
if ! [[ $version =~ ^[A-Za-z0-9][A-Za-z0-9._+-]*$ ]]; then
  die 2 "version '$version' is not a release tag"
fi
if [ -z "$asset" ]; then
  build_from_source "mansign releases have no binary for ${RUNNER_OS:-?}/${RUNNER_ARCH:-?}"
  exit 0
fi

base=${MANSIGN_RELEASE_BASE_URL:-$DEFAULT_BASE_URL}
base=${base%/}
case $base in
  https://* | http://127.0.0.1[:/]* | http://127.0.0.1 | http://localhost[:/]* | http://localhost | http://\[::1\]*) ;;
  *) die 2 "MANSIGN_RELEASE_BASE_URL must be an https URL (plain http only on loopback), not '$base'" ;;
esac

arch=$(printf '%s' "${RUNNER_ARCH:-}" | tr '[:upper:]' '[:lower:]')
tool_dir="${RUNNER_TOOL_CACHE:-$RUNNER_TEMP/tool-cache}/mansign/${version#v}/$arch"

# 2. The tool cache: reused only if the binary still has the digest checked at install.
if [ -f "$tool_dir.complete" ] && [ -x "$tool_dir/mansign" ] && [ -f "$tool_dir/mansign.sha256" ]; then
  if [ "$(sha256_of "$tool_dir/mansign")" = "$(cat "$tool_dir/mansign.sha256")" ]; then
    use_binary "$tool_dir/mansign" cache
    exit 0
  fi
  echo "::warning::the cached mansign $version in $tool_dir no longer has the digest it was installed with; downloading it again"
  rm -rf "$tool_dir" "$tool_dir.complete"
fi

# 3. The release asset, checked against SHA256SUMS before anything is installed.
work=$(mktemp -d "$RUNNER_TEMP/mansign-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
url="$base/$version"
status=$(fetch "$url/SHA256SUMS" "$work/SHA256SUMS")
case $status in
  200) ;;
  404)
    build_from_source "release $version has no SHA256SUMS ($url/SHA256SUMS: 404)"
    exit 0
    ;;
  *) die 1 "cannot download $url/SHA256SUMS (HTTP $status)" ;;
esac

# SHA256SUMS lines: "<64 hex>  <name>" (or "<64 hex> *<name>", binary mode).
expected=$(awk -v name="$asset" '$2 == name || $2 == "*" name { print $1 }' "$work/SHA256SUMS")
case $(printf '%s' "$expected" | grep -c '^' || true) in
  0)
    build_from_source "release $version has no $asset (not listed in its SHA256SUMS)"
    exit 0
    ;;
  1) ;;
  *) die 1 "$url/SHA256SUMS lists $asset more than once" ;;
esac
expected=$(printf '%s' "$expected" | tr '[:upper:]' '[:lower:]')
[[ $expected =~ ^[0-9a-f]{64}$ ]] || die 1 "$url/SHA256SUMS: '$expected' is not a SHA-256 digest for $asset"

status=$(fetch "$url/$asset" "$work/$asset")
[ "$status" = 200 ] || die 1 "cannot download $url/$asset (HTTP $status), although SHA256SUMS lists it"
actual=$(sha256_of "$work/$asset")
if [ "$actual" != "$expected" ]; then
  rm -f "$work/$asset"
  die 1 "checksum mismatch for $asset of mansign $version: SHA256SUMS says $expected, the download is $actual; nothing was installed"
fi
echo "$asset: sha256 $actual matches SHA256SUMS of release $version"

mkdir -p "$tool_dir"
chmod 0755 "$work/$asset"
mv -f "$work/$asset" "$tool_dir/mansign"
printf '%s\n' "$actual" >"$tool_dir/mansign.sha256"
touch "$tool_dir.complete"
use_binary "$tool_dir/mansign" release
