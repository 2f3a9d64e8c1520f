#!/usr/bin/env bash
# Instructions, not seconds: where a whole-process verification goes, counted by valgrind's
# callgrind, which gives the same count for the same binary and input whatever else the
# machine is doing (issue 40: the 2-core machine is rarely quiet enough for the wall-time
# ratios of scripts/bench.sh). One Markdown table for BENCHMARKS.md:
#
#   * `verify -f dir/` of N keyless files batch-signed on the loopback stack (one
#     certificate), per manifest: all instructions, those under the ECDSA checks
#     (aws-lc's ECDSA_do_verify, inclusive: the floor's work), and the rest;
#   * one keyless manifest, whole process, and `mansign --version` (the start).
#
# Under valgrind the CPU reports no SHA extensions, so the `sha2` crate runs its portable
# code, several times the instructions of its SHA-NI code natively: every block it hashes
# goes through `sha2::sha256::soft::compress`, counted apart (the last two columns). The
# rest is the code mansign runs natively.
#
#   scripts/bench-instructions.sh [N]      (default 1000; MANSIGN=path skips the release build)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000}
command -v valgrind >/dev/null || { echo "bench-instructions.sh: valgrind is missing (apt-get install valgrind)" >&2; exit 2; }
bash scripts/sigstore-stack/install.sh >/dev/null
# shellcheck source=scripts/bench-lib.sh
. scripts/bench-lib.sh
bench_mansign
bench_stack_start
bench_exceptions "$WORK/in" "$N"
"$MANSIGN" sign -f "$WORK/in/" -o "$WORK/batch/" --fulcio-url "$SIGSTORE_FULCIO_URL" \
  --rekor-url "$SIGSTORE_REKOR_URL" --identity-token "@$SIGSTORE_ID_TOKEN_FILE" \
  --trusted-root "$SIGSTORE_TRUSTED_ROOT" 2>/dev/null
identity=(--trusted-root "$SIGSTORE_TRUSTED_ROOT" --certificate-identity "$SIGSTORE_IDENTITY"
          --certificate-oidc-issuer "$SIGSTORE_OIDC_ISSUER")
# A failed verification is not a count.
"$MANSIGN" verify -f "$WORK/batch/" "${identity[@]}" >/dev/null
first=$(find "$WORK/batch" -name '*.yaml' | sort | sed -n 1p)

# count NAME COMMAND...: runs it under callgrind into $WORK/NAME.out
count() {
  local name=$1
  shift
  valgrind --tool=callgrind --callgrind-out-file="$WORK/$name.out" "$@" >/dev/null 2>"$WORK/$name.err" ||
    { cat "$WORK/$name.err" >&2; echo "bench-instructions.sh: $name failed under valgrind" >&2; exit 1; }
}
count dir "$MANSIGN" verify -f "$WORK/batch/" "${identity[@]}"
count one "$MANSIGN" verify -f "$first" "${identity[@]}"
count version "$MANSIGN" --version

python3 - "$WORK" "$N" "$(git rev-parse --short HEAD)" <<'PY'
import re, subprocess, sys
work, n, commit = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def inclusive(name):
    """Total instructions and those under each function matched, from callgrind_annotate."""
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100",
                          f"{work}/{name}.out"], capture_output=True, text=True, check=True).stdout
    total = int(re.search(r"^([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS", out, re.M).group(1).replace(",", ""))
    def under(pattern):
        # the largest inclusive figure of a function whose name matches (its outermost call)
        best = 0
        for line in out.splitlines():
            m = re.match(r"^\s*([\d,]+) \(", line)
            if m and re.search(pattern, line):
                best = max(best, int(m.group(1).replace(",", "")))
        return best
    return total, under
d_total, d_under = inclusive("dir")
o_total, o_under = inclusive("one")
v_total, _ = inclusive("version")
ecdsa = lambda under: under(r":aws_lc_\w*_ECDSA_do_verify \[")
# every SHA-256 block of the sha2 crate goes through this leaf (its portable code here)
sha = lambda under: under(r":sha2::sha256::soft::compress \[")
d_ecdsa, d_sha = ecdsa(d_under), sha(d_under)
o_ecdsa = ecdsa(o_under)
per = lambda x: f"{x / n / 1000:,.1f} k"
print(f"Instructions (callgrind) at {commit}, {n:,} batch-signed keyless files:\n")
o_sha = sha(o_under)
print("| workload | all | ECDSA checks | the rest | rest ÷ ECDSA | of the rest: SHA-256 (sha2, portable under valgrind) | the rest without it ÷ ECDSA |")
print("|---|---:|---:|---:|---:|---:|---:|")
d_rest, o_rest = d_total - d_ecdsa, o_total - o_ecdsa
print(f"| `verify -f dir/`, per manifest | {per(d_total)} | {per(d_ecdsa)} | {per(d_rest)} | "
      f"{d_rest / d_ecdsa:.2f} | {per(d_sha)} | {(d_rest - d_sha) / d_ecdsa:.2f} |")
print(f"| one manifest, whole process | {o_total / 1e6:,.2f} M | {o_ecdsa / 1e6:,.2f} M | "
      f"{o_rest / 1e6:,.2f} M | {o_rest / o_ecdsa:.2f} | {o_sha / 1e6:,.2f} M | {(o_rest - o_sha) / o_ecdsa:.2f} |")
print(f"| `mansign --version` (the start) | {v_total / 1e6:,.2f} M | | | | | |")
PY
