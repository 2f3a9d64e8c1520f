#!/usr/bin/env bash
# Runs every check mansign has: formatting, lints, unit, integration and doc tests
# (integration tests talk to a loopback Sigstore stack that they start themselves).
# Works on a fresh machine: installs what it needs first.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step's wall time is printed when the next one starts, and every step's at the end
# (also when a step fails), so a slow CI run says where its time went (docs/design.md, "Tests").
step_name="" step_started=0 run_started=$(date +%s)
steps=()
finish_step() {
  [ -n "$step_name" ] || return 0
  local took=$(($(date +%s) - step_started))
  steps+=("$(printf '%5d s  %s' "$took" "$step_name")")
  printf '(%s: %d s)\n' "$step_name" "$took" >&2
  step_name=""
}
log() {
  finish_step
  step_name=$*
  step_started=$(date +%s)
  printf '\n==> %s\n' "$*" >&2
}
summary() {
  local rc=$?
  # a background job left (the fuzz targets' build, a shared-environment module) ends with the run
  # shellcheck disable=SC2046 # one PID a word
  [ -z "$(jobs -rp)" ] || kill $(jobs -rp) 2>/dev/null || true
  finish_step
  printf '\n==> step times (%s after %d s)\n' "$([ "$rc" = 0 ] && echo passed || echo "failed, exit $rc")" "$(($(date +%s) - run_started))" >&2
  printf '%s\n' "${steps[@]}" >&2
}
trap summary EXIT

log "toolchain components (rustfmt, clippy)"
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
  command -v rustup >/dev/null 2>&1 || { echo "rustfmt or clippy is missing and there is no rustup to add them" >&2; exit 1; }
  rustup component add rustfmt clippy
fi
cargo fmt --version && cargo clippy --version

log "started in the background: the Go-built test tools (peers, test cluster, helm, Kyverno)"
# The peers (kubectl-sigstore, Kyverno CLI, kubectl's YAML reader), the test cluster
# (kube-apiserver, kubectl, etcd), helm + the rule checker and Kyverno's admission controller,
# built from tests/peers, tests/cluster, tests/ops and tests/kyverno (pinned Go modules) into a
# cache keyed by go.sum under ${MANSIGN_TOOLS_CACHE:-$HOME/.cache/mansign-tools}: the first
# build on a fresh machine takes long (docs/compatibility.md, docs/admission.md), later runs
# find it warm. They build in the background while the steps below install the rest and build
# mansign's tests (which do not need them); the first step that runs tests waits for them. A
# missing Go toolchain or a failed build stops the run there: the tests that need them never
# skip. kyverno.sh after peers.sh: it compiles mostly the Kyverno CLI's packages, found in
# Go's build cache then (docs/compatibility.md has both builds' costs).
mkdir -p target
go_tools_log=target/go-tools.log
build_go_tools() {
  local tools started
  for tools in "peers.sh" "cluster.sh build" "ops-tools.sh" "kyverno.sh build"; do
    started=$(date +%s)
    # shellcheck disable=SC2086 # the second word is the sub-command
    bash scripts/$tools >/dev/null || { echo "scripts/$tools failed" >&2; return 1; }
    echo "scripts/$tools: ready in $(($(date +%s) - started)) s" >&2
  done
}
build_go_tools >"$go_tools_log" 2>&1 &
go_tools=$!
go_tools_ready() { # waits for the Go builds; their log on failure
  if ! wait "$go_tools"; then
    cat "$go_tools_log" >&2
    echo "test.sh: building the Go test tools failed (log above, and in $go_tools_log)" >&2
    exit 1
  fi
  grep 'ready in' "$go_tools_log" >&2
}

log "loopback Sigstore stack dependencies (npm + sigstore-python venv)"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq nodejs npm
fi
bash scripts/sigstore-stack/install.sh

