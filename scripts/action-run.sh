#!/usr/bin/env bash
# The `run` step of action.yml: input `command` picks the step script. Both read the action's
# inputs from INPUT_* variables (set by action.yml's `env:`, never interpolated into code).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/action-lib.sh
. "$here/action-lib.sh"

case ${INPUT_COMMAND:-sign} in
  sign) exec bash "$here/action-sign.sh" ;;
  verify) exec bash "$here/action-verify.sh" ;;
  *) die 2 "input command must be sign or verify, not '${INPUT_COMMAND}'" ;;
esac
