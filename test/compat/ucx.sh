#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# UCX's ucx_perftest and io_demo (Debian's ucx-utils, unmodified) on the drop-in
# libibverbs.so.1, a server and a client in two dpverbs processes joined by a link.
# Usage:
#
#   ucx.sh LINK MEMORY TCP_PORT TLS PROGRAM [ARGS...]
#
#   LINK      memif     net_memif, server and client on one socket file, both in this
#                       network namespace
#             afpacket  net_af_packet on a veth pair, each end in a network namespace
#                       of its own (frames cross the kernel)
#   MEMORY    nohuge (--no-huge --no-shconf) or huge (--in-memory, hugepages)
#   TCP_PORT  where the server listens (-p)
#   TLS       the UCX_TLS of both sides, or "default" for UCX's own choice; with
#             "rdmacm" among them (io_demo: e.g. rc_verbs,rdmacm) the connection is
#             made by UCX's rdmacm connection manager alone
#             (UCX_SOCKADDR_TLS_PRIORITY=rdmacm, the rest in UCX_TLS) on the drop-in
#             librdmacm.so.1 (DPV_RDMACM_LIBDIR), to the server's dpverbs address,
#             and the server must listen on no TCP port
#   PROGRAM   ucx_perftest, or io_demo (its server gets the client's -d and -q)
#
# Both sides run with UCX_NET_DEVICES=dpv0:1 (io_demo: and the kernel interface of the
# TCP connection, on which UCX's tcp connection manager makes the first contact) and in
# a /dev of their own that holds the /dev/infiniband/dpvN nodes UCX looks for
# (private_dev.sh, which runs dpv-devnodes: DPV_DEVNODES names it, meson sets it).
# Needs root (exit 77 without it), and ucx-utils (exit 77 without it).
#
# What a run must show. ucx_perftest: both sides exit 0 within 60 s; the client prints
# its "Final:" line for the -n iterations asked, every figure a number, its latency
# and bandwidth above 0. It checks no data itself (its -v is CSV output; its ping-pongs
# wait for each message's sequence number). io_demo: the client, with -q (its data
# integrity and transaction check), exits 0 saying "Client exit with status 'OK'",
# after a summary line that counts the -i operations asked; its server, which never
# ends by itself, is then interrupted. UCX_LOG_LEVEL=info makes UCP print the
# transports of each endpoint configuration's lanes ("ep_cfg[N]: tag(rc_verbs/dpv0:1
# ...)"): for ucx_perftest with a TLS given, every one must be of it and on dpv0:1; with
# "default", one at least must be on dpv0:1 (UCX adds its shared-memory transports for
# a peer on the same host, and they carry what they can); for io_demo, whose endpoints
# start on the tcp lanes of their connection manager, one configuration must be on
# dpv0:1 alone. The devices' counters (DPV_STATS_DUMP) must show that the traffic
# crossed dpverbs: the client's device sent at least a packet an iteration (io_demo:
# moved two an operation), and no WR ran out of retries. The figures, the lanes and
# the counters are printed.
#
# DPV_DROPIN_NETNS (default dpv) starts the names of the namespaces and veth ends. Only
# the processes started here are ended, by pid; the namespaces (and with them the veth
# pair), the temporary directory and EAL's runtime directories are removed on every
# exit.

set -u
# The two sides, their link and the clean-up after them (link_*), fail and the rest.
# shellcheck source=../lib/link.sh
. "$(dirname "$0")/../lib/link.sh"

link_args 5 "memif|afpacket nohuge|huge TCP_PORT TLS|default ucx_perftest|io_demo ARGS..." "$@"
link_libdir
prog=$5
case $prog in
ucx_perftest | io_demo) ;;
*) echo "program $prog: want ucx_perftest or io_demo" >&2; exit 2 ;;
esac
link_need "$prog" ucx-utils
link_need_root "needs root (a private /dev for UCX's device nodes, network namespaces)"
# Everything below runs in the private /dev.
link_private_dev "$0" "$@"

link=$1 memory=$2 tcp_port=$3 tls=$4
shift 5
args=("$@")
link_eal "$memory"

link_init /tmp/dpv-ucx.XXXXXX
prefix_a=dpvucx-$id-a prefix_b=dpvucx-$id-b

