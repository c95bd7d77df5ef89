#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# bad_config.sh PROGRAM: every way the configuration can be wrong gives no devices with
# errno set on both calls of ibv_get_device_list, and exactly one "dpverbs:" line on
# stderr that names the problem.
set -u
prog=$1
tmp=$(mktemp -d)
holder=
cleanup() {
	[ -n "$holder" ] && kill "$holder" 2>/dev/null && wait "$holder" 2>/dev/null
	rm -rf "$tmp" /var/run/dpdk/dpvbad$$ "${XDG_RUNTIME_DIR:-/nonexistent}/dpdk/dpvbad$$"
}
trap cleanup EXIT
fails=0 n=0
base="-l 0 --no-huge -m 256 --no-pci --no-telemetry --no-shconf --file-prefix=dpvbad$$"

# Runs each case's program through this command first (empty: directly).
wrap=()

# check NAME ERRNO PHRASE [env assignments...]
check() {
	local name=$1 want_errno=$2 phrase=$3
	shift 3
	n=$((n + 1))
	"${wrap[@]}" env -u DPV_EAL_ARGS -u DPV_CONFIG -u DPV_PORT_IPV4 -u DPV_RING_PAIRS \
		-u DPV_FAULTS "$@" \
		timeout 60 "$prog" >"$tmp/out" 2>"$tmp/err"
	local rc=$? ok=1
	[ $rc -eq 0 ] || ok=0
	for c in 1 2; do
		grep -q "^call $c: list set, devices 0, errno $want_errno\$" "$tmp/out" || ok=0
	done
	[ "$(grep -c '^dpverbs:' "$tmp/err")" -eq 1 ] || ok=0
	grep '^dpverbs:' "$tmp/err" | grep -qF -- "$phrase" || ok=0
	if [ $ok -eq 1 ]; then
		echo "ok $n - $name"
	else
		echo "not ok $n - $name (exit $rc)"
		sed 's/^/  stdout: /' "$tmp/out"
		sed 's/^/  stderr: /' "$tmp/err"
		fails=$((fails + 1))
	fi
}

check "no EAL arguments" ENODEV "no EAL arguments"
check "config file missing" EINVAL "cannot read DPV_CONFIG file" \
	DPV_CONFIG="$tmp/nonexistent.ini"
check "port driver that does not exist" ENODEV "EAL did not start" \
	DPV_EAL_ARGS="$base --vdev=net_nosuch0" DPV_PORT_IPV4=127.0.0.1
check "PCI device that is not there" ENODEV "none of the ports" \
	DPV_EAL_ARGS="-l 0 --no-huge -m 256 --no-telemetry --file-prefix=dpvbad$$ -a 0000:ff:1f.7 --no-shconf" \
	DPV_PORT_IPV4=127.0.0.1
check "no port at all" ENODEV "found no DPDK port" DPV_EAL_ARGS="$base" DPV_PORT_IPV4=127.0.0.1
check "no IPv4 address for the port" EINVAL "no IPv4 address for DPDK port 0" \
	DPV_EAL_ARGS="$base --vdev=net_null0"
check "IPv4 address that is not one" EINVAL "is not an IPv4 address" \
	DPV_EAL_ARGS="$base --vdev=net_null0" DPV_PORT_IPV4=127.0.0.300
check "inline idle interval that is not a number" EINVAL "DPV_INLINE_IDLE_US=5ms" \
	DPV_EAL_ARGS="$base --vdev=net_null0" DPV_PORT_IPV4=127.0.0.1 DPV_INLINE_IDLE_US=5ms
printf '[dpverbs]\neal_args = %s --vdev=net_null0\ninline_idle_us = 2000000\n[port0]\nipv4 = 127.0.0.1\n' \
	"$base" >"$tmp/idle.ini"
check "inline idle interval too long in the file" EINVAL "inline_idle_us = 2000000 in [dpverbs] of $tmp/idle.ini" \
	DPV_CONFIG="$tmp/idle.ini"
check "ARP lifetime of 0" EINVAL "DPV_ARP_LIFETIME_MS=0: want the milliseconds" \
	DPV_EAL_ARGS="$base --vdev=net_null0" DPV_PORT_IPV4=127.0.0.1 DPV_ARP_LIFETIME_MS=0
printf '[dpverbs]\neal_args = %s --vdev=net_null0\narp_lifetime_ms = 30s\n[port0]\nipv4 = 127.0.0.1\n' \
	"$base" >"$tmp/arp.ini"
check "ARP lifetime that is not a number in the file" EINVAL "arp_lifetime_ms = 30s in [dpverbs] of $tmp/arp.ini" \
	DPV_CONFIG="$tmp/arp.ini"
