#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The guest's job (vm.sh boots it; init.sh runs it as root in the host's file system,
# read-only, with /tmp, /run and /dev/shm empty). Usage: guest.sh JOB_DIR
#
# It sets the guest up as doc/guides/vfio.md's "Step by step" says, with the same
# commands: 2 MiB hugepages reserved and mounted, vfio-pci
# loaded, the IOMMU groups checked, NIC A (virtio-net, DPV_VM_PCI_A) and NIC B (e1000e,
# DPV_VM_PCI_B) bound through sysfs. Then its cases, each a
# line "<ok|FAIL|skip> <case> <seconds>" in JOB_DIR/results and its output in
# JOB_DIR/<case>.log:
#
#   devinfo ibv_devinfo -v, one process with both NICs: each port ACTIVE, its MTU, its
#           node GUID from the NIC's MAC, its GID from DPV_PORT_IPV4; and ibv_devices
#           with the two -a the other way round: dpv0 is still the lower address
#   doc_config  vfio.md's INI file (step 5), NIC A's address in it, through
#           DPV_CONFIG: one device, ACTIVE; its hugepage files left and then removed;
#           and configuration.md's error line for an -a that names no NIC bound to vfio-pci
#   rc, srq, ud (and, only when DPV_VM_CASES names them, rc_s65536 and rc_nohuge)
#           test/dropin/dropin.sh's pci link: the unmodified ibverbs-utils program, its
#           server on NIC A in one process (-a DPV_VM_PCI_A), its client on NIC B in
#           another (-a DPV_VM_PCI_B), on hugepages (rc_nohuge: --no-huge, which vfio
#           with an IOMMU allows), with dropin.sh's checks of what they print
#   verbs   test_verbs' RC (SEND, WRITE, READ of up to 1 MiB), SRQ and tag-matching groups,
#           dpv0 on NIC A and dpv1 on NIC B of one process, RoCEv2 between them through
#           both PMDs and QEMU's hub
#   rxe_*   rxe.sh's: NIC A back to its kernel driver with the kernel's Soft-RoCE on
#           it, against dpverbs on NIC B (rping, ibv_rc_pingpong, udaddy; ucmatose by name)
#
# DPV_VM_CASES (space-separated) runs only those cases. Iteration counts are small: a
# TCG guest runs some fifty times slower than the host.
set -u

job=${1:?usage: guest.sh JOB_DIR}
pci_a=${DPV_VM_PCI_A:?} pci_b=${DPV_VM_PCI_B:?}
src=${DPV_VM_SRC:?}
setup_log=$job/setup.log
: >"$job/results"
exec 3>>"$setup_log"

say() { echo "dpv-vm: [$(cut -d" " -f1 /proc/uptime)] $*"; echo "$*" >&3; }

result() { # res case seconds
	echo "$1 $2 $3" >>"$job/results"
	say "$1: $2 ($3 s)"
}

# A set-up step that must work for anything after it to mean something.
setup_failed() { # case message
	say "$2"
	result FAIL "$1" 0
	echo "$2" >"$job/$1.log"
	say "guest done"
	exit 0
}

say "guest: $(uname -r), $(nproc) CPUs, IOMMU groups: $(ls /sys/kernel/iommu_groups | wc -l)"
ip link set lo up

# ---- hugepages (configuration.md, Memory) ----
echo 384 >/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
mkdir -p /dev/hugepages
mountpoint -q /dev/hugepages || mount -t hugetlbfs nodev /dev/hugepages
free=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
say "hugepages: $free free of 2 MiB"
[ "$free" -ge 256 ] || setup_failed hugepages "only $free hugepages: want 256"
result ok hugepages 0

# ---- vfio-pci and the IOMMU (vfio.md, steps 2 and 3) ----
modprobe vfio-pci || setup_failed vfio "modprobe vfio-pci failed"
groups=$(ls /sys/kernel/iommu_groups)
[ -n "$groups" ] || setup_failed vfio "no IOMMU groups: the kernel found no IOMMU"
for p in "$pci_a" "$pci_b"; do
	[ -e "/sys/bus/pci/devices/$p" ] || setup_failed vfio "no PCI device $p"
	g=$(basename "$(readlink "/sys/bus/pci/devices/$p/iommu_group")")
	say "$p: $(cat "/sys/bus/pci/devices/$p/vendor"):$(cat "/sys/bus/pci/devices/$p/device")," \
		"IOMMU group $g: $(ls "/sys/bus/pci/devices/$p/iommu_group/devices" | tr '\n' ' ')"
