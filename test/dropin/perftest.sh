#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# One of perftest's one-sided tests (Debian's binaries, unmodified) on the drop-in
# libibverbs.so.1, between two dpverbs processes joined by af_packet on a veth pair,
# each end in a network namespace of its own. Usage:
#
#   perftest.sh MEMORY TCP_PORT PROGRAM [ARGS...]
#
#   MEMORY    nohuge (--no-huge --no-shconf) or huge (--in-memory, hugepages)
#   TCP_PORT  where the server listens for perftest's exchange (-p)
#   PROGRAM   ib_write_bw, ib_read_bw, ib_write_lat, ib_read_lat
#
# What it shows: the server side of ib_write_bw, ib_read_bw and ib_read_lat never
# calls verbs while the test runs, yet its device must ACK the WRITEs and answer the
# READs; inline progress does that with its helper thread (DPV_INLINE_IDLE_US). Without
# it the client ends with "Failed status 12" (retry exceeded).
#
# perftest links Debian's libmlx5.so.1 and libefa.so.1, which load on the drop-in's
# provider interface (lib/verbs/verbs_private.c). A perftest server wants its port up
# before its client starts, which a memif server's link is not (it comes up when the
# client connects), hence af_packet. Needs root (exit 77 without it), as do the
# afpacket cases of dropin.sh. DPV_DROPIN_NETNS (default dpv) starts the namespaces'
# names. Both sides must exit 0, the client print its result line for the size and
# count asked for, the bandwidth tests' server too, and neither an error. Only the
# processes started here are ended, by pid; the namespaces (and with them the veth
# pair), the temporary directory and EAL's runtime directories are removed on every
# exit.

set -u

if [ $# -lt 3 ]; then
	echo "usage: $0 nohuge|huge TCP_PORT PROGRAM [ARGS...]" >&2
	exit 2
fi
memory=$1 tcp_port=$2 prog=$3
shift 3
args=("$@")

libdir=${DPV_DROPIN_LIBDIR:?set DPV_DROPIN_LIBDIR to the directory of the drop-in libibverbs.so.1}
unset LD_LIBRARY_PATH
prog_path=$(command -v "$prog") || {
	echo "skipped: $prog is not installed (Debian package perftest)"
	exit 77
}
if [ "$(id -u)" != 0 ]; then
	echo "skipped: needs root (network namespaces, a veth pair)"
	exit 77
fi
case $memory in
nohuge) mem="--no-huge --no-shconf -m 512" ;;
huge) mem="--in-memory -m 256" ;;
*) echo "memory mode $memory: want nohuge or huge" >&2; exit 2 ;;
esac

tmp=$(mktemp -d /tmp/dpv-perftest.XXXXXX) || exit 1
id=$(printf '%05x' $(( ($$ << 8 ^ RANDOM) & 0xfffff )))
prefix_a=dpvperftest-$id-a prefix_b=dpvperftest-$id-b
ns_a=${DPV_DROPIN_NETNS:-dpv}A$id ns_b=${DPV_DROPIN_NETNS:-dpv}B$id
veth_a=dpv${id}a veth_b=dpv${id}b
made_ns=
pids=()

