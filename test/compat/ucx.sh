#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# UCX's ucx_perftest (Debian's ucx-utils, unmodified) on the drop-in libibverbs.so.1,
# a server and a client in two dpverbs processes joined by a link. Usage:
#
#   ucx.sh LINK MEMORY TCP_PORT TLS [ucx_perftest ARGS...]
#
#   LINK      memif     net_memif, server and client on one socket file, both in this
#                       network namespace
#             afpacket  net_af_packet on a veth pair, each end in a network namespace
#                       of its own (frames cross the kernel)
#   MEMORY    nohuge (--no-huge --no-shconf) or huge (--in-memory, hugepages)
#   TCP_PORT  where the server listens for ucx_perftest's exchange (-p)
#   TLS       the UCX_TLS of both sides, or "default" for UCX's own choice
#
# Both sides run with UCX_NET_DEVICES=dpv0:1 and in a /dev of their own that holds the
# /dev/infiniband/dpvN nodes UCX looks for (private_dev.sh, which runs dpv-devnodes:
# DPV_DEVNODES names it, meson sets it). Needs root (exit 77 without it), and
# ucx-utils (exit 77 without it).
#
# What a run must show: both sides exit 0 within 60 s; the client prints its "Final:"
# line for the -n iterations asked, every figure a number and its latency and
# bandwidth above 0. ucx_perftest checks no data itself (its -v is CSV output; its
# ping-pongs wait for each message's sequence number), so data is checked by the MPI
# test (mpi.sh). UCX_LOG_LEVEL=info makes UCP print the transports of each endpoint's
# lanes ("ep_cfg[N]: tag(rc_verbs/dpv0:1 ...)"): with a TLS given, every one must be of
# it and on dpv0:1; with "default", one at least must be on dpv0:1 (UCX adds its
# shared-memory transports for a peer on the same host, and they carry what they
# can). The devices' counters (DPV_STATS_DUMP) must show the traffic crossed dpverbs:
# with a TLS given, the client's device sent at least one packet an iteration and
# neither side ran a WR out of retries. The figures and the counters are printed.
#
# Only the processes started here are ended, by pid; the namespaces (and with them the
# veth pair), the temporary directory and EAL's runtime directories are removed on
# every exit.

set -u

if [ $# -lt 5 ]; then
	echo "usage: $0 memif|afpacket nohuge|huge TCP_PORT TLS|default ucx_perftest-args..." >&2
	exit 2
fi

here=$(cd "$(dirname "$0")" && pwd)
devnodes=${DPV_DEVNODES:-$here/../../app/dpv-devnodes/dpv-devnodes.sh}
libdir=${DPV_DROPIN_LIBDIR:?set DPV_DROPIN_LIBDIR to the directory of the drop-in libibverbs.so.1}
unset LD_LIBRARY_PATH
prog_path=$(command -v ucx_perftest) || {
	echo "skipped: ucx_perftest is not installed (Debian package ucx-utils)"
	exit 77
}
if [ "$(id -u)" != 0 ]; then
	echo "skipped: needs root (a private /dev for UCX's device nodes, network namespaces)"
	exit 77
fi
# Everything below runs in the private /dev.
if [ -z "${DPV_UCX_PRIVATE_DEV:-}" ]; then
	DPV_UCX_PRIVATE_DEV=1 exec "$here/private_dev.sh" "$devnodes" "$0" "$@"
fi

link=$1 memory=$2 tcp_port=$3 tls=$4
shift 4
args=("$@")
case $memory in
nohuge) mem="--no-huge --no-shconf -m 512" ;;
huge) mem="--in-memory -m 256" ;;
*) echo "memory mode $memory: want nohuge or huge" >&2; exit 2 ;;
esac
eal_common="--no-pci --no-telemetry --log-level=lib.eal:error $mem"

tmp=$(mktemp -d /tmp/dpv-ucx.XXXXXX) || exit 1
id=$(printf '%05x' $(( ($$ << 8 ^ RANDOM) & 0xfffff )))
prefix_a=dpvucx-$id-a prefix_b=dpvucx-$id-b
ns_a= ns_b=
pids=()