check "link wait beyond ten minutes" EINVAL "DPV_LINK_WAIT_MS=600001: want the milliseconds opening a device waits" \
	DPV_EAL_ARGS="$base --vdev=net_null0" DPV_PORT_IPV4=127.0.0.1 DPV_LINK_WAIT_MS=600001
printf '[dpverbs]\neal_args = %s --vdev=net_null0\nlink_wait_ms = 10s\n[port0]\nipv4 = 127.0.0.1\n' \
	"$base" >"$tmp/wait.ini"
check "link wait that is not a number in the file" EINVAL "link_wait_ms = 10s in [dpverbs] of $tmp/wait.ini" \
	DPV_CONFIG="$tmp/wait.ini"
check "linger beyond a minute" EINVAL "DPV_LINGER_MS=60001: want the milliseconds a destroyed RC QP" \
	DPV_EAL_ARGS="$base --vdev=net_null0" DPV_PORT_IPV4=127.0.0.1 DPV_LINGER_MS=60001
printf '[dpverbs]\neal_args = %s --vdev=net_null0\nlinger_ms = 1s\n[port0]\nipv4 = 127.0.0.1\n' \
	"$base" >"$tmp/linger.ini"
check "linger that is not a number in the file" EINVAL "linger_ms = 1s in [dpverbs] of $tmp/linger.ini" \
	DPV_CONFIG="$tmp/linger.ini"
check "fault guard neither 0 nor 1" EINVAL "DPV_FAULT_GUARD=2: want whether dpverbs' SIGSEGV / SIGBUS handler" \
	DPV_EAL_ARGS="$base --vdev=net_null0" DPV_PORT_IPV4=127.0.0.1 DPV_FAULT_GUARD=2
printf '[dpverbs]\neal_args = %s --vdev=net_null0\nfault_guard = off\n[port0]\nipv4 = 127.0.0.1\n' \
	"$base" >"$tmp/guard.ini"
check "fault guard that is not a number in the file" EINVAL "fault_guard = off in [dpverbs] of $tmp/guard.ini" \
	DPV_CONFIG="$tmp/guard.ini"
check "fault spec with an unknown key" EINVAL "DPV_FAULTS: unknown key \"lose\"" \
	DPV_EAL_ARGS="$base --vdev=net_null0" DPV_PORT_IPV4=127.0.0.1 DPV_FAULTS=lose=0.01
printf '[dpverbs]\neal_args = %s --vdev=net_null0\n[port0]\nipv4 = 127.0.0.1\nfaults = loss=2\n' \
	"$base" >"$tmp/faults.ini"
check "fault spec out of range in the file" EINVAL "faults in [port0] of $tmp/faults.ini: loss=2" \
	DPV_CONFIG="$tmp/faults.ini"

# A memif socket already in use: something else listens on it (memif sockets are in
# the abstract namespace by default).
sock="/dpv-bad-config-$$"
python3 -c "
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind('\0' + sys.argv[1]); s.listen(1)
print('ready', flush=True); time.sleep(120)" "$sock" >"$tmp/holder" &
holder=$!
for _ in $(seq 100); do grep -q ready "$tmp/holder" && break; sleep 0.05; done
check "memif socket already in use" ENODEV "none of the ports" \
	DPV_EAL_ARGS="$base --vdev=net_memif0,role=server,socket=$sock" DPV_PORT_IPV4=127.0.0.1
kill "$holder"; wait "$holder" 2>/dev/null; holder=

# No hugepages and no --no-huge: in a mount namespace without hugetlbfs (or on a machine
# without hugepages, as it is).
nohuge_args="-l 0 -m 64 --no-pci --no-telemetry --no-shconf --file-prefix=dpvbad$$ --vdev=net_null0"
if ! grep -q hugetlbfs /proc/mounts || [ "$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)" = 0 ]; then
	check "no hugepages, no --no-huge" ENODEV "no free hugepages or no hugetlbfs mount" \
		DPV_EAL_ARGS="$nohuge_args" DPV_PORT_IPV4=127.0.0.1
elif [ "$(id -u)" -eq 0 ] && unshare -m true 2>/dev/null; then
	wrap=(unshare -m bash -c '
		for m in $(awk "\$3 == \"hugetlbfs\" {print \$2}" /proc/mounts); do umount "$m"; done
		exec "$@"' _)
	check "no hugepages, no --no-huge (mount namespace without hugetlbfs)" ENODEV \
		"no free hugepages or no hugetlbfs mount" \
		DPV_EAL_ARGS="$nohuge_args" DPV_PORT_IPV4=127.0.0.1
	wrap=()
else
	echo "# skipped: no hugepages, no --no-huge (needs root and unshare -m)"
fi
echo "$((n - fails)) of $n configurations refused cleanly"
[ $fails -eq 0 ]
