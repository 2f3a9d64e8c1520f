#!/usr/bin/env bash
# public-api.sh [--update] -- the library's public API against its committed snapshot.
#
# Builds the rustdoc JSON of the `mansign` library (default features) with the pinned stable
# toolchain (RUSTC_BOOTSTRAP=1, for rustdoc only, unlocks its JSON output, which is
# unstable), renders it as sorted text with scripts/public-api.py, and compares it with
# tests/golden/public-api.txt.
# A difference fails with the diff: every change to the public API is a deliberate change of
# the snapshot (`scripts/public-api.sh --update`, reviewed with the code that made it).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SNAPSHOT="$ROOT/tests/golden/public-api.txt"
cd "$ROOT"
# RUSTC_BOOTSTRAP reaches rustdoc alone, through a wrapper named by RUSTDOC: set for the
# whole cargo run it would also reach the dependencies' build scripts, several of which
# rerun on it (proc-macro2, anyhow, ...), and the whole tree would be checked again instead
# of reusing what `cargo clippy` and `cargo doc` checked.
rustdoc_bin=$(rustc --print sysroot)/bin/rustdoc
wrapper=$(mktemp)
rendered=$(mktemp)
trap 'rm -f "$wrapper" "$rendered"' EXIT
printf '#!/bin/sh\nRUSTC_BOOTSTRAP=1 exec %q "$@"\n' "$rustdoc_bin" >"$wrapper"
chmod +x "$wrapper"
RUSTDOC=$wrapper cargo rustdoc --locked --lib --quiet -- -Z unstable-options --output-format json
json=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/doc/mansign.json
python3 "$ROOT/scripts/public-api.py" "$json" >"$rendered"
if [ "${1:-}" = "--update" ]; then
  mv "$rendered" "$SNAPSHOT"
  rm -f "$wrapper"
  trap - EXIT
  echo "public-api.sh: wrote $SNAPSHOT ($(wc -l <"$SNAPSHOT") items)"
  exit 0
fi
if ! diff -u "$SNAPSHOT" "$rendered"; then
  echo "public-api.sh: the public API differs from tests/golden/public-api.txt (above)." >&2
  echo "If the change is intended, run scripts/public-api.sh --update and commit the snapshot." >&2
  exit 1
fi
echo "public-api.sh: the public API matches tests/golden/public-api.txt ($(wc -l <"$SNAPSHOT") items)"