cleanup() {
	local pid
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	done
	[ -n "$ns_a" ] && ip netns del "$ns_a" 2>/dev/null
	[ -n "$ns_b" ] && ip netns del "$ns_b" 2>/dev/null
	rm -rf "$tmp" "/var/run/dpdk/$prefix_a" "/var/run/dpdk/$prefix_b"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

case $link in
memif)
	sock=$tmp/memif.sock
	vdev_a="--vdev=net_memif0,role=server,socket=$sock,socket-abstract=no"
	vdev_b="--vdev=net_memif0,role=client,socket=$sock,socket-abstract=no"
	run_a=() run_b=()
	ip_a=10.78.0.1 ip_b=10.78.0.2
	server_host=127.0.0.1
	;;
afpacket)
	ns_a=${DPV_DROPIN_NETNS:-dpv}A$id ns_b=${DPV_DROPIN_NETNS:-dpv}B$id
	veth_a=dpv${id}a veth_b=dpv${id}b
	if ! ip netns add "$ns_a" 2>"$tmp/netns.err"; then
		echo "skipped: cannot create a network namespace: $(cat "$tmp/netns.err")"
		ns_a=
		exit 77
	fi
	# The kernel's addresses carry the TCP exchange; dpverbs answers ARP for its own
	# (test/dropin/dropin.sh says why the two differ).
	ip netns add "$ns_b" &&
		ip link add "$veth_a" type veth peer name "$veth_b" &&
		ip link set "$veth_a" netns "$ns_a" && ip link set "$veth_b" netns "$ns_b" &&
		ip -n "$ns_a" link set "$veth_a" up && ip -n "$ns_b" link set "$veth_b" up &&
		ip -n "$ns_a" link set lo up && ip -n "$ns_b" link set lo up &&
		ip -n "$ns_a" addr add 10.205.0.1/24 dev "$veth_a" &&
		ip -n "$ns_b" addr add 10.205.0.2/24 dev "$veth_b" || exit 1
	vdev_a="--vdev=net_af_packet0,iface=$veth_a,framecnt=4096"
	vdev_b="--vdev=net_af_packet0,iface=$veth_b,framecnt=4096"
	run_a=(ip netns exec "$ns_a") run_b=(ip netns exec "$ns_b")
	ip_a=10.205.0.11 ip_b=10.205.0.12
	server_host=10.205.0.1
	;;
*)
	echo "link $link: want memif or afpacket" >&2
	exit 2
	;;
esac
tls_env=()
[ "$tls" != default ] && tls_env=(UCX_TLS="$tls")