cleanup() {
	local pid
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	done
	if [ -n "$made_ns" ]; then
		ip netns del "$ns_a" 2>/dev/null
		ip netns del "$ns_b" 2>/dev/null
		ip link del "$veth_a" 2>/dev/null
	fi
	rm -rf "$tmp" "/var/run/dpdk/$prefix_a" "/var/run/dpdk/$prefix_b"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

if ! ip netns add "$ns_a" 2>"$tmp/netns.err"; then
	echo "skipped: cannot create a network namespace: $(cat "$tmp/netns.err")"
	exit 77
fi
made_ns=1
# The kernel's addresses carry perftest's TCP exchange; dpverbs answers ARP for its own
# (dropin.sh says why the two differ). 4096 frames per packet ring: a 64-frame burst
# of 4 KiB WRITEs at a time, many times over.
ip netns add "$ns_b" &&
	ip link add "$veth_a" type veth peer name "$veth_b" &&
	ip link set "$veth_a" netns "$ns_a" && ip link set "$veth_b" netns "$ns_b" &&
	ip -n "$ns_a" link set "$veth_a" up && ip -n "$ns_b" link set "$veth_b" up &&
	ip -n "$ns_a" link set lo up && ip -n "$ns_b" link set lo up &&
	ip -n "$ns_a" addr add 10.203.0.1/24 dev "$veth_a" &&
	ip -n "$ns_b" addr add 10.203.0.2/24 dev "$veth_b" || exit 1
eal_common="--no-pci --no-telemetry --log-level=lib.eal:error $mem"

start_side() { # side outfile program args...
	local side=$1 out=$2 ns eal ip
	shift 2
	if [ "$side" = a ]; then
		ns=$ns_a ip=10.203.0.11
		eal="-l 0 --file-prefix $prefix_a $eal_common --vdev=net_af_packet0,iface=$veth_a,framecnt=4096"
	else
		ns=$ns_b ip=10.203.0.12
		eal="-l 1 --file-prefix $prefix_b $eal_common --vdev=net_af_packet0,iface=$veth_b,framecnt=4096"
	fi
	timeout --kill-after=5 60 ip netns exec "$ns" env LD_LIBRARY_PATH="$libdir" \
		DPV_EAL_ARGS="$eal" DPV_PORT_IPV4="$ip" DPV_PROGRESS=inline \
		stdbuf -oL -eL "$@" >"$out" 2>&1 &
	last_pid=$!
	pids+=("$last_pid")
}

failed=0
fail() {
	echo "FAIL: $*"
	failed=1
}

finish_side() { # pid name
	local rc p rest=()
	wait "$1"
	rc=$?
	for p in "${pids[@]}"; do
		[ "$p" = "$1" ] || rest+=("$p")
	done
	pids=("${rest[@]}")
	case $rc in
	0) ;;
	124 | 137) fail "$2 did not finish in time (hung)" ;;
	*) fail "$2 exited with status $rc" ;;
	esac
}

out_a=$tmp/a.out out_b=$tmp/b.out
start_side a "$out_a" "$prog_path" "${args[@]}" -p "$tcp_port"
server=$last_pid
for ((i = 0; i < 300; i++)); do
	ip netns exec "$ns_a" ss -Hltn "sport = :$tcp_port" 2>/dev/null | grep -q . && break
	kill -0 "$server" 2>/dev/null || break
	sleep 0.1
done
start_side b "$out_b" "$prog_path" "${args[@]}" -p "$tcp_port" 10.203.0.1
finish_side "$last_pid" "client ($prog ${args[*]})"
finish_side "$server" "server ($prog ${args[*]})"

# The result line: "#bytes #iterations" then the figures.
size=65536 iters=1000
[[ $prog == *_lat ]] && size=2
[[ $prog == *_bw ]] && iters=5000
set -- "${args[@]}" ""
for ((i = 1; i < $#; i++)); do
	case ${!i} in
	-s) size=${@:i+1:1} ;;
	-n) iters=${@:i+1:1} ;;
	esac
done
result="^ *$size +$iters +[0-9.]+ +[0-9.]+"
grep -Eq -- "$result" "$out_b" || fail "client: no result line for $size bytes x $iters"
if [[ $prog == *_bw ]]; then
	grep -Eq -- "$result" "$out_a" || fail "server: no result line for $size bytes x $iters"
fi
for f in "$out_a" "$out_b"; do
	! grep -Eiq 'Failed|Couldn.t|error|Unable' "$f" ||
		fail "$(basename "$f" .out): $(grep -Eim1 'Failed|Couldn.t|error|Unable' "$f")"
done

if [ "$failed" != 0 ]; then
	echo "==== side A (server), $ns_a"; cat "$out_a"
	echo "==== side B (client), $ns_b"; cat "$out_b"
	exit 1
fi
echo "ok: $prog ${args[*]} over af_packet ($memory)"
grep -hE -- "$result" "$out_b"
exit 0
