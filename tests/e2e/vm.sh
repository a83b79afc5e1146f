# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Boots and drives the e2e guest. Sourced (after lib.sh), not run.
#
# vm_boot RUN_DIR     build/reuse the image and kernel, build the seed, start QEMU in the background
# vm_wait_ready       wait for ssh, cloud-init's end, Prometheus and its scrape of the exporter
# vm_ssh CMD...       run a shell command in the guest as root
# vm_stop             stop QEMU (callers trap EXIT to call it)
#
# Environment: E2E_IMAGE (a root disk; default: build-image.sh), E2E_KERNEL (a bzImage; default: kernel/scripts/build.sh release), E2E_INITRD (only for a
#   kernel that needs one), E2E_MEM_MB (3072, split over two NUMA nodes), E2E_SSH_PORT (10022),
#   E2E_EXPORTER_PORT (19451), E2E_PROM_PORT (19090), E2E_TIMEOUT (QEMU's lifetime cap in seconds, 1800).
#   E2E_SSH_WAIT (how long to wait for ssh, 300 s; a loaded host needs more).

E2E_SSH_PORT=${E2E_SSH_PORT:-10022}
E2E_EXPORTER_PORT=${E2E_EXPORTER_PORT:-19451}
E2E_PROM_PORT=${E2E_PROM_PORT:-19090}
VM_PID=

port_busy() { ss -Htln "sport = :$1" | grep -q .; }

vm_kernel() {
	if [ -n "${E2E_KERNEL:-}" ]; then
		echo "$E2E_KERNEL"
		return
	fi
	[ -x "$TOP/kernel/scripts/build.sh" ] || die "no kernel/scripts/build.sh yet (or set E2E_KERNEL)"
	log "kernel: kernel/scripts/build.sh release"
	"$TOP/kernel/scripts/build.sh" release | tail -n 1
}

vm_boot() {
	VM_RUN=$1
	local image kernel mem
	image=${E2E_IMAGE:-$("$E2E_DIR/build-image.sh" | tail -n 1)}
	kernel=$(vm_kernel)
	[ -f "$kernel" ] || die "no kernel image at '$kernel'"
	"$E2E_DIR/build-seed.sh" "$VM_RUN"

	for port in "$E2E_SSH_PORT" "$E2E_EXPORTER_PORT" "$E2E_PROM_PORT"; do
		port_busy "$port" && die "port 127.0.0.1:$port is in use (set E2E_SSH_PORT, E2E_EXPORTER_PORT, E2E_PROM_PORT)"
	done
	rm -f "$VM_RUN/root.qcow2" "$VM_RUN/scratch.img" "$VM_RUN/swap.img"
	qemu-img create -q -f qcow2 -F raw -b "$image" "$VM_RUN/root.qcow2"
	truncate -s 2G "$VM_RUN/scratch.img"
	mkfs.ext4 -q -L cse-scratch "$VM_RUN/scratch.img"
	truncate -s 1G "$VM_RUN/swap.img"
	mkswap -L cse-swap "$VM_RUN/swap.img" >/dev/null 2>&1

	mem=${E2E_MEM_MB:-3072}
	local args=(
		-name cachestat-e2e -accel tcg -machine q35 -display none -monitor none -no-reboot
		-smp "2,sockets=2,cores=1,threads=1" -m "${mem}M"
		-kernel "$kernel" -append "root=/dev/vda rw console=ttyS0 panic=-1 numa=fake=2 ${E2E_APPEND:-}"
		-drive "file=$VM_RUN/root.qcow2,if=virtio,format=qcow2"
		-drive "file=$VM_RUN/seed.iso,if=virtio,format=raw,readonly=on"
		-drive "file=$VM_RUN/bundle.iso,if=virtio,format=raw,readonly=on"
		-drive "file=$VM_RUN/scratch.img,if=virtio,format=raw"
		-drive "file=$VM_RUN/swap.img,if=virtio,format=raw"
		-nic "user,model=virtio-net-pci,restrict=on,hostfwd=tcp:127.0.0.1:$E2E_SSH_PORT-:22,hostfwd=tcp:127.0.0.1:$E2E_EXPORTER_PORT-:9451,hostfwd=tcp:127.0.0.1:$E2E_PROM_PORT-:9090"
		-serial "file:$VM_RUN/console.log"
	)
	[ -n "${E2E_INITRD:-}" ] && args+=(-initrd "$E2E_INITRD")
	log "qemu: booting $kernel (console: $VM_RUN/console.log)"
	VM_STARTED=$SECONDS
	timeout -s KILL "${E2E_TIMEOUT:-1800}" qemu-system-x86_64 "${args[@]}" >"$VM_RUN/qemu.log" 2>&1 &
	VM_PID=$!
}

vm_stop() {
	if [ -n "$VM_PID" ] && kill -0 "$VM_PID" 2>/dev/null; then
		log "qemu: stopping"
		kill "$VM_PID" 2>/dev/null || true
		wait "$VM_PID" 2>/dev/null || true
	fi
	VM_PID=
}

vm_alive() { [ -n "$VM_PID" ] && kill -0 "$VM_PID" 2>/dev/null; }

vm_ssh() {
	ssh -q -i "$VM_RUN/id_ed25519" -p "$E2E_SSH_PORT" -o BatchMode=yes -o StrictHostKeyChecking=no \
		-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectTimeout=10 \
		root@127.0.0.1 "$@"
}

# wait_for SECONDS DESCRIPTION CMD...: retries CMD every 2 s; fails when QEMU died or time ran out.
wait_for() {
	local limit=$1 what=$2 deadline=$((SECONDS + $1))
	shift 2
	until "$@" >/dev/null 2>&1; do
		vm_alive || { tail -n 20 "$VM_RUN/console.log" >&2; die "qemu exited while waiting for $what"; }
		[ "$SECONDS" -lt "$deadline" ] || die "no $what after ${limit} s"
		sleep 2
	done
	log "ready: $what at $((SECONDS - VM_STARTED)) s after QEMU started"
}

prom_ready() { curl -sf "http://127.0.0.1:$E2E_PROM_PORT/-/ready"; }
# prom_api PATH [curl --data-urlencode args...]: GET from the guest's Prometheus HTTP API, JSON on stdout.
prom_api() {
	local path=$1
	shift
	curl -sf --get "http://127.0.0.1:$E2E_PROM_PORT/api/v1/$path" "$@"
}
# prom_value EXPR: the first sample's value of an instant query, or nothing.
prom_value() {
	prom_api query --data-urlencode "query=$1" | jq -r '.data.result[0].value[1] // empty'
}
exporter_scraped() {
	[ "$(prom_value 'up{job=~".*cachestat.*"}')" = 1 ]
}

# vm_wait_booted: ssh answers and cloud-init has finished without an error (the guest benchmarks stop there).
vm_wait_booted() {
	wait_for "${E2E_SSH_WAIT:-300}" ssh vm_ssh true
	if ! vm_ssh cloud-init status --wait >"$VM_RUN/cloud-init-status" 2>&1; then
		vm_ssh cloud-init status --long >&2 || true
		die "cloud-init reported an error (see /var/log/cloud-init-output.log in the guest)"
	fi
	log "ready: cloud-init done at $((SECONDS - VM_STARTED)) s"
}
vm_wait_ready() {
	vm_wait_booted
	wait_for 120 "Prometheus" prom_ready
	wait_for 120 "a successful scrape of the exporter" exporter_scraped
}
