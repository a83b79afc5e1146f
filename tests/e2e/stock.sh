#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The e2e suite on a stock Debian kernel (build-stock-kernel.sh): the guest image with that kernel's package
# installed, booted with the package's vmlinuz and initramfs. E2E_STOCK=bookworm (6.1, no cachestat: the exporter
# measures with mincore) or mainline (bookworm-backports, 6.5 or later: cachestat's mainline form).
# By default a short subset, the one make test runs: the method and a held file against fincore (1), a podman
# container's file (8), the package's service (11), its hardened unit on this kernel (15), and on mainline the
# activity collector's counts against the file sizes (17: there its functions come from tracefs, not kallsyms,
# and a write marks no page accessed). E2E_CASES=all runs every case; the rest of run.sh's environment applies
# (E2E_OCI unset is none here, set and empty builds the OCI archive of case 12).
# On these kernels run.sh skips, each counted with its reason: where the exporter measures with mincore, the dirty
# and evicted parts of cases 2 and 3 (it checks instead that those series are absent), case 3's refaults per node
# and case 6's dashboard queries of those families; on both, case 7, the kernel suite of the patched kernel.
# Usage: E2E_STOCK=bookworm|mainline stock.sh
set -euo pipefail
source "$(dirname "$0")/lib.sh"

flavour=${E2E_STOCK:?set E2E_STOCK=bookworm or E2E_STOCK=mainline}
case $flavour in
bookworm) abi=mincore ;;
mainline) abi=mainline ;;
*) die "unknown E2E_STOCK '$flavour' (bookworm or mainline)" ;;
esac
# Host ports of its own per flavour (vm.sh's plus 300 or 400), apart from run.sh's: make test runs these guests beside
# the e2e guest.
declare -A port_offset=([bookworm]=300 [mainline]=400)
export E2E_SSH_PORT=${E2E_SSH_PORT:-$((10022 + port_offset[$flavour]))}
export E2E_EXPORTER_PORT=${E2E_EXPORTER_PORT:-$((19451 + port_offset[$flavour]))}
export E2E_PROM_PORT=${E2E_PROM_PORT:-$((19090 + port_offset[$flavour]))}
# Nor the .deb of $BUILD_ROOT/deb, which e2e's OCI image step rebuilds meanwhile (build-deb.sh starts afresh).
export E2E_SHARED_DEB=no
# E2E_EXPORTER=tree: this tree's exporter (make -C exporter) and deploy/systemd's unit instead of the package: how
# scripts/mutations.txt's entries for this suite bring a mutation of exporter/ or deploy/ into the guest.
if [ "${E2E_EXPORTER:-}" = tree ]; then
	make -s -C "$TOP/exporter" cachestat_exporter >&2 || die "make -C exporter failed"
	export E2E_EXPORTER=$TOP/exporter/cachestat_exporter
fi
dir=$("$E2E_DIR/build-stock-kernel.sh" "$flavour" | tail -n 1) || die "build-stock-kernel.sh $flavour failed"
log "stock kernel $flavour: linux-image-amd64 $(cat "$dir/version"), $(cat "$dir/release")"

declare -A default_cases=([bookworm]="1 8 11 15" [mainline]="1 8 11 15 17")
cases=${E2E_CASES:-${default_cases[$flavour]}}
[ "$cases" = all ] && cases=
# More than the subset: QEMU's lifetime cap (vm.sh's 1800 s) killed the guest in case 5 of 15 on a busy host (ready
# after 644 s, two to eight minutes a case), and in the ninth of ten cases.
[ -z "${E2E_CASES:-}" ] || export E2E_TIMEOUT=${E2E_TIMEOUT:-3600}
# numa=fake needs CONFIG_NUMA_EMU; without it the guest has one node and case 3 (refaults per node) fails.
grep -q '^CONFIG_NUMA_EMU=y' "$dir/config" || log "stock kernel $flavour: no CONFIG_NUMA_EMU: one NUMA node"

# audit=1: the kernel logs a seccomp filter's kills (case 15 looks for the exporter's); Debian's starts with audit off.
# no_timer_check: Debian's kernels check at boot that the IO-APIC timer ticks within a few jiffies, which a TCG guest
# on a busy host misses ("IO-APIC + timer doesn't work!", a panic at 0.03 s); a VM's command line turns it off.
E2E_APPEND="audit=1 no_timer_check ${E2E_APPEND:-}" E2E_IMAGE=$dir/root.img E2E_KERNEL=$dir/vmlinuz E2E_INITRD=$dir/initrd.img E2E_ABI=$abi \
	E2E_RUN_NAME=run-stock-$flavour E2E_OCI=${E2E_OCI-none} E2E_CASES=$cases exec "$E2E_DIR/run.sh"
