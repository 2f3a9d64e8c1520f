#!/bin/sh
# generate.sh: the `generate` command of the mansign Argo CD Config Management Plugin
# (deploy/argocd-cmp/plugin.yaml, docs/gitops.md).
#
# Argo CD's repo-server runs it in the Application's source directory. It verifies every
# manifest there (recursively) with `mansign verify --policy` and prints exactly the
# verified documents on stdout, for Argo CD to apply. If any document fails, stdout stays
# empty, mansign's reason (naming the file and document) goes to stderr, which Argo CD shows
# on the Application, and the exit status is non-zero, which fails manifest generation and
# therefore the sync.
#
# Operator settings (the sidecar's own environment; Application authors cannot change them):
#   MANSIGN_POLICY        policy file (default /home/argocd/mansign/policy/policy.yaml)
#   MANSIGN_TRUSTED_ROOT  Sigstore trusted_root.json for keyless entries (optional)
#   MANSIGN               the mansign binary (default: mansign on PATH)
# Application setting (spec.source.plugin.env; Argo CD passes it prefixed ARGOCD_ENV_):
#   MANSIGN_EXCLUDE       comma-separated globs of files in the source directory that are
#                         not manifests (README.md, docs/**). Excluded files are neither
#                         verified nor printed, so they are never applied.
set -eu

policy=${MANSIGN_POLICY:-/home/argocd/mansign/policy/policy.yaml}
mansign=${MANSIGN:-mansign}

set -- verify --policy "$policy" --print-verified --exclude .git -f .
if [ -n "${MANSIGN_TRUSTED_ROOT:-}" ]; then
  set -- "$@" --trusted-root "$MANSIGN_TRUSTED_ROOT"
fi
if [ -n "${ARGOCD_ENV_MANSIGN_EXCLUDE:-}" ]; then
  # Split at commas only, and never expand the globs here: mansign matches them.
  set -f
  old_ifs=$IFS
  IFS=,
  for glob in $ARGOCD_ENV_MANSIGN_EXCLUDE; do
    set -- "$@" --exclude "$glob"
  done
  IFS=$old_ifs
  set +f
fi

echo "mansign: verifying application ${ARGOCD_APP_NAME:-?} (${ARGOCD_APP_SOURCE_REPO_URL:-?} ${ARGOCD_APP_SOURCE_PATH:-?} at ${ARGOCD_APP_REVISION:-?})" >&2
exec "$mansign" "$@"