done
result ok vfio 0

bound() { # pci
	[ "$(basename "$(readlink "/sys/bus/pci/devices/$1/driver")")" = vfio-pci ] &&
		[ -c "/dev/vfio/$(basename "$(readlink "/sys/bus/pci/devices/$1/iommu_group")")" ]
}

# Through sysfs, as vfio.md's step 3 does: NIC A's virtio-pci (the virtio
# transport, with no virtio_net on top) lets go of it; NIC B has no driver (the guest
# loads no e1000e).
bind_sysfs() { # pci
	echo "$1: driver $(basename "$(readlink "/sys/bus/pci/devices/$1/driver")" 2>/dev/null)"
	echo vfio-pci >"/sys/bus/pci/devices/$1/driver_override"
	[ -e "/sys/bus/pci/devices/$1/driver" ] && echo "$1" >"/sys/bus/pci/devices/$1/driver/unbind"
	echo "$1" >/sys/bus/pci/drivers_probe
	echo "now: $(basename "$(readlink "/sys/bus/pci/devices/$1/driver")"), /dev/vfio: $(ls /dev/vfio | tr '\n' ' ')"
}

# With DPV_VM_DEVBIND=1, NIC B with DPDK's script instead (Debian package dpdk): under
# TCG its Python takes some 40 s to start from the 9p root.
for nic in a b; do
	t0=$SECONDS
	p=$pci_a
	[ $nic = b ] && p=$pci_b
	if [ $nic = b ] && [ "${DPV_VM_DEVBIND:-0}" = 1 ] && [ -x /usr/bin/dpdk-devbind.py ]; then
		{
			/usr/bin/dpdk-devbind.py --bind=vfio-pci "$p"
			/usr/bin/dpdk-devbind.py --status-dev net
		} >"$job/bind_$nic.log" 2>&1
	else
		bind_sysfs "$p" >"$job/bind_$nic.log" 2>&1
	fi
	if bound "$p"; then result ok "bind_$nic" $((SECONDS - t0)); else
		setup_failed "bind_$nic" "NIC $nic $p is not bound to vfio-pci: $(cat "$job/bind_$nic.log")"
	fi
done

# ---- the cases ----
want() { [ -z "${DPV_VM_CASES:-}" ] || [[ " $DPV_VM_CASES " == *" $1 "* ]]; }

run_case() { # case seconds command...
	local name=$1 secs=$2 t0=$SECONDS rc
	shift 2
	want "$name" || return 0
	say "case $name: $*"
	if [ "$(type -t "$1")" = function ]; then
		"$@" >"$job/$name.log" 2>&1
	else
		timeout --kill-after=5 "$secs" "$@" >"$job/$name.log" 2>&1
	fi
	rc=$?
	case $rc in
	0) result ok "$name" $((SECONDS - t0)) ;;
	77) result skip "$name" $((SECONDS - t0)) ;;
	*) echo "(exit status $rc)" >>"$job/$name.log"; result FAIL "$name" $((SECONDS - t0)) ;;
	esac
}