case $link in
memif)
	link_memif
	ip_a=10.78.0.1 ip_b=10.78.0.2
	server_host=127.0.0.1
	kif_a=lo kif_b=lo
	;;
afpacket)
	link_netns_pair "${DPV_DROPIN_NETNS:-dpv}"
	# The kernel's addresses carry the TCP exchange; dpverbs answers ARP for its own
	# (test/dropin/dropin.sh says why the two differ).
	link_addrs 10.205.0 "$veth_a" "$veth_b"
	link_afpacket
	ip_a=10.205.0.11 ip_b=10.205.0.12
	kif_a=$veth_a kif_b=$veth_b
	;;
*)
	echo "link $link: want memif or afpacket" >&2
	exit 2
	;;
esac
tls_env=()
cm=''
if [[ ,$tls, == *,rdmacm,* ]]; then
	if [ "$prog" != io_demo ]; then
		echo "rdmacm: only io_demo connects through a connection manager" >&2
		exit 2
	fi
	cm=rdmacm
	tls=$(sed -E 's/(^|,)rdmacm(,|$)/\1/; s/,$//' <<<"$tls")
	libdir=${DPV_RDMACM_LIBDIR:?set DPV_RDMACM_LIBDIR to the directory of the drop-in librdmacm.so.1}:$libdir
	tls_env=(UCX_SOCKADDR_TLS_PRIORITY=rdmacm)
	server_host=$ip_a
fi
[ "$tls" != default ] && tls_env+=(UCX_TLS="$tls")

start_side() { # side outfile args...
	local side=$1 out=$2 side_eal side_ip side_run=() side_env=() devices=dpv0:1
	shift 2
	link_side "$side"
	if [ "$side" = a ]; then
		[ "$prog" = io_demo ] && devices=dpv0:1,$kif_a
	else
		[ "$prog" = io_demo ] && devices=dpv0:1,$kif_b
	fi
	side_env=(UCX_NET_DEVICES="$devices" UCX_LOG_LEVEL=info "${tls_env[@]}")
	link_run 60 "$out" "$prog_path" "$@"
}

failed=0

server_args=("${args[@]}")
if [ "$prog" = io_demo ]; then
	# The server needs the client's largest size (it asserts it otherwise), and -q to
	# fill and check what it sends and receives.
	server_args=(-q -d "$(opt_of -d 1:4096)")
fi
out_a=$tmp/a.out out_b=$tmp/b.out
start_side a "$out_a" "${server_args[@]}" -p "$tcp_port"
server=$last_pid
# io_demo says "started listener" once ucp_listener_create() returned (with rdmacm:
# rdma_listen() was called). A memif server's device waits for its client's before
# UCX goes on: the client starts once the socket is there, and io_demo retries a
# connection its server rejected (a REQ before rdma_listen()).
started() { grep -aq "started listener .* on 0.0.0.0:$tcp_port" "$out_a"; }
if [ -z "$cm" ]; then
	wait_until "$server" listening
elif [ "$link" = memif ]; then
	wait_until "$server" test -S "$sock" || fail "the memif socket never came"
else
	wait_until "$server" started || fail "the server never started its listener"
fi
start_side b "$out_b" "${args[@]}" -p "$tcp_port" "$server_host"
if [ -n "$cm" ]; then
	wait_until "$server" started || fail "the server never started its listener"
	! listening || fail "the server listens on TCP port $tcp_port: not rdmacm alone"
fi
finish_side "$last_pid" "client ($prog ${args[*]})"
if [ "$prog" = io_demo ]; then
	# The server runs until told: SIGINT, then its status is not the test's.
	link_stop "$server" INT
else
	finish_side "$server" "server ($prog ${args[*]})"
fi

