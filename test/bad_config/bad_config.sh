#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# bad_config.sh PROGRAM: every way the configuration can be wrong gives no devices with
# errno set on both calls of ibv_get_device_list, and exactly one "dpverbs:" line on
# stderr that names the problem.
set -u
# The temporary directory, the memif socket's holder and the clean-up after them.
# shellcheck source=../lib/link.sh
. "$(dirname "$0")/../lib/link.sh"
prog=$1
link_init /tmp/dpv-bad-config.XXXXXX
prefix_a=dpvbad$$
fails=0 n=0
base="-l 0 --no-huge -m 256 --no-pci --no-telemetry --no-shconf --file-prefix=$prefix_a"

# Runs each case's program through this command first (empty: directly).
wrap=()

# A configuration file $tmp/NAME.ini: dpverbs' EAL arguments (a null port) and LINE in
# [dpverbs], the port's address and PORT_LINE in [port0] (either line may be empty).
conf() { # name line port-line
	{
		printf '[dpverbs]\neal_args = %s --vdev=net_null0\n' "$base"
		[ -z "$2" ] || printf '%s\n' "$2"
		printf '[port0]\nipv4 = 127.0.0.1\n'
		[ -z "$3" ] || printf '%s\n' "$3"
	} >"$tmp/$1.ini"
}

# A null port with its address, from the environment.
null_env=(DPV_EAL_ARGS="$base --vdev=net_null0" DPV_PORT_IPV4=127.0.0.1)

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

# check_file NAME KEY VALUE: a configuration file whose [dpverbs] sets KEY = VALUE is
# refused (EINVAL), the line and the file named.
check_file() {
	conf "$2" "$2 = $3" ""
	check "$1" EINVAL "$2 = $3 in [dpverbs] of $tmp/$2.ini" DPV_CONFIG="$tmp/$2.ini"
}

check "no EAL arguments" ENODEV "no EAL arguments"
check "config file missing" EINVAL "cannot read DPV_CONFIG file" \
	DPV_CONFIG="$tmp/nonexistent.ini"
check "port driver that does not exist" ENODEV "EAL did not start" \
	DPV_EAL_ARGS="$base --vdev=net_nosuch0" DPV_PORT_IPV4=127.0.0.1
check "PCI device that is not there" ENODEV "none of the ports" \
	DPV_EAL_ARGS="-l 0 --no-huge -m 256 --no-telemetry --file-prefix=$prefix_a -a 0000:ff:1f.7 --no-shconf" \
	DPV_PORT_IPV4=127.0.0.1
check "no port at all" ENODEV "found no DPDK port" DPV_EAL_ARGS="$base" DPV_PORT_IPV4=127.0.0.1
check "no IPv4 address for the port" EINVAL "no IPv4 address for DPDK port 0" \
	DPV_EAL_ARGS="$base --vdev=net_null0"
check "IPv4 address that is not one" EINVAL "is not an IPv4 address" \
	DPV_EAL_ARGS="$base --vdev=net_null0" DPV_PORT_IPV4=127.0.0.300
check "inline idle interval that is not a number" EINVAL "DPV_INLINE_IDLE_US=5ms" \
	"${null_env[@]}" DPV_INLINE_IDLE_US=5ms
check_file "inline idle interval too long in the file" inline_idle_us 2000000
check "ARP lifetime of 0" EINVAL "DPV_ARP_LIFETIME_MS=0: want the milliseconds" \
	"${null_env[@]}" DPV_ARP_LIFETIME_MS=0
check_file "ARP lifetime that is not a number in the file" arp_lifetime_ms 30s
check "link wait beyond ten minutes" EINVAL "DPV_LINK_WAIT_MS=600001: want the milliseconds opening a device waits" \
	"${null_env[@]}" DPV_LINK_WAIT_MS=600001
check_file "link wait that is not a number in the file" link_wait_ms 10s
check "linger beyond a minute" EINVAL "DPV_LINGER_MS=60001: want the milliseconds a destroyed RC QP" \
	"${null_env[@]}" DPV_LINGER_MS=60001
check_file "linger that is not a number in the file" linger_ms 1s
check "fault guard neither 0 nor 1" EINVAL "DPV_FAULT_GUARD=2: want whether dpverbs' SIGSEGV / SIGBUS handler" \
	"${null_env[@]}" DPV_FAULT_GUARD=2
check_file "fault guard that is not a number in the file" fault_guard off
check "CM response timeout beyond its 5 bits" EINVAL "DPV_CM_RESPONSE_TIMEOUT=32: want the CM's response timeout as IBTA's exponent (4.096 us x 2^t), 0 to 31" \
	"${null_env[@]}" DPV_CM_RESPONSE_TIMEOUT=32
check_file "CM response timeout that is not a number in the file" cm_response_timeout 67ms
check "CM retries beyond 15" EINVAL "DPV_CM_RETRIES=16: want the times the CM sends a REQ, REP or DREQ again, 0 to 15" \
	"${null_env[@]}" DPV_CM_RETRIES=16
check_file "CM retries that is not a number in the file" cm_retries -1
check "CM packet life time beyond its 5 bits" EINVAL "DPV_CM_PACKET_LIFE_TIME=40: want the CM's packet life time" \
	"${null_env[@]}" DPV_CM_PACKET_LIFE_TIME=40
check_file "CM packet life time that is not a number in the file" cm_packet_life_time x
check "fault spec with an unknown key" EINVAL "DPV_FAULTS: unknown key \"lose\"" \
	"${null_env[@]}" DPV_FAULTS=lose=0.01
conf faults "" "faults = loss=2"
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
link_track $!
holder=$last_pid
for _ in $(seq 100); do grep -q ready "$tmp/holder" && break; sleep 0.05; done
check "memif socket already in use" ENODEV "none of the ports" \
	DPV_EAL_ARGS="$base --vdev=net_memif0,role=server,socket=$sock" DPV_PORT_IPV4=127.0.0.1
link_stop "$holder"

# No hugepages and no --no-huge: in a mount namespace without hugetlbfs (or on a machine
# without hugepages, as it is).
nohuge_args="-l 0 -m 64 --no-pci --no-telemetry --no-shconf --file-prefix=$prefix_a --vdev=net_null0"
if ! grep -q hugetlbfs /proc/mounts || [ "$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)" = 0 ]; then
	check "no hugepages, no --no-huge" ENODEV "no free hugepages or no hugetlbfs mount" \
		DPV_EAL_ARGS="$nohuge_args" DPV_PORT_IPV4=127.0.0.1
elif [ "$(id -u)" -eq 0 ] && unshare -m true 2>/dev/null; then
	# shellcheck disable=SC2016 # the inner shell expands them
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
