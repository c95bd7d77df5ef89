#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# dpverbs on real PCI devices: a QEMU guest (Debian's qemu-system-x86) whose kernel is
# Debian's (linux-image-amd64, from /boot and /lib/modules), on a q35 machine with an
# emulated Intel IOMMU and two emulated NICs that the drop-in carries PMDs for, a
# virtio-net-pci at 0000:00:04.0 and an e1000e (Intel 82574L, net_e1000's em family) at
# 0000:00:05.0, joined to each other by a QEMU hub. The guest's root is this host's
# file system, read-only over virtio-9p, so the build under test runs as it is; a
# second share, the job directory, takes the results; the source tree and the build
# are shares of their own at their own paths. Usage:
#
#   vm.sh SOURCE_ROOT BUILD_ROOT
#
# The guest (init.sh, then guest.sh in the host's root) reserves hugepages, binds both
# NICs to vfio-pci and runs the unmodified ibverbs-utils between two processes, one on
# each NIC (test/dropin/dropin.sh's pci link), and test_verbs' RC, SRQ and tag-matching
# groups with both NICs in one process; then NIC A goes back to its kernel driver and
# carries the kernel's Soft-RoCE (rdma_rxe), and rdmacm-utils' programs and
# ibv_rc_pingpong run between it, on Debian's own libraries, and dpverbs on NIC B
# (rxe.sh). This script prints each case's result and log, and a
# cmocka-style tally of the cases ("[  PASSED  ] N test(s)."), which
# devtools/test-summary.py counts.
#
# Environment:
#   DPV_VM_ACCEL    tcg (default), kvm, or auto: kvm when a guest boots on it within
#                   20 s (a short boot that only powers off), tcg otherwise. TCG is slow
#                   but always there; KVM needs /dev/kvm and a host that runs it.
#   DPV_VM_TIMEOUT  seconds the whole guest may run (default 420); it is ended then.
#   DPV_VM_KEEP     a directory: the job directory (console.log, results, each case's
#                   log) is copied there.
#   DPV_VM_CASES    the guest's cases to run, space-separated (default: all of them;
#                   guest.sh lists them).
#   DPV_VM_DEVBIND  1: the guest binds NIC B with dpdk-devbind.py (Debian package dpdk)
#                   instead of sysfs.
#   DPV_VM_CAPTURE  1: the rxe cases' dpverbs side writes what its device saw to
#                   <case>.pcapng in the job directory (DPV_CAPTURE; DPV_VM_KEEP keeps it).
#
# Exit 77 (skipped), saying why, when QEMU, the kernel, busybox-static or the build's
# drop-in is missing, or when QEMU does not start; 1 when the guest did not finish or
# any case failed; 0 otherwise. Only the QEMU started here is ended, by pid; the
# temporary directory goes on every exit.
# QEMU's options are comma-separated lists, not shell arrays gone wrong:
# shellcheck disable=SC2054
set -u