log "tools the action and example tests run (jq, git, curl, strip) and the linters (actionlint, shellcheck)"
missing=()
for tool in jq git curl strip; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ "${#missing[@]}" -gt 0 ]; then
  pkgs=()
  for tool in "${missing[@]}"; do
    case $tool in strip) pkgs+=(binutils) ;; *) pkgs+=("$tool") ;; esac
  done
  apt-get update -qq && apt-get install -y -qq "${pkgs[@]}"
fi
bash scripts/install-lint-tools.sh

log "cargo-nextest (the test runner: groups and per-test timeouts in .config/nextest.toml)"
# Installed from crates.io when missing, built for a short build (scripts/cargo-tool.sh; once
# a machine: ~/.cargo/bin keeps it).
bash scripts/cargo-tool.sh nextest 0.9.151
cargo nextest --version | head -1

log "cargo fmt --check"
cargo fmt --all -- --check

# The integration-test modules whose tests share one expensive environment per process (a
# real API server with mansign's webhook registered, Kyverno's admission controller beside
# it, a stack's signed fixtures) run in one process each, outside nextest: nextest starts a
# process per test, which would build that environment once per test (apiserver_admission:
# 408 s under nextest, 141 s in one process; docs/design.md, "Tests"). Everything else runs
# under nextest, with its groups and timeouts. The longest first.
in_process=(kyverno_in_the_loop apiserver_failures apiserver_admission apiserver_defaults cluster_access apiserver_keys admission_review)
in_process_filter="test(/^($(IFS='|'; echo "${in_process[*]}"))::/)"

log "build the tests (every unit and integration test binary)"
cargo nextest run --locked --profile ci --lib --bins --tests --no-run
it_binary=$(cargo test --locked --test it --no-run --message-format=json 2>/dev/null |
  python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "it" and m.get("executable"):
        print(m["executable"])')
[ -x "$it_binary" ] || { echo "test.sh: the integration-test binary was not found" >&2; exit 1; }

log "module layering (imports point down, no cycles, sigstore crates only in adapters)"
cargo nextest run --locked --profile ci --test it -E 'test(/^layering::/)'

# The fuzz targets build from now on at the lowest priority (scripts/fuzz.sh --build-only), on
# the CPU the steps below leave idle; the fuzz smoke at the end waits for them.
printf '\n==> started in the background: the fuzz targets'"'"' build\n' >&2
nice -n 19 bash scripts/fuzz.sh --build-only >/dev/null 2>&1 &
fuzz_build=$!

# The steps that only compile and read (no test tool needed). On a warm machine they run
# beside the shared-environment modules, which leave CPU idle while they wait on their
# servers; on a cold one, where the Go builds are still running when the tests are built,
# they run beside those builds instead, and the shared modules start when the builds end.
compile_only_steps() {
  log "cargo clippy --all-targets -- -D warnings"
  nice -n 5 cargo clippy --locked --all-targets -- -D warnings

  log "cargo doc (broken intra-doc links are errors)"
  RUSTDOCFLAGS="-D warnings" nice -n 5 cargo doc --locked --no-deps --quiet

  log "the library without the command line (default-features = false): check and doc examples"
  # kube-core's k8s-openapi needs a Kubernetes version, which only an application picks
  # (Cargo.toml): here the binary's, so that k8s-openapi and kube-core are the units clippy
  # checked above (K8S_OPENAPI_ENABLED_VERSION would rerun their build script and check them
  # again). A check, not a build: the doc examples below build the library without the CLI.
  nice -n 5 cargo check --locked --lib --no-default-features --features k8s-openapi/earliest
  nice -n 5 cargo test --locked --doc --no-default-features

  log "public API against its snapshot (tests/golden/public-api.txt)"
  bash scripts/public-api.sh

  log "cargo package (crate contents and size)"
  bash scripts/check-package.sh

  log "benches once in test mode, and doc tests"
  nice -n 5 cargo test --locked --benches
  nice -n 5 cargo test --locked --doc
}
compiled=0
if kill -0 "$go_tools" 2>/dev/null; then
  compile_only_steps
  compiled=1
fi
log "the Go-built test tools: the rest of their build (started at the beginning)"
go_tools_ready

# The shared-environment modules wait on their servers far more than they compute (the seven
# in one process: 560 s of wall time for 240 s of CPU), so they start now, in the background,
# one process each, at most $shared_jobs at a time, and every other step below runs while they
# wait; the steps that only compile run at a lower priority than the servers.
shared_jobs=${MANSIGN_SHARED_JOBS:-4}
shared_logs=target/shared-env
rm -rf "$shared_logs" && mkdir -p "$shared_logs"
run_module() { # run_module MODULE: its output in $shared_logs/MODULE.log, status in .status
  local m=$1 rc=0 started args=("$1::")
  # Kyverno's module: most of its tests share the cluster and only wait on Kyverno (its
  # background scans, an expiry), the four that stop a server take it alone (Env::exclusive),
  # so more threads than CPUs end it sooner: 340 s with 6, 432 s with 2 (2026-12-04).
  [ "$m" != kyverno_in_the_loop ] || args+=(--test-threads 6)
  started=$(date +%s)
  "$it_binary" "${args[@]}" >"$shared_logs/$m.log" 2>&1 || rc=$?
  echo "$rc" >"$shared_logs/$m.status"
  printf '  [shared environment] %4d s  %s: %s\n' "$(($(date +%s) - started))" "$m" \
    "$(grep '^test result' "$shared_logs/$m.log" || echo "exit $rc, no result")" >&2
}
run_shared() { # every module of in_process, at most $shared_jobs at a time
  # shellcheck disable=SC2046 # one PID a word
  trap 'kill $(jobs -rp) 2>/dev/null; exit 143' TERM
  for m in "${in_process[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$shared_jobs" ]; do
      sleep 1
    done
    run_module "$m" &
  done
  wait
}
shared_started=$(date +%s)
printf '\n==> started in the background: the shared-environment modules (%s)\n' "${in_process[*]}" >&2
run_shared &
shared_driver=$!

