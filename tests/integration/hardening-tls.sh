#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The TLS policy block of hardening.sh alone (client certificate purpose, ciphers, curves,
# versions): a few seconds, for scripts/mutations.txt, whose test commands hold no spaces.
set -euo pipefail
HARDENING_ONLY=tls_policy exec "$(dirname "$0")/hardening.sh"
