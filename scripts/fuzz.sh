#!/usr/bin/env bash
# Fuzzes mansign's input parsers with cargo-fuzz (libFuzzer, nightly toolchain): annotation
# decoding, message parsing (YAML and tar.gz), both policy loaders, the admission handler
# and the Sigstore bundle path. Each target's corpus (fuzz/corpus/, not committed) is seeded
# from testdata/ and fuzz/seeds/ first. A crash stops with exit 1, its input under
# fuzz/artifacts/TARGET/; turn it into a regression test (tests/it/no_panic_on_hostile_input.rs).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     (default: 60 s each, every target)
#   scripts/fuzz.sh --build-only               (build the targets, run none: scripts/test.sh
#                                               builds them beside the shared-environment tests)
#
# libFuzzer needs unstable compiler flags: with a nightly toolchain (`cargo +nightly`) they are
# used as they are; without one, the stable toolchain is told to accept them
# (RUSTC_BOOTSTRAP=1), so the fuzz smoke runs on every machine and is never skipped. Installs
# cargo-fuzz if it is missing. Prints one line per
# target: seconds, executions, result. FUZZ_SANITIZER (default `none`): mansign and its Rust
# dependencies are memory-safe code, so what the fuzzer hunts is panics, hangs and memory
# blow-ups, and without a sanitizer it runs about twice as many inputs; `address` also
# instruments the C code (aws-lc) that certificates and keys reach.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_ONLY=0
if [ "${1:-}" = --build-only ]; then
  BUILD_ONLY=1
  shift
fi
SECONDS_PER_TARGET=${1:-60}
shift || true
ALL=(annotations message policy_mansign policy_kyverno admission_review sigstore_bundle)
TARGETS=("$@")
[ "${#TARGETS[@]}" -gt 0 ] || TARGETS=("${ALL[@]}")

if cargo +nightly --version >/dev/null 2>&1; then
  CARGO=(cargo +nightly)
  echo "fuzz.sh: toolchain $(cargo +nightly --version)" >&2
else
  CARGO=(env RUSTC_BOOTSTRAP=1 cargo)
  echo "fuzz.sh: no nightly toolchain; $(cargo --version) with RUSTC_BOOTSTRAP=1" >&2
fi
bash scripts/cargo-tool.sh fuzz 0.13.2

seed() { # seed TARGET FILE...
  local dir="fuzz/corpus/$1"
  shift
  mkdir -p "$dir"
  local f
  for f in "$@"; do
    [ -f "$f" ] && cp "$f" "$dir/seed-$(sha256sum "$f" | cut -c1-16)"
  done
  return 0
}
mapfile -t signed < <(grep -rl --include='*.yaml' 'cosign.sigstore.dev/' testdata | sort)
mapfile -t manifests < <(find testdata/unsigned testdata/k8s-manifest-sigstore -name '*.yaml' | sort | sed -n 1,200p)
mapfile -t kyverno < <(grep -rlE --include='*.yaml' 'kind: (Cluster)?Policy$' testdata/kyverno examples/policy | sort)
mapfile -t bundles < <(find testdata/sigstore-conformance -name 'bundle.sigstore.json' | sort)
seed annotations "${signed[@]}"
seed message "${manifests[@]}" testdata/fuzz-regressions/message-*
# the decoded messages of the signed fixtures (YAML, or legacy gzip'd tarballs)
msgdir=$(mktemp -d)
trap 'rm -rf "$msgdir"' EXIT
i=0
for f in "${signed[@]}"; do
  while read -r b64; do
    i=$((i + 1))
    printf '%s' "$b64" | base64 -d >"$msgdir/m$i" 2>/dev/null || rm -f "$msgdir/m$i"
  done < <(grep -h 'cosign.sigstore.dev/message:' "$f" | sed 's/.*message: *//; s/"//g')
done
seed message "$msgdir"/*
seed policy_mansign examples/policy/mansign-policy.yaml
seed policy_kyverno "${kyverno[@]}"
seed admission_review fuzz/seeds/admission_review/*.json
# AdmissionReview requests around the signed fixtures (needs PyYAML; the committed seeds
# above suffice without it)
if python3 -c 'import yaml' 2>/dev/null; then
  python3 - "$msgdir" "${signed[@]}" <<'PY' && seed admission_review "$msgdir"/review-*
import json, sys, yaml
out = sys.argv[1]
for n, path in enumerate(sys.argv[2:]):
    try:
        docs = [d for d in yaml.safe_load_all(open(path)) if isinstance(d, dict)]
    except Exception:
        continue
    for k, d in enumerate(docs[:3]):
        meta = d.get("metadata") or {}
        review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                  "request": {"uid": f"seed-{n}-{k}", "operation": "CREATE",
                              "kind": {"group": "", "version": "v1", "kind": str(d.get("kind"))},
                              "name": meta.get("name"), "namespace": meta.get("namespace"),
                              "object": d}}
        open(f"{out}/review-{n}-{k}", "w").write(json.dumps(review, default=str))
PY
fi
seed sigstore_bundle "${bundles[@]}"

# One build of every target first (a single cargo run compiles the tree once, in parallel),
# then the targets run FUZZ_JOBS at a time (default: one per CPU; each fuzzer is a single
# process), each for SECONDS_PER_TARGET.
sanitizer=${FUZZ_SANITIZER:-none}
mkdir -p fuzz/artifacts
if ! nice "${CARGO[@]}" fuzz build --sanitizer "$sanitizer" >fuzz/artifacts/build.log 2>&1; then
  tail -40 fuzz/artifacts/build.log >&2
  echo "fuzz.sh: the fuzz targets do not build (fuzz/artifacts/build.log)" >&2
  exit 1
fi
if [ "$BUILD_ONLY" = 1 ]; then
  echo "fuzz.sh: the targets are built (fuzz/artifacts/build.log)" >&2
  exit 0
fi
jobs_max=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
run_target() { # run_target TARGET: exit status in fuzz/artifacts/TARGET.status
  local t=$1 rc=0
  nice "${CARGO[@]}" fuzz run --sanitizer "$sanitizer" "$t" "fuzz/corpus/$t" -- \
    -max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 >"fuzz/artifacts/$t.log" 2>&1 || rc=$?
  echo "$rc" >"fuzz/artifacts/$t.status"
}
for t in "${TARGETS[@]}"; do
  rm -f "fuzz/artifacts/$t.status"
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do
    wait -n || true
  done
  run_target "$t" &
done
wait

status=0
printf '| target | seconds | executions | result |\n|---|---:|---:|---|\n'
for t in "${TARGETS[@]}"; do
  log="fuzz/artifacts/$t.log"
  if [ "$(cat "fuzz/artifacts/$t.status" 2>/dev/null)" = 0 ]; then
    result=ok
  else
    result="FAILED (see $log, fuzz/artifacts/$t/)"
    status=1
  fi
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || echo '?')
  printf '| %s | %s | %s | %s |\n' "$t" "$SECONDS_PER_TARGET" "${execs:-?}" "$result"
done
exit $status