log "unit and integration tests under nextest (one process a test; actionlint and shellcheck in tests/it/ci_lint.rs)"
cargo nextest run --locked --profile ci --lib --bins --tests -E "not $in_process_filter"
# The slowest tests of that run, from nextest's JUnit report (.config/nextest.toml).
python3 - target/nextest/ci/junit.xml <<'PY' || true
import sys, xml.etree.ElementTree as ET
cases = [(float(c.get("time", 0)), c.get("name", "")) for c in ET.parse(sys.argv[1]).iter("testcase")]
print(f"slowest of {len(cases)} tests ({sum(t for t, _ in cases):.0f} s in all):", file=sys.stderr)
for t, name in sorted(cases, reverse=True)[:15]:
    print(f"  {t:7.1f} s  {name}", file=sys.stderr)
PY

[ "$compiled" = 1 ] || compile_only_steps

log "the shared-environment modules: the rest of their run"
wait "$shared_driver" || true
echo "the shared-environment modules took $(($(date +%s) - shared_started)) s in all" >&2
shared_failed=()
for m in "${in_process[@]}"; do
  if [ "$(cat "$shared_logs/$m.status" 2>/dev/null)" != 0 ]; then
    shared_failed+=("$m")
    cat "$shared_logs/$m.log" >&2
  fi
done
if [ "${#shared_failed[@]}" -gt 0 ]; then
  echo "test.sh: shared-environment modules failed: ${shared_failed[*]} (logs above, and in $shared_logs/)" >&2
  exit 1
fi

wait "$fuzz_build" || true # a failed build is reported by the smoke below, which builds again
log "fuzz smoke: 30 s per target, one per CPU at a time (scripts/fuzz.sh; nightly, or stable with RUSTC_BOOTSTRAP=1)"
bash scripts/fuzz.sh 30
