#!/usr/bin/env bash
# Installs a cargo subcommand the tests use (cargo-nextest, cargo-fuzz) at a pinned version,
# when `cargo NAME --version` does not report that version already:
#
#   scripts/cargo-tool.sh NAME VERSION        e.g. scripts/cargo-tool.sh nextest 0.9.151
#
# A test tool is built once per machine (~/.cargo/bin keeps it) and run for seconds, so it is
# built for a short build, not for its own speed: opt-level 1, no LTO, 16 codegen units, no
# debug info. cargo-nextest 0.9.151 so took 371 s of CPU against 515 s with its own release
# profile (opt-level 3) on the 2-core machine (docs/design.md, "Where CI's time goes"); what
# a test runner does (start processes, read their output) is not its own CPU's work.
set -euo pipefail
[ "$#" -eq 2 ] || { echo "usage: scripts/cargo-tool.sh NAME VERSION" >&2; exit 2; }
name=$1 version=$2
if cargo "$name" --version 2>/dev/null | grep -q "^cargo-$name $version\b"; then
  exit 0
fi
echo "cargo-tool.sh: installing cargo-$name $version (built once, a few CPU-minutes)" >&2
CARGO_PROFILE_RELEASE_OPT_LEVEL=1 \
  CARGO_PROFILE_RELEASE_LTO=off \
  CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
  CARGO_PROFILE_RELEASE_DEBUG=0 \
  CARGO_PROFILE_RELEASE_STRIP=debuginfo \
  cargo install --locked --quiet "cargo-$name@$version"
cargo "$name" --version 2>/dev/null | grep -q "^cargo-$name $version\b" ||
  { echo "cargo-tool.sh: cargo $name --version does not report $version after the install" >&2; exit 1; }
