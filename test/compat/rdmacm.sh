#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# A program of Debian's rdmacm-utils, unmodified, on the drop-in librdmacm.so.1 and
# libibverbs.so.1: its server in one dpverbs process, its client in another, each with
# a device of its own, connected through the devices' CM (IBTA CM MADs over QP 1).
# Usage:
#
#   rdmacm.sh LINK MEMORY PORT PROGRAM [ARGS...]
#
#   LINK      memif     net_memif between two processes of this network namespace, the
#                       server on the memif server's side
#             afpacket  net_af_packet on a veth pair, one end in each of two network
#                       namespaces (needs root: skipped without it), so frames cross
#                       the kernel
#   MEMORY    nohuge (--no-huge --no-shconf) or huge (--in-memory, hugepages)
#   PORT      the RDMA CM port the server listens on
#   PROGRAM   rping      server `rping -s -a SERVER -p PORT ARGS`, client `rping -c -a
#                        SERVER -p PORT ARGS` (ARGS: -v, -V, -C COUNT, -S SIZE); with
#                        -v each side must print every ping's data, COUNT lines, each
#                        exactly the string rping builds for that ping (so the data the
#                        server read with RDMA READ and wrote back with RDMA WRITE is
#                        checked byte by byte); -V makes rping check it too
#             ucmatose   server `ucmatose ARGS`, client `ucmatose -s SERVER ARGS` (ARGS:
#                        -c CONNECTIONS, -C MESSAGES, -S SIZE): both print "test
#                        complete" and "return status 0"
#             udaddy     the same with UD ids (RDMA_PS_UDP, SIDR): server `udaddy ARGS`,
#                        client `udaddy -s SERVER ARGS` (ARGS as ucmatose's, and -p 0x2
#                        for RDMA_PS_IPOIB ids); the same lines on both sides
#             rdma_server  server `rdma_server -p PORT`, client `rdma_client -s SERVER -p
#                        PORT` (synchronous ids, rdma_create_ep(), rdma_get_request()):
#                        both print "end 0"
#             rdma_xserver  server `rdma_xserver -p PORT -c r`, client `rdma_xclient -s
#                        SERVER -p PORT -c r` (RC: the client's one SEND, 16 bytes
#                        inline on a QP that asked for no inline room, the server's
#                        receive of it): both print "end 0". Their XRC mode (-c x)
#                        needs RDMA_PS_IB and XRC QPs, which dpverbs has not
#
# What must hold besides: both sides exit 0 within their time, and no line says
# "error", "fail", "unhandled" or "dpverbs:". With DPV_FAULTS set (a fault spec,
# doc/guides/configuration.md) both devices run through the faults port: frames must
# have been dropped (both sides' counters, DPV_STATS_DUMP), and the script says how
# many, how many MADs the CMs sent and sent again (engine.cm_resent) and how long the
# two programs took. DPV_DROPIN_LIBDIR is the drop-in
# libibverbs' directory, DPV_RDMACM_LIBDIR the drop-in librdmacm's (the same directory
# once installed). DPV_COMPAT_NETNS (default dpv) starts the names of the namespaces and
# veth ends, DPV_COMPAT_TMPDIR (default /tmp) is where the temporary directory goes.
# Only the processes started here are ended, by pid; the namespaces, the temporary
# directory and EAL's runtime directories are removed on every exit.

set -u
# shellcheck source=../lib/link.sh
. "$(dirname "$0")/../lib/link.sh"

link_args 4 "memif|afpacket nohuge|huge PORT rping|ucmatose|udaddy|rdma_server|rdma_xserver [ARGS...]" "$@"
link=$1 memory=$2 port=$3 prog=$4
shift 4
args=("$@")

link_libdir
rdmacm_dir=${DPV_RDMACM_LIBDIR:-$libdir}
if [ ! -e "$rdmacm_dir/librdmacm.so.1" ]; then
	echo "no $rdmacm_dir/librdmacm.so.1" >&2
	exit 1
fi
libdir=$rdmacm_dir:$libdir
case $prog in
rping | ucmatose | udaddy) link_need "$prog" rdmacm-utils ;;
rdma_server) link_need rdma_client rdmacm-utils; link_need rdma_server rdmacm-utils ;;
rdma_xserver) link_need rdma_xclient rdmacm-utils; link_need rdma_xserver rdmacm-utils ;;
*) echo "program $prog: not rping, ucmatose, udaddy, rdma_server or rdma_xserver" >&2; exit 2 ;;
esac
link_eal "$memory"
case $link in
memif) ;;
afpacket) link_need_root "the afpacket link needs root (network namespaces, a veth pair)" ;;
*) echo "link $link: want memif or afpacket" >&2; exit 2 ;;
esac

link_init "${DPV_COMPAT_TMPDIR:-/tmp}/dpv-rdmacm.XXXXXX"
prefix_a=dpvrdmacm-$id-a prefix_b=dpvrdmacm-$id-b

if [ "$link" = memif ]; then
	link_memif
	ip_a=10.206.0.1 ip_b=10.206.0.2
else
	link_netns_pair "${DPV_COMPAT_NETNS:-dpv}"
	link_addrs 10.205.0 "$veth_a" "$veth_b"
	link_afpacket
	ip_a=10.205.0.11 ip_b=10.205.0.12