start_side() { # side outfile args...
	local side=$1 out=$2 eal ip run
	shift 2
	if [ "$side" = a ]; then
		eal="-l 0 --file-prefix $prefix_a $eal_common $vdev_a" ip=$ip_a run=("${run_a[@]}")
	else
		eal="-l 1 --file-prefix $prefix_b $eal_common $vdev_b" ip=$ip_b run=("${run_b[@]}")
	fi
	timeout --kill-after=5 60 "${run[@]}" env LD_LIBRARY_PATH="$libdir" \
		DPV_EAL_ARGS="$eal" DPV_PORT_IPV4="$ip" DPV_PROGRESS=inline \
		DPV_STATS_DUMP="${out%.out}-" UCX_NET_DEVICES=dpv0:1 UCX_LOG_LEVEL=info \
		"${tls_env[@]}" stdbuf -oL -eL "$prog_path" "$@" >"$out" 2>&1 &
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

counter() { # dumpfile name
	awk -v n="$2" '$1 == n { v = $2 } END { print v + 0 }' "$1" 2>/dev/null || echo 0
}

out_a=$tmp/a.out out_b=$tmp/b.out
start_side a "$out_a" "${args[@]}" -p "$tcp_port"
server=$last_pid
for ((i = 0; i < 300; i++)); do
	"${run_a[@]}" ss -Hltn "sport = :$tcp_port" 2>/dev/null | grep -q . && break
	kill -0 "$server" 2>/dev/null || break
	sleep 0.1
done
start_side b "$out_b" "${args[@]}" -p "$tcp_port" "$server_host"
finish_side "$last_pid" "client (ucx_perftest ${args[*]})"
finish_side "$server" "server (ucx_perftest ${args[*]})"

test_name=
iters=1000000
set -- "${args[@]}" ""
for ((i = 1; i < $#; i++)); do
	case ${!i} in
	-t) test_name=${@:i+1:1} ;;
	-n) iters=${@:i+1:1} ;;
	esac
done

# Final: iterations, latency 50%ile, average, overall; bandwidth average, overall
# (MB/s); message rate average, overall.
final=$(grep -E '^Final:' "$out_b" | tail -1)
num='[0-9]+(\.[0-9]+)?'
if [[ ! $final =~ ^Final:\ +$iters\ +$num\ +$num\ +$num\ +$num\ +$num\ +$num\ +$num\ *$ ]]; then
	fail "client: no Final line for $iters iterations: '${final:-none}'"
else
	read -r _ _ _ lat_avg _ bw_avg _ rate_avg _ <<<"$final"
	awk -v l="$lat_avg" -v b="$bw_avg" 'BEGIN { exit !(l > 0 && b > 0) }' ||
		fail "client: latency $lat_avg us, bandwidth $bw_avg MB/s: not both above 0"
fi
for f in "$out_a" "$out_b"; do
	! grep -Eq 'UCX +(ERROR|FATAL)' "$f" ||
		fail "$(basename "$f" .out): $(grep -Em1 'UCX +(ERROR|FATAL)' "$f")"
done

# The transports of the UCP endpoints' lanes (UCT tests, -x, have none).
allowed=" ${tls//,/ } "
allowed=${allowed// rc_v / rc_verbs ud_verbs }
allowed=${allowed// ud_v / ud_verbs }
lanes=$(grep -ohE 'ep_cfg\[[0-9]+\]: .*' "$out_a" "$out_b" | sort -u)
if [[ $test_name != am_* && $test_name != put_* && $test_name != get* ]]; then
	if [ -z "$lanes" ]; then
		fail "no ep_cfg line (UCX_LOG_LEVEL=info): which transports UCP chose is unknown"
	fi
	on_dpv=0
	for tl in $(grep -oE '[a-z0-9_]+/[A-Za-z0-9_:.-]+' <<<"$lanes" | sort -u); do
		[[ $tl == */dpv0:1 ]] && on_dpv=1
		if [ "$tls" != default ]; then
			[[ $allowed == *" ${tl%%/*} "* && $tl == */dpv0:1 ]] ||
				fail "UCP chose $tl, which UCX_TLS=$tls on UCX_NET_DEVICES=dpv0:1 excludes"
		fi
	done
	[ "$on_dpv" = 1 ] || fail "no lane of UCP's on dpv0:1: $lanes"
fi

for s in a b; do
	f=$tmp/$s-dpv0.txt
	if [ ! -s "$f" ]; then
		fail "side $s: no counters (DPV_STATS_DUMP)"
		continue
	fi
	v=$(counter "$f" qp.retry_exceeded)
	[ "$v" = 0 ] || fail "side $s: qp.retry_exceeded $v"
done
sent_b=$(counter "$tmp/b-dpv0.txt" xport.tx_packets)
sent_a=$(counter "$tmp/a-dpv0.txt" xport.tx_packets)
if [ "$tls" != default ] && [ "$sent_b" -lt "$iters" ]; then
	fail "the client's device sent $sent_b packets for $iters iterations: the traffic did not cross dpverbs"
fi

if [ "$failed" != 0 ]; then
	echo "==== side A (server), $link ${run_a[*]}"; cat "$out_a"
	echo "==== side B (client), $link ${run_b[*]}"; cat "$out_b"
	for s in a b; do
		[ -s "$tmp/$s-dpv0.txt" ] || continue
		echo "---- side $s: its device's counters, those not 0"
		awk '$2 != 0' "$tmp/$s-dpv0.txt" | paste -sd ' ' | fold -s -w 120
	done
	exit 1
fi
echo "ok: ucx_perftest ${args[*]} over $link ($memory), UCX_TLS=$tls"
echo "$final"
[ -n "$lanes" ] && echo "$lanes"
echo "dpverbs packets sent: server $sent_a, client $sent_b"
exit 0
