#!/usr/bin/env bash
# release-sign.sh DIR: signs every release asset in DIR and DIR/SHA256SUMS keylessly with
# mansign itself (`mansign sign-bundle`), writing a Sigstore bundle <asset>.sigstore.json
# beside each, then verifies every bundle against the identity this workflow run must have.
# Run by .github/workflows/release.yml after scripts/release-checksums.sh; docs/releases.md
# shows how users verify the result.
#
# Environment:
#   MANSIGN                  the mansign binary (default: `mansign` on PATH)
#   SIGSTORE_ID_TOKEN        an OIDC token; else one is requested from GitHub Actions
#                            (ACTIONS_ID_TOKEN_REQUEST_URL/TOKEN, audience sigstore; the job
#                            needs `permissions: id-token: write`)
#   GITHUB_SERVER_URL, GITHUB_WORKFLOW_REF   the expected signer identity:
#                            $GITHUB_SERVER_URL/$GITHUB_WORKFLOW_REF, e.g.
#                            https://github.com/mansign/mansign/.github/workflows/release.yml@refs/tags/v0.2.0
#   RELEASE_OIDC_ISSUER      expected issuer (default https://token.actions.githubusercontent.com)
#   RELEASE_TRUSTED_ROOT, RELEASE_SIGNING_CONFIG
#                            a private Sigstore instance (tests: the loopback stack);
#                            default: Sigstore's public-good instance
set -euo pipefail
dir=${1:?usage: release-sign.sh DIR}
mansign=${MANSIGN:-mansign}
issuer=${RELEASE_OIDC_ISSUER:-https://token.actions.githubusercontent.com}
: "${GITHUB_SERVER_URL:?GITHUB_SERVER_URL is not set}"
: "${GITHUB_WORKFLOW_REF:?GITHUB_WORKFLOW_REF is not set}"
identity="$GITHUB_SERVER_URL/$GITHUB_WORKFLOW_REF"
cd "$dir"
[ -f SHA256SUMS ] || { echo "release-sign.sh: $dir/SHA256SUMS is missing (run release-checksums.sh first)" >&2; exit 2; }

# What is signed must be what SHA256SUMS lists.
if command -v sha256sum >/dev/null 2>&1; then sha256sum --check --quiet SHA256SUMS; else shasum -a 256 --check --quiet SHA256SUMS; fi

token=${SIGSTORE_ID_TOKEN:-}
if [ -z "$token" ]; then
  : "${ACTIONS_ID_TOKEN_REQUEST_URL:?no SIGSTORE_ID_TOKEN and no GitHub Actions token endpoint (permissions: id-token: write)}"
  : "${ACTIONS_ID_TOKEN_REQUEST_TOKEN:?ACTIONS_ID_TOKEN_REQUEST_TOKEN is not set}"
  token=$(curl -sSf --retry 3 -H "Authorization: Bearer $ACTIONS_ID_TOKEN_REQUEST_TOKEN" \
    "$ACTIONS_ID_TOKEN_REQUEST_URL&audience=sigstore" | jq -r '.value // empty')
  [ -n "$token" ] || { echo "release-sign.sh: the GitHub Actions token endpoint returned no token" >&2; exit 1; }
fi

sign_opts=()
verify_opts=()
if [ -n "${RELEASE_TRUSTED_ROOT:-}" ]; then
  sign_opts+=(--trusted-root "$RELEASE_TRUSTED_ROOT")
  verify_opts+=(--trusted-root "$RELEASE_TRUSTED_ROOT")
fi
if [ -n "${RELEASE_SIGNING_CONFIG:-}" ]; then sign_opts+=(--signing-config "$RELEASE_SIGNING_CONFIG"); fi

assets=()
while IFS= read -r line; do assets+=("${line#*  }"); done <SHA256SUMS
assets+=(SHA256SUMS)
for asset in "${assets[@]}"; do
  rm -f "$asset.sigstore.json"
  "$mansign" sign-bundle --identity-token "$token" --bundle "$asset.sigstore.json" \
    ${sign_opts[@]+"${sign_opts[@]}"} "$asset"
  "$mansign" verify-bundle --bundle "$asset.sigstore.json" \
    --certificate-identity "$identity" --certificate-oidc-issuer "$issuer" \
    ${verify_opts[@]+"${verify_opts[@]}"} "$asset"
  echo "signed $asset -> $asset.sigstore.json ($identity)"
done
