#!/usr/bin/env bash
# check-package.sh: `cargo package` builds the crate without test data, scripts or CI files,
# small, with no path dependencies. On a clean checkout (CI) it runs exactly as a publish
# would; on a working tree with uncommitted changes it adds --allow-dirty.
set -euo pipefail
cd "$(dirname "$0")/.."

MAX_CRATE_BYTES=$((2 * 1024 * 1024))
dirty=()
if [ -n "$(git status --porcelain 2>/dev/null)" ]; then
  dirty=(--allow-dirty)
fi

list=$(cargo package --locked --list ${dirty[@]+"${dirty[@]}"})
bad=$(printf '%s\n' "$list" | grep -E '^(testdata|tests|benches|fuzz|scripts|examples|\.github|\.ci|target)/|^action\.yml$|^BENCHMARKS\.md$' || true)
if [ -n "$bad" ]; then
  echo "check-package.sh: the crate would contain files that must stay in the repository:" >&2
  printf '%s\n' "$bad" >&2
  exit 1
fi
for required in Cargo.toml Cargo.lock README.md src/lib.rs src/main.rs; do
  printf '%s\n' "$list" | grep -qx "$required" || { echo "check-package.sh: $required is not in the crate" >&2; exit 1; }
done
if grep -nE '^\s*[a-zA-Z0-9_-]+\s*=\s*\{[^}]*\bpath\s*=' Cargo.toml; then
  echo "check-package.sh: path dependencies cannot be published" >&2
  exit 1
fi

cargo package --locked --no-verify --quiet ${dirty[@]+"${dirty[@]}"}
metadata=$(cargo metadata --no-deps --format-version 1 --locked)
version=$(printf '%s' "$metadata" | sed -n 's/.*"name":"mansign","version":"\([^"]*\)".*/\1/p' | head -n1)
# The crate is written below cargo's target directory (CARGO_TARGET_DIR may move it).
target_dir=$(printf '%s' "$metadata" | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p' | head -n1)
crate="${target_dir:-target}/package/mansign-$version.crate"
[ -f "$crate" ] || { echo "check-package.sh: $crate was not written" >&2; exit 1; }
size=$(wc -c <"$crate" | tr -d ' ')
if [ "$size" -gt "$MAX_CRATE_BYTES" ]; then
  echo "check-package.sh: $crate is $size bytes (limit $MAX_CRATE_BYTES)" >&2
  exit 1
fi
echo "cargo package: $crate, $(printf '%s\n' "$list" | wc -l | tr -d ' ') files, $size bytes${dirty:+ (--allow-dirty: uncommitted changes)}"