fi

failed=0
out_a=$tmp/a.out out_b=$tmp/b.out
case $prog in
rping)
	server=(rping -s -a "$ip_a" -p "$port" "${args[@]}")
	client=(rping -c -a "$ip_a" -p "$port" "${args[@]}")
	;;
ucmatose | udaddy)
	server=("$prog" "${args[@]}")
	client=("$prog" -s "$ip_a" "${args[@]}")
	;;
rdma_server)
	server=(rdma_server -p "$port")
	client=(rdma_client -s "$ip_a" -p "$port")
	;;
rdma_xserver)
	server=(rdma_xserver -p "$port" -c r)
	client=(rdma_xclient -s "$ip_a" -p "$port" -c r)
	;;
esac

t0=$(date +%s%N)
link_start 90 a "$out_a" "${server[@]}"
spid=$last_pid
# The client joins once the server can be: over memif once its socket is there (the
# server's device waits for the link, then listens before the client's device, which
# waits 250 ms after its link came up, sends its REQ); over af_packet once the server's
# port answers ARP (a REQ to a port nobody listens on yet would be rejected).
if [ "$link" = memif ]; then
	wait_until "$spid" test -S "$sock" || fail "the memif socket never came"
else
	wait_until "$spid" arp_answered "$ip_a" || fail "the server's port never answered ARP"
	sleep 0.2
fi
link_start 90 b "$out_b" "${client[@]}"
finish_side "$last_pid" "client (${client[*]})"
finish_side "$spid" "server (${server[*]})"
took_ms=$((($(date +%s%N) - t0) / 1000000))

# rping's data: "rdma-ping-N: " then characters from 'A' + N on, 'z' wrapping to 'A',
# SIZE - 1 bytes in all (SIZE 64 unless -S).
check_rping() { # outfile name prefix
	local count size why
	count=$(opt_of -C 0) size=$(opt_of -S 64)
	why=$(awk -v count="$count" -v size="$size" -v prefix="$3" '
		function want(n,   s, c, i, start) {
			s = "rdma-ping-" n ": "
			start = 65 + n % 58
			c = start
			for (i = length(s); i < size - 1; i++) {
				s = s sprintf("%c", c)
				if (++c > 122) c = 65
			}
			return s
		}
		index($0, prefix) == 1 {
			line = substr($0, length(prefix) + 1)
			if (line != want(n + 0)) { print "ping " n + 0 ": \"" line "\""; bad = 1; exit }
			n++
		}
		END { if (!bad && n != count) print n + 0 " pings printed, not " count }' "$1")
	[ -z "$why" ] || fail "$2: $why"
}

# DPDK's memif says this of every process without a shared configuration
# (--no-shconf, --in-memory): no secondary process can attach, which none does.
complaints=$(grep -Evh '^rte_pmd_memif_probe\(\): Failed to register mp action callback' \
	"$out_a" "$out_b" | grep -Ei 'error|fail|unhandled|dpverbs:' | head -3)
[ -z "$complaints" ] || fail "a side complained: $complaints"

case $prog in
rping)
	if [[ " ${args[*]} " == *" -v "* ]]; then
		check_rping "$out_b" client "ping data: "
		check_rping "$out_a" server "server ping data: "
	fi
	;;
ucmatose | udaddy)
	for f in "$out_a" "$out_b"; do
		if ! grep -q '^test complete' "$f" || ! grep -q '^return status 0' "$f"; then
			fail "$(basename "$f" .out): no \"test complete\" and \"return status 0\""
		fi
	done
	;;
rdma_server)
	grep -q '^rdma_server: end 0' "$out_a" || fail "rdma_server did not end 0"
	grep -q '^rdma_client: end 0' "$out_b" || fail "rdma_client did not end 0"
	;;
rdma_xserver)
	grep -q '^rdma_xserver: end 0' "$out_a" || fail "rdma_xserver did not end 0"
	grep -q '^rdma_xclient: end 0' "$out_b" || fail "rdma_xclient did not end 0"
	;;
esac

# Loss on the link: what the faults dropped and what the CMs sent again for it.
if [ -n "${DPV_FAULTS:-}" ]; then
	dropped=0 mads=0 resent=0
	for f in "${out_a%.out}-dpv0.txt" "${out_b%.out}-dpv0.txt"; do
		if [ ! -s "$f" ]; then
			fail "no counters in $f (DPV_STATS_DUMP)"
			continue
		fi
		dropped=$((dropped + $(counter "$f" faults.tx.dropped) + $(counter "$f" faults.rx.dropped)))
		mads=$((mads + $(counter "$f" xport.tx_gsi)))
		resent=$((resent + $(counter "$f" engine.cm_resent)))
	done
	echo "faults ($DPV_FAULTS): $dropped frames dropped; the CMs sent $mads MADs," \
		"$resent of them again after a wait; both sides done in $took_ms ms"
	[ "$dropped" -gt 0 ] || fail "DPV_FAULTS=$DPV_FAULTS, yet no frame was dropped"
fi

if [ "$failed" != 0 ]; then
	echo "--- server:"; cat "$out_a"
	echo "--- client:"; cat "$out_b"
	exit 1
fi
echo "ok: $prog ${args[*]} over $link, $memory"