num='[0-9]+(\.[0-9]+)?'
if [ "$prog" = ucx_perftest ]; then
	iters=$(opt_of -n 1000000)
	# Final: iterations, latency 50%ile, average, overall; bandwidth average, overall
	# (MB/s); message rate average, overall.
	final=$(grep -aE '^Final:' "$out_b" | tail -1)
	if [[ ! $final =~ ^Final:\ +$iters\ +$num\ +$num\ +$num\ +$num\ +$num\ +$num\ +$num\ *$ ]]; then
		fail "client: no Final line for $iters iterations: '${final:-none}'"
	else
		read -r _ _ _ lat_avg _ bw_avg _ _ _ <<<"$final"
		awk -v l="$lat_avg" -v b="$bw_avg" 'BEGIN { exit !(l > 0 && b > 0) }' ||
			fail "client: latency $lat_avg us, bandwidth $bw_avg MB/s: not both above 0"
	fi
else
	iters=$(opt_of -i 1000)
	final=$(grep -aE '\[DEMO\] total min:' "$out_b" | tail -1)
	final=${final#*\[DEMO\] }
	[[ $final =~ ^total\ min:$num\ max:$num\ total:$iters\ \| ]] ||
		fail "client: no summary line for $iters operations: '${final:-none}'"
	grep -q "Client exit with status 'OK'" "$out_b" ||
		fail "client: no \"Client exit with status 'OK'\""
fi
for f in "$out_a" "$out_b"; do
	! grep -aEq 'UCX +(ERROR|FATAL)' "$f" ||
		fail "$(basename "$f" .out): $(grep -aEm1 'UCX +(ERROR|FATAL)' "$f")"
done

# The transports of the UCP endpoints' lanes (UCT tests, -x, have none).
allowed=" ${tls//,/ } "
allowed=${allowed// rc_v / rc_verbs ud_verbs }
allowed=${allowed// ud_v / ud_verbs }
lanes=$(grep -aohE 'ep_cfg\[[0-9]+\]: .*' "$out_a" "$out_b" | sort -u)
if [ "$prog" = io_demo ]; then
	only_dpv=0
	while read -r cfg; do
		others=$(grep -oE '[a-z0-9_]+/[A-Za-z0-9_:.-]+' <<<"$cfg" | grep -v '/dpv0:1$')
		[ -n "$cfg" ] && [ -z "$others" ] && only_dpv=1
	done <<<"$lanes"
	[ "$only_dpv" = 1 ] || fail "no endpoint configuration on dpv0:1 alone: $lanes"
elif [ -z "$(opt_of -x '')" ]; then
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

# io_demo's server is interrupted before its exit handlers: only the client's counters.
sides="a b"
[ "$prog" = io_demo ] && sides=b
for s in $sides; do
	f=$tmp/$s-dpv0.txt
	if [ ! -s "$f" ]; then
		fail "side $s: no counters (DPV_STATS_DUMP)"
		continue
	fi
	v=$(counter "$f" qp.retry_exceeded)
	[ "$v" = 0 ] || fail "side $s: qp.retry_exceeded $v"
done
sent_a=$(counter "$tmp/a-dpv0.txt" xport.tx_packets)
sent_b=$(counter "$tmp/b-dpv0.txt" xport.tx_packets)
recv_b=$(counter "$tmp/b-dpv0.txt" xport.rx_packets)
if [ "$prog" = io_demo ]; then
	[ "$((sent_b + recv_b))" -ge "$((2 * iters))" ] ||
		fail "the client's device moved $sent_b + $recv_b packets for $iters operations: the data did not cross dpverbs"
elif [ "$tls" != default ] && [ "$sent_b" -lt "$iters" ]; then
	fail "the client's device sent $sent_b packets for $iters iterations: the traffic did not cross dpverbs"
fi

if [ "$failed" != 0 ]; then
	echo "==== side A (server), $link ${run_a[*]}"; cat "$out_a"
	echo "==== side B (client), $link ${run_b[*]}"; cat "$out_b"
	for s in a b; do
		[ -s "$tmp/$s-dpv0.txt" ] || continue
		echo "---- side $s: its device's counters, those not 0"
		nonzero_counters "$tmp/$s-dpv0.txt"
	done
	exit 1
fi
echo "ok: $prog ${args[*]} over $link ($memory), UCX_TLS=$tls${cm:+, connected by $cm}"
echo "$final"
[ -n "$lanes" ] && echo "$lanes"
if [ "$prog" = io_demo ]; then
	echo "dpverbs packets of the client: sent $sent_b, received $recv_b"
else
	echo "dpverbs packets sent: server $sent_a, client $sent_b"
fi
exit 0
