#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# ibv_xsrq_pingpong (ibverbs-utils, unmodified) on the drop-in libibverbs.so.1: one
# server whose XRC SRQ and XRC domain serve every client, and CLIENTS client
# processes, each a dpverbs device of its own. Usage:
#
#   xsrq.sh LINK MEMORY TCP_PORT CLIENTS [ARGS...]
#
#   LINK      memif     net_memif: for one client, the server and it on one link; for
#                       more, each process on a memif port of memif_switch (this
#                       folder's learning switch, whose path is DPV_MEMIF_SWITCH), a
#                       memif link joining two processes only
#             afpacket  net_af_packet on veth ends, the server's and each client's in a
#                       network namespace of its own, joined by a Linux bridge in one
#                       more (needs root; exit 77 without it)
#   MEMORY    nohuge    --no-huge --no-shconf
#             huge      --in-memory (hugepages, nothing shared between the processes)
#   TCP_PORT  where the server listens for the clients' QP exchange
#   CLIENTS   clients of the server (its -c)
#   ARGS      more options for both sides (-s, -n, -m, -e ...)
#
# The server, on core 0, and the clients, alternately on cores 1 and 0, run with -g 0.
# Every process must exit 0 and print "success" and the remote GID of its peer (the
# server: of every client), and nothing that says it failed. DPV_DROPIN_LIBDIR names
# the directory of the drop-in (meson sets it); DPV_DROPIN_NETNS (default dpx) starts
# the names of the namespaces and veth ends. Only the processes started here are
# ended, by pid; the temporary directory, EAL's runtime directories, the namespaces
# and the veths are removed on every exit.

set -u
# shellcheck source=../lib/link.sh
. "$(dirname "$0")/../lib/link.sh"

link_args 4 "memif|afpacket nohuge|huge TCP_PORT CLIENTS [ARGS...]" "$@"
link=$1 memory=$2 tcp_port=$3 clients=$4
shift 4
args=("$@")
prog=ibv_xsrq_pingpong

link_libdir
link_need "$prog" ibverbs-utils
link_init /tmp/dpv-xsrq.XXXXXX
link_eal "$memory" 256
failed=0
client_ns=()
prefix_a=dpvxsrq-$id-s
prefixes=("$prefix_a")

xsrq_cleanup() {
	local ns p
	link_cleanup
	for ns in "${client_ns[@]}"; do
		ip netns del "$ns" 2>/dev/null
	done
	for p in "${prefixes[@]}"; do
		rm -rf "/var/run/dpdk/$p"
		[ -n "${XDG_RUNTIME_DIR:-}" ] && rm -rf "$XDG_RUNTIME_DIR/dpdk/$p"
	done
}
trap xsrq_cleanup EXIT

case $link in
memif)
	link_memif
	server_host=localhost
	if [ "$clients" -gt 1 ]; then
		switch=${DPV_MEMIF_SWITCH:?set DPV_MEMIF_SWITCH to memif_switch, for more than one client over memif}
		"$switch" $((clients + 1)) "$tmp" >"$tmp/switch.txt" 2>&1 &
		link_track $!
		switch_pid=$!
		if ! wait_until "$switch_pid" grep -qs '^memif_switch: ' "$tmp/switch.txt"; then
			echo "FAIL: memif_switch did not start:"
			cat "$tmp/switch.txt"
			exit 1
		fi
		vdev_a="--vdev=net_memif0,role=client,socket=$tmp/port0.sock,socket-abstract=no"
	fi
	;;
afpacket)
	link_need_root "the afpacket link needs root (network namespaces, veths, a bridge)"
	names=${DPV_DROPIN_NETNS:-dpx}
	link_netns "${names}S$id"
	ns_a=${names}S$id
	ip netns add "${names}F$id" || exit 1
	ns_f=${names}F$id
	ip -n "$ns_f" link add br0 type bridge || exit 1
	ip -n "$ns_f" link set br0 up && ip -n "$ns_f" link set lo up && ip -n "$ns_a" link set lo up ||
		exit 1
	# One veth per process: its end in the process's namespace, the other on the bridge.
	attach() { # ns end address
		ip link add "$2" type veth peer name "$2f" || exit 1
		veths+=("$2")
		ip link set "$2" netns "$1" && ip link set "$2f" netns "$ns_f" &&
			ip -n "$ns_f" link set "$2f" master br0 && ip -n "$ns_f" link set "$2f" up &&
			ip -n "$1" link set "$2" up && ip -n "$1" addr add "$3/24" dev "$2" || exit 1
	}
	# The kernel's address of each end carries the TCP exchange; dpverbs answers ARP
	# for another address of the subnet itself (as dropin.sh's afpacket link does).
	attach "$ns_a" "${names}${id}s" 10.203.0.1
	server_host=10.203.0.1
	run_a=(ip netns exec "$ns_a")
	;;
*)
	echo "link $link: want memif or afpacket" >&2
	exit 2
	;;
esac