if [ $# -ne 2 ]; then
	echo "usage: $0 SOURCE_ROOT BUILD_ROOT" >&2
	exit 2
fi
src=$(cd "$1" && pwd) build=$(cd "$2" && pwd)
# meson puts the build's library directories, the drop-in's among them, in
# LD_LIBRARY_PATH: QEMU (linked against rdma-core for RDMA migration) must not load it.
unset LD_LIBRARY_PATH
accel=${DPV_VM_ACCEL:-tcg}
vm_timeout=${DPV_VM_TIMEOUT:-420}

skip() {
	echo "skipped: $*"
	exit 77
}

qemu=$(command -v qemu-system-x86_64) ||
	skip "no qemu-system-x86_64 (Debian package qemu-system-x86)"
busybox=
for b in /usr/bin/busybox /bin/busybox; do
	# The dynamic busybox of Debian's package busybox would find no libc in the initramfs.
	if [ -x "$b" ] && ! ldd "$b" >/dev/null 2>&1; then
		busybox=$b
		break
	fi
done
[ -n "$busybox" ] || skip "no static busybox (Debian package busybox-static)"
command -v modprobe >/dev/null || skip "no modprobe (Debian package kmod)"

# The newest Debian kernel whose modules are here, with what the guest loads.
kver=
for k in $(ls -v /boot/vmlinuz-* 2>/dev/null | sort -rV); do
	v=${k#/boot/vmlinuz-}
	if [ -r "$k" ] && modprobe -S "$v" --show-depends 9pnet_virtio >/dev/null 2>&1 &&
		modprobe -S "$v" --show-depends vfio-pci >/dev/null 2>&1; then
		kver=$v
		break
	fi
done
[ -n "$kver" ] || skip "no kernel in /boot with its modules (9p, vfio-pci) in /lib/modules" \
	"(Debian package linux-image-amd64)"
kernel=/boot/vmlinuz-$kver

libdir=$build/lib/verbs
[ -e "$libdir/libibverbs.so.1" ] || skip "no drop-in $libdir/libibverbs.so.1 in this build"
test_verbs=$build/test/verbs/test_verbs
command -v ibv_rc_pingpong >/dev/null || skip "no ibv_rc_pingpong (Debian package ibverbs-utils)"

# What the rxe cases (rxe.sh) need, checked here, where a program starts fast: the
# guest's root is this one.
rxe_skip=
for p in rdma:iproute2 rping:rdmacm-utils udaddy:rdmacm-utils ucmatose:rdmacm-utils; do
	command -v "${p%:*}" >/dev/null || { rxe_skip="no ${p%:*} (Debian package ${p#*:})"; break; }
done
if [ -z "$rxe_skip" ] && ! compgen -G '/usr/lib/*/libibverbs/librxe-rdmav*.so' >/dev/null; then
	rxe_skip="no librxe (Debian package ibverbs-providers)"
elif [ -z "$rxe_skip" ] && ! modprobe -S "$kver" --show-depends rdma_rxe >/dev/null 2>&1; then
	rxe_skip="no rdma_rxe module for Linux $kver"
elif [ -z "$rxe_skip" ] && [ ! -e "$build/lib/rdmacm/librdmacm.so.1" ]; then
	rxe_skip="no drop-in $build/lib/rdmacm/librdmacm.so.1 in this build"
fi

tmp=$(mktemp -d /tmp/dpv-vm.XXXXXX) || exit 1
qemu_pid=
cleanup() {
	if [ -n "$qemu_pid" ]; then
		kill "$qemu_pid" 2>/dev/null && wait "$qemu_pid" 2>/dev/null
	fi
	if [ -n "${DPV_VM_KEEP:-}" ]; then
		mkdir -p "$DPV_VM_KEEP" && cp -r "$tmp/job/." "$DPV_VM_KEEP/" 2>/dev/null
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# ---- the initramfs: busybox, the modules that reach the 9p shares, init.sh ----
ird=$tmp/initramfs
mkdir -p "$ird/bin" "$ird/modules" "$ird/proc" "$ird/sys" "$ird/dev" "$ird/newroot"
cp "$busybox" "$ird/bin/busybox"
for a in $("$busybox" --list); do
	[ "$a" = busybox ] || ln -s busybox "$ird/bin/$a"
done
cp "$src/test/vm/init.sh" "$ird/init"
chmod 755 "$ird/init"
# modprobe's insmod lines, dependencies first, each module once (virtio_pci carries the
# 9p devices; vfio-pci and the rest come from the host's /lib/modules once the root is
# mounted).
for m in virtio_pci 9pnet_virtio 9p; do
	modprobe -S "$kver" --show-depends "$m" || exit 1
done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }' >"$tmp/modules"
: >"$ird/modules/order"
while read -r m; do
	cp "$m" "$ird/modules/" || exit 1
	basename "$m" >>"$ird/modules/order"
done <"$tmp/modules"
(cd "$ird" && find . | "$busybox" cpio -o -H newc 2>/dev/null) >"$tmp/initrd" || exit 1

# ---- the job: what guest.sh runs, and where its results go ----
job=$tmp/job
mkdir -p "$job"
mac_a=52:54:00:dd:04:00 mac_b=52:54:00:dd:05:00
cat >"$job/job.env" <<EOF
DPV_VM_GUEST=$src/test/vm/guest.sh
DPV_VM_SRC=$src
DPV_VM_BUILD=$build
DPV_DROPIN_LIBDIR=$libdir
DPV_VM_RDMACM_LIBDIR=$build/lib/rdmacm
DPV_VM_CAPTURE=${DPV_VM_CAPTURE:-0}
DPV_VM_RXE_SKIP='$rxe_skip'
DPV_VM_TEST_VERBS=$test_verbs
DPV_VM_PCI_A=0000:00:04.0
DPV_VM_PCI_B=0000:00:05.0
DPV_VM_MAC_A=$mac_a
DPV_VM_MAC_B=$mac_b
DPV_VM_CASES='${DPV_VM_CASES:-}'
DPV_VM_DEVBIND=${DPV_VM_DEVBIND:-0}
export DPV_VM_GUEST DPV_VM_SRC DPV_VM_BUILD DPV_DROPIN_LIBDIR DPV_VM_TEST_VERBS
export DPV_VM_RDMACM_LIBDIR DPV_VM_CAPTURE DPV_VM_RXE_SKIP
export DPV_VM_PCI_A DPV_VM_PCI_B DPV_VM_MAC_A DPV_VM_MAC_B DPV_VM_CASES DPV_VM_DEVBIND
EOF

# The tree under test and its build, each a share of its own mounted at its own path:
# the guest covers /tmp and /run with tmpfs, which would hide a tree there (a clone in
# /tmp, as CI makes), and a share reaches a tree on any host file system.
trees=("$src")
case "$build/" in "$src"/*) ;; *) trees+=("$build") ;; esac
: >"$job/mounts"
tree_args=()
for i in "${!trees[@]}"; do
	echo "tree$i ${trees[$i]}" >>"$job/mounts"
	tree_args+=(-fsdev "local,id=tree$i,path=${trees[$i]},security_model=none,readonly=on,multidevs=remap"
		-device "virtio-9p-pci,fsdev=tree$i,mount_tag=tree$i,addr=0$((6 + i)).0")
done

# ---- the machine ----
qemu_args() { # accel
	local m=q35,accel=$1
	# With KVM, interrupt remapping needs the split irqchip; TCG has no KVM irqchip.
	[ "$1" = kvm ] && m=$m,kernel-irqchip=split
	machine=(-machine "$m" -cpu max)
	[ "$1" = kvm ] && machine=(-machine "$m" -cpu host)
	args=("${machine[@]}" -smp 2 -m 2048 -nodefaults -no-user-config -display none
		-no-reboot -serial "file:$job/console.log" -monitor none
		# The IOMMU first: QEMU puts the devices after it behind it. aw-bits=48 lets
		# EAL use virtual addresses as IOVAs (a 39-bit IOMMU cannot map them).
		-device intel-iommu,intremap=on,aw-bits=48
		-kernel "$kernel" -initrd "$tmp/initrd"
		-append "console=ttyS0 intel_iommu=on no_timer_check init_on_alloc=0 panic=-1 loglevel=4 rdinit=/init"
		-fsdev "local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap"
		-device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot,addr=02.0
		-fsdev "local,id=job,path=$job,security_model=none,multidevs=remap"
		-device virtio-9p-pci,fsdev=job,mount_tag=job,addr=03.0
		"${tree_args[@]}"
		# The two NICs on one hub: what one sends, the other receives.
		-netdev hubport,id=nic_a,hubid=0 -netdev hubport,id=nic_b,hubid=0
		# A modern virtio-net whose DMA goes through the IOMMU, as EAL programs it.
		-device "virtio-net-pci,netdev=nic_a,addr=04.0,disable-legacy=on,iommu_platform=on,mac=$mac_a"
		-device "e1000e,netdev=nic_b,addr=05.0,mac=$mac_b")
}

run_qemu() { # accel seconds
	qemu_args "$1"
	"$qemu" "${args[@]}" >"$tmp/qemu.out" 2>&1 &
	qemu_pid=$!
	local i end=$(($(date +%s) + $2))
	while kill -0 "$qemu_pid" 2>/dev/null; do
		if [ "$(date +%s)" -ge "$end" ]; then
			kill "$qemu_pid" 2>/dev/null
			wait "$qemu_pid" 2>/dev/null
			qemu_pid=
			return 124
		fi
		sleep 0.5
	done
	wait "$qemu_pid"
	i=$?
	qemu_pid=
	return $i
}

if [ "$accel" = auto ]; then
	accel=tcg
	if [ -w /dev/kvm ]; then
		# A boot that only powers off (init.sh does so without job.env's script).
		mv "$job/job.env" "$tmp/job.env"
		echo 'DPV_VM_GUEST=/dev/null; export DPV_VM_GUEST' >"$job/job.env"
		start=$(date +%s)
		if run_qemu kvm 20 && grep -Eq 'dpv-vm: \[[0-9.]+\] job exited' "$job/console.log"; then
			accel=kvm
		fi
		echo "KVM probe: $( [ $accel = kvm ] && echo boots || echo 'does not boot') ($(($(date +%s) - start)) s)"
		mv "$tmp/job.env" "$job/job.env"
		rm -f "$job/console.log"
	fi
fi
case $accel in
tcg | kvm) ;;
*) echo "DPV_VM_ACCEL=$accel: want tcg, kvm or auto" >&2; exit 2 ;;
esac

echo "guest: Linux $kver ($kernel), QEMU $("$qemu" --version | awk 'NR == 1 {print $4}'), $accel"
start=$(date +%s)
run_qemu "$accel" "$vm_timeout"
qrc=$?
secs=$(($(date +%s) - start))
if [ ! -s "$job/console.log" ] || ! grep -Eq 'dpv-vm: \[[0-9.]+\] init' "$job/console.log"; then
	# QEMU stopped before the guest's init ran: this host cannot run it.
	[ $qrc = 124 ] || skip "QEMU could not run the guest (status $qrc): $(head -c 600 "$tmp/qemu.out")" \
		"; its console: $(tail -n 5 "$job/console.log" 2>/dev/null)"
fi
echo "guest ran ${secs} s (QEMU status $qrc)"

failed=0
if [ $qrc = 124 ]; then
	echo "FAIL: the guest did not finish within DPV_VM_TIMEOUT=$vm_timeout s: ended it"
	failed=1
fi
if ! grep -Eq '^dpv-vm: \[[0-9.]+\] guest done' "$job/console.log"; then
	echo "FAIL: the guest's job did not finish; its console:"
	tail -n 60 "$job/console.log"
	failed=1
fi

# results: "<ok|FAIL|skip> <case> <seconds>", one a line, and <case>.log each.
pass=0 fail=0 nskip=0 rc_fail=0
if [ -s "$job/results" ]; then
	while read -r res name s; do
		# A cmocka program's log has its own tally, which test-summary.py counts.
		if grep -Eq '^\[  (PASSED|FAILED)  \]' "$job/$name.log" 2>/dev/null; then
			res=cmocka:$res
		fi
		case $res in
		cmocka:*) ;;
		ok) pass=$((pass + 1)) ;;
		skip) nskip=$((nskip + 1)) ;;
		*) fail=$((fail + 1)) ;;
		esac
		echo "==== ${res#cmocka:}: $name ($s s)"
		[ "${res#cmocka:}" = ok ] || [ "${res#cmocka:}" = skip ] || rc_fail=1
		cat "$job/$name.log" 2>/dev/null
	done <"$job/results"
else
	echo "FAIL: the guest wrote no results"
	failed=1
fi
echo "==== the guest's setup (guest.sh)"
cat "$job/setup.log" 2>/dev/null
echo "==== ibverbs-utils and set-up cases in the guest: $pass passed, $fail failed, $nskip skipped"
echo "[  PASSED  ] $pass test(s)."
if [ $fail -gt 0 ] || [ $failed = 1 ]; then
	echo "[  FAILED  ] $((fail + failed)) test(s)"
	exit 1
fi
# A cmocka case that failed has said so in its own tally.
[ $rc_fail = 0 ] || exit 1
exit 0