# ibv_devinfo -v in one process holding both NICs: what the PMDs gave dpverbs, each port
# as vfio.md says it is, with the MAC QEMU gave the NIC (vm.sh's mac=) as its
# node GUID (EUI-64: the U/L bit flipped, ff:fe in the middle), and 1X SDR for the
# e1000e's 1 Gb/s and for the virtio NIC, whose PMD cannot tell its speed.
devinfo() {
	local out=$job/devinfo.out i pci ip mac guid m0 m1 m2 m3 m4 m5 re failed=0
	timeout --kill-after=5 120 env DPV_EAL_ARGS="-l 0 --in-memory -m 256 -a $pci_a -a $pci_b --no-telemetry" \
		DPV_PORT_IPV4=10.205.0.1,10.205.0.2 LD_LIBRARY_PATH=$DPV_DROPIN_LIBDIR \
		ibv_devinfo -v >"$out" 2>&1 || { echo "ibv_devinfo -v exited $?"; failed=1; }
	cat "$out"
	for i in 0 1; do
		if [ $i = 0 ]; then pci=$pci_a ip=10.205.0.1 mac=$DPV_VM_MAC_A; else
			pci=$pci_b ip=10.205.0.2 mac=$DPV_VM_MAC_B; fi
		IFS=: read -r m0 m1 m2 m3 m4 m5 <<<"$mac"
		guid=$(printf '%02x%s:%sff:fe%s:%s%s' $((0x$m0 ^ 2)) "$m1" "$m2" "$m3" "$m4" "$m5")
		# The device's block: from its hca_id to the next one.
		awk -v d="dpv$i" '/^hca_id:/ { on = ($2 == d) } on' "$out" >"$job/devinfo.dpv$i"
		for re in $'^\tnode_guid:\t+'"$guid"'$' $'^\t+state:\t+PORT_ACTIVE \\(4\\)$' \
			$'^\t+max_mtu:\t+1024 \\(3\\)$' $'^\t+active_mtu:\t+1024 \\(3\\)$' \
			$'^\t+link_layer:\t+Ethernet$' $'^\t+phys_state:\t+LINK_UP \\(5\\)$' \
			$'^\t+active_speed:\t+2\\.5 Gbps \\(1\\)$' \
			$'^\t+GID\\[  0\\]:\t+::ffff:'"${ip//./\\.}"', RoCE v2$'; do
			grep -Eq -- "$re" "$job/devinfo.dpv$i" ||
				{ echo "FAIL: dpv$i ($pci, MAC $mac): no line matching '$re'"; failed=1; }
		done
	done
	# EAL numbers the PCI ports by address, whatever the order of the -a (vfio.md):
	# NIC A is dpv0 still. ibv_devices lists without opening.
	timeout --kill-after=5 120 env DPV_EAL_ARGS="-l 0 --in-memory -m 256 -a $pci_b -a $pci_a --no-telemetry" \
		DPV_PORT_IPV4=10.205.0.1,10.205.0.2 LD_LIBRARY_PATH=$DPV_DROPIN_LIBDIR \
		ibv_devices >"$job/devices.out" 2>&1 || { echo "ibv_devices exited $?"; failed=1; }
	echo "---- ibv_devices, -a $pci_b -a $pci_a"
	cat "$job/devices.out"
	IFS=: read -r m0 m1 m2 m3 m4 m5 <<<"$DPV_VM_MAC_A"
	guid=$(printf '%02x%s%sfffe%s%s%s' $((0x$m0 ^ 2)) "$m1" "$m2" "$m3" "$m4" "$m5")
	grep -Eq "^[[:space:]]+dpv0[[:space:]]+$guid\$" "$job/devices.out" ||
		{ echo "FAIL: with -a $pci_b -a $pci_a, dpv0 is not NIC A ($pci_a, GUID $guid)"; failed=1; }
	return $failed
}
run_case devinfo 150 devinfo