ip_s=10.203.0.101
# The EAL and the command prefix of client i (1..CLIENTS): its address, core, namespace.
client_setup() { # i
	local i=$1
	client_ip[i]=10.203.0.$((101 + i))
	client_prefix[i]=dpvxsrq-$id-c$i
	prefixes+=("${client_prefix[i]}")
	client_core[i]=$((i % 2))
	if [ "$link" = memif ]; then
		client_vdev[i]="--vdev=net_memif0,role=client,socket=$sock,socket-abstract=no"
		[ "$clients" -gt 1 ] &&
			client_vdev[i]="--vdev=net_memif0,role=client,socket=$tmp/port$i.sock,socket-abstract=no"
		client_run[i]=""
	else
		local ns=${names}C$i$id
		ip netns add "$ns" || exit 1
		client_ns+=("$ns")
		ip -n "$ns" link set lo up || exit 1
		attach "$ns" "${names}${id}c$i" "10.203.0.$((1 + i))"
		client_vdev[i]="--vdev=net_af_packet0,iface=${names}${id}c$i,framecnt=4096"
		client_run[i]=$ns
	fi
}

declare -a client_ip client_prefix client_core client_vdev client_run
run_side() { # outfile netns core prefix vdev ip program args...
	local out=$1 ns=$2 core=$3 prefix=$4 vdev=$5 ip=$6 pre=()
	shift 6
	[ -n "$ns" ] && pre=(ip netns exec "$ns")
	: >"$out"
	timeout --kill-after=5 120 "${pre[@]}" env LD_LIBRARY_PATH="$libdir" \
		DPV_EAL_ARGS="-l $core --file-prefix $prefix $eal_common $vdev" \
		DPV_PORT_IPV4="$ip" DPV_PROGRESS=inline DPV_LINK_WAIT_MS=0 \
		DPV_STATS_DUMP="${out%.out}-" stdbuf -oL -eL "$@" >>"$out" 2>&1 &
	link_track $!
}

[ "$link" = afpacket ] && vdev_a="--vdev=net_af_packet0,iface=${names}${id}s,framecnt=4096"
if listening; then
	echo "FAIL: TCP port $tcp_port is already in use"
	exit 1
fi
run_side "$tmp/s.out" "$ns_a" 0 "$prefix_a" "$vdev_a" "$ip_s" "$prog_path" -g 0 \
	-c "$clients" -p "$tcp_port" "${args[@]}"
server_pid=$last_pid
if ! wait_until "$server_pid" listening; then
	fail "the server never listened on TCP port $tcp_port"
else
	client_pids=()
	for ((i = 1; i <= clients; i++)); do
		client_setup "$i"
		run_side "$tmp/c$i.out" "${client_run[i]}" "${client_core[i]}" \
			"${client_prefix[i]}" "${client_vdev[i]}" "${client_ip[i]}" "$prog_path" \
			-g 0 -p "$tcp_port" "${args[@]}" "$server_host"
		client_pids+=("$last_pid")
	done
	for ((i = 1; i <= clients; i++)); do
		finish_side "${client_pids[i - 1]}" "client $i"
	done
fi
wait_exit "$server_pid" 300 || fail "the server still runs 30 s after its clients"
finish_side "$server_pid" server
if [ -n "${switch_pid:-}" ]; then
	link_stop "$switch_pid"
	echo "memif_switch: $(grep -E '^(forwarded|flooded|dropped) ' "$tmp/switch.txt" | paste -sd ' ')"
fi

ipre() { echo "${1//./\\.}"; }
check() { # outfile name peer-ip...
	local out=$1 name=$2 ip
	shift 2
	grep -q '^success$' "$out" || fail "$name: no line 'success'"
	for ip in "$@"; do
		grep -Eq "^ +remote: .*GID ::ffff:$(ipre "$ip")\$" "$out" ||
			fail "$name: no remote line for $ip"
	done
	# (memif's probe without a shared runtime says it cannot register a callback:
	# DPDK's remark, not the program's.)
	! grep -v '^rte_pmd_memif_probe' "$out" | grep -Eiq "failed|couldn't|error" ||
		fail "$name: printed '$(grep -v '^rte_pmd_memif_probe' "$out" |
			grep -Eim1 "failed|couldn't|error")'"
}
if [ "$failed" = 0 ]; then
	check "$tmp/s.out" server "${client_ip[@]}"
	for ((i = 1; i <= clients; i++)); do
		check "$tmp/c$i.out" "client $i" "$ip_s"
	done
fi
if [ "$failed" != 0 ]; then
	for f in "$tmp"/*.out; do
		echo "==== $(basename "$f")"
		cat "$f"
		for d in "${f%.out}"-dpv0.txt; do
			[ -s "$d" ] && { echo "---- its device's counters, those not 0"; nonzero_counters "$d"; }
		done
	done
	exit 1
fi
echo "ibv_xsrq_pingpong: $clients client(s) over $link ($memory): success on every side"
rpk=0
for f in "$tmp"/*-dpv0.txt; do
	rpk=$((rpk + $(counter "$f" xport.rx_packets)))
done
echo "packets received by all devices: $rpk"
