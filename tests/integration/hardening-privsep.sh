#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The privilege separation block of hardening.sh alone (the HTTP process's capabilities, uid
# and filter, its restart, SIGTERM): a few seconds, for scripts/mutations.txt, whose test
# commands hold no spaces.
set -euo pipefail
HARDENING_ONLY=privsep exec "$(dirname "$0")/hardening.sh"