# vfio.md's step 5 as it stands: its INI file (the block after "As a file:"),
# with NIC A's address for 0000:03:00.0 and the guest's core 0 for 2, given to
# ibv_devinfo by DPV_CONFIG; then its hugepage files removed, as configuration.md's Memory
# section says, and the pages free again.
doc_config() {
	local ini=$job/nic.ini out=$job/doc_config.out free0 free1 failed=0
	free0=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
	awk '/^As a file:/ { f = 1 } f && /^```ini/ { on = 1; next } on && /^```/ { exit } on' \
		"$src/doc/guides/vfio.md" | sed "s/0000:03:00\.0/$pci_a/; s/-l 2 /-l 0 /" >"$ini"
	echo "---- $ini"
	cat "$ini"
	grep -q -- "-a $pci_a" "$ini" || { echo "FAIL: no INI file with -a 0000:03:00.0 after \"As a file:\" in vfio.md"; return 1; }
	timeout --kill-after=5 120 env DPV_CONFIG="$ini" LD_LIBRARY_PATH="$DPV_DROPIN_LIBDIR" \
		ibv_devinfo >"$out" 2>&1 || { echo "ibv_devinfo exited $?"; failed=1; }
	echo "---- ibv_devinfo"
	cat "$out"
	for re in $'^hca_id:\tdpv0$' $'^\t+state:\t+PORT_ACTIVE \\(4\\)$'; do
		grep -Eq -- "$re" "$out" || { echo "FAIL: no line matching '$re'"; failed=1; }
	done
	! grep -q '^hca_id:.dpv1' "$out" || { echo "FAIL: -a $pci_a gave a second device"; failed=1; }
	ls /dev/hugepages/dpv-nicmap_* >/dev/null 2>&1 ||
		{ echo "FAIL: no hugepage files /dev/hugepages/dpv-nicmap_* (configuration.md says they stay)"; failed=1; }
	rm -f /dev/hugepages/dpv-nicmap_*
	free1=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
	echo "hugepages free: $free0 before, $free1 after the files were removed"
	[ "$free1" = "$free0" ] || { echo "FAIL: $free0 hugepages free before, $free1 after"; failed=1; }
	# Its error table: -a naming no NIC bound to vfio-pci (no device at 00:1e.0; the
	# value glued on, as EAL takes it too) lists no device, and says why.
	timeout --kill-after=5 120 env DPV_EAL_ARGS="-l 0 --in-memory -m 256 -a0000:00:1e.0 --no-telemetry" \
		DPV_PORT_IPV4=10.205.0.1 LD_LIBRARY_PATH="$DPV_DROPIN_LIBDIR" \
		ibv_devices >"$job/unbound.out" 2>&1
	echo "---- ibv_devices, -a0000:00:1e.0"
	cat "$job/unbound.out"
	grep -q '^dpverbs: EAL started but none of the ports its arguments name came up' "$job/unbound.out" ||
		{ echo "FAIL: no line saying that none of the ports came up"; failed=1; }
	! grep -q 'dpv0' "$job/unbound.out" || { echo "FAIL: a device with no NIC"; failed=1; }
	return $failed
}
run_case doc_config 150 doc_config

dropin=$src/test/dropin/dropin.sh
export DPV_DROPIN_PCI_A=$pci_a DPV_DROPIN_PCI_B=$pci_b
run_case rc 150 "$dropin" pci huge 19801 ibv_rc_pingpong -g 0 -n 20 -c -s 4096
run_case srq 150 "$dropin" pci huge 19802 ibv_srq_pingpong -g 0 -q 16 -n 32 -c -s 4096
run_case ud 150 "$dropin" pci huge 19803 ibv_ud_pingpong -g 0 -n 20 -c -s 1024
# Not by default (DPV_VM_CASES names them): each takes some 40 s more under TCG.
more() { [[ " ${DPV_VM_CASES:-} " == *" $1 "* ]]; }
more rc_s65536 && run_case rc_s65536 150 "$dropin" pci huge 19804 ibv_rc_pingpong -g 0 -n 8 -c -s 65536
more rc_nohuge && run_case rc_nohuge 150 "$dropin" pci nohuge 19806 ibv_rc_pingpong -g 0 -n 20 -c -s 4096

# test_verbs (linked against DPDK's shared libraries, which load Debian's PMDs) with
# both NICs in one process, and no ring pair.
if [ -x "${DPV_VM_TEST_VERBS:-}" ]; then
	run_case verbs 240 env DPV_RING_PAIRS=0 DPV_PORT_IPV4=10.203.0.1,10.203.0.2 \
		DPV_EAL_ARGS="-l 0 --in-memory -m 512 -a $pci_a -a $pci_b --no-telemetry --log-level=lib.eal:error" \
		"$DPV_VM_TEST_VERBS" rc srq tm
elif want verbs; then
	echo "no test_verbs in the build" >"$job/verbs.log"
	result skip verbs 0
fi

# The kernel's Soft-RoCE on NIC A against dpverbs on NIC B (rxe.sh).
# shellcheck source=rxe.sh
. "$src/test/vm/rxe.sh"
say "guest done"
