#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# A program of Debian's perftest, unmodified, on the drop-in libibverbs.so.1: its server
# in one dpverbs process, its client in another, each with a device of its own. Usage:
#
#   perftest.sh LINK MEMORY START TCP_PORT PROGRAM [ARGS...]
#
#   LINK      memif     net_memif between two processes of this network namespace, the
#                       perftest server on the memif server's side; perftest's TCP
#                       exchange on localhost
#             afpacket  net_af_packet on a veth pair, one end in each of two network
#                       namespaces (needs root: skipped without it), so frames cross
#                       the kernel; the exchange on the kernel's addresses of the pair
#   MEMORY    nohuge (--no-huge --no-shconf) or huge (--in-memory, hugepages)
#   START     now   the client starts as soon as the server can be joined: over memif
#                   once its socket exists, while the server's program goes on to
#                   ibv_open_device(), which waits for the link (DPV_LINK_WAIT_MS; a
#                   client turned away by a port not started yet connects again);
#                   over af_packet once it listens
#             late  the same, 3 s later: a memif server's device waits that long
#   TCP_PORT  perftest's exchange (-p)
#   PROGRAM   ib_send_lat, ib_send_bw, ib_write_lat, ib_write_bw, ib_read_lat,
#             ib_read_bw, ib_atomic_lat, ib_atomic_bw (8 bytes each, whatever -s
#             says); ARGS the same on both sides, as perftest wants
#
# The client always starts after its server: perftest's client connects to the server
# once, right after checking its port, and stops with "Couldn't connect" when nobody
# listens yet, on any device.
#
# What must hold: both sides exit 0 within their time; the header each prints names the
# connection type (-c) and SRQ (--use-srq) asked for; the client prints one result line
# for every size asked for (-a: 2 bytes to 8 MiB, for UD to the port's MTU that perftest
# prints; else -s, or perftest's default, cut to the MTU for UD), with the iteration count
# of -n; so does ib_send_bw's server, and ib_write_bw's, ib_read_bw's and
# ib_atomic_bw's print the client's result of the last size; every figure is a number (a latency test's standard
# deviation of a few samples may be "-nan", perftest's arithmetic), message rate above
# 0 and bandwidth agreeing with it (MiB/s = Mpps x bytes / 1.048576, within the rounding
# of the printed digits, so above 0 wherever two decimals can show it), latencies above 0 and ordered (min <=
# typical, average <= max, min <= 99 % <= 99.9 % <= max); and no line says "error",
# "failed", "couldn't" or "unable", nor dpverbs complains ("dpverbs: ...").
# perftest 4.5 has no check of the data it moves. On failure both outputs are shown and
# the device counters that are not 0 (DPV_STATS_DUMP).
#
# perftest links Debian's libmlx5.so.1 and libefa.so.1, which load on the drop-in's
# provider interface (lib/verbs/verbs_private.c). The server side of ib_write_bw,
# ib_read_bw and ib_read_lat never calls verbs while the test runs, yet its device must
# ACK the WRITEs and answer the READs: inline progress does that with its helper thread
# (DPV_INLINE_IDLE_US); without it the client ends with "Failed status 12" (retry
# exceeded).
#
# DPV_DROPIN_LIBDIR is the drop-in's directory, DPV_RDMACM_LIBDIR the drop-in
# librdmacm's (for -R and -z: rdma_cm). DPV_COMPAT_NETNS (default
# DPV_DROPIN_NETNS, as test/dropin/dropin.sh and ucx.sh name theirs, else dpv) starts
# the names of the namespaces and veth ends, DPV_COMPAT_TMPDIR (default /tmp) is where
# the temporary directory (memif socket, outputs) goes. Only the processes started here
# are ended, by pid; the namespaces (and with them the veth pair), the temporary
# directory and EAL's runtime directories are removed on every exit.

set -u
# The two sides, their link and the clean-up after them (link_*), fail and the rest.
# shellcheck source=../lib/link.sh
. "$(dirname "$0")/../lib/link.sh"

link_args 5 "memif|afpacket nohuge|huge now|late TCP_PORT PROGRAM [ARGS...]" "$@"
link=$1 memory=$2 start=$3 tcp_port=$4 prog=$5
shift 5
args=("$@")

link_libdir
case $prog in
ib_send_lat | ib_send_bw | ib_write_lat | ib_write_bw | ib_read_lat | ib_read_bw) ;;
ib_atomic_lat | ib_atomic_bw) ;;
*) echo "program $prog: not one of perftest's send, write, read and atomic tests" >&2; exit 2 ;;
esac
link_need "$prog" perftest
link_eal "$memory"
case $start in
now) delay=0 ;;
late) delay=3 ;;
*) echo "start $start: want now or late" >&2; exit 2 ;;
esac
case $link in
memif) ;;
afpacket) link_need_root "the afpacket link needs root (network namespaces, a veth pair)" ;;
*) echo "link $link: want memif or afpacket" >&2; exit 2 ;;
esac

link_init "${DPV_COMPAT_TMPDIR:-/tmp}/dpv-perftest.XXXXXX"
prefix_a=dpvperftest-$id-a prefix_b=dpvperftest-$id-b

if [ "$link" = memif ]; then
	link_memif
	ip_a=10.204.0.1 ip_b=10.204.0.2
	server_host=localhost
else
	# The kernel's addresses carry perftest's TCP exchange; dpverbs answers ARP for its
	# own (test/dropin/dropin.sh says why the two differ). 4096 frames per packet ring,
	# not 512: a bandwidth test has up to 128 messages of 64 frames in flight, and what
	# overflows the ring is lost and sent again.
	link_netns_pair "${DPV_COMPAT_NETNS:-${DPV_DROPIN_NETNS:-dpv}}"
	link_addrs 10.203.0 "$veth_a" "$veth_b"
	link_afpacket
	ip_a=10.203.0.11 ip_b=10.203.0.12
fi

failed=0

# Whether the server can be joined: the memif socket exists, or perftest listens. With
# -R (connect through rdma_cm) or -z (exchange through it), on the drop-in librdmacm,
# there is no TCP socket to look for: its port answers ARP once its device is open,
# and its id listens right after.
rdma_cm=0
for a in "${args[@]}"; do
	case $a in -R | -z) rdma_cm=1 ;; esac
done
# perftest links librdmacm: with -R or -z it must be the drop-in's (DPV_RDMACM_LIBDIR).
if [ "$rdma_cm" = 1 ]; then
	[ -e "${DPV_RDMACM_LIBDIR:-}/librdmacm.so.1" ] ||
		{ echo "-R, -z: no DPV_RDMACM_LIBDIR/librdmacm.so.1" >&2; exit 2; }
	libdir=$DPV_RDMACM_LIBDIR:$libdir
	# The exchange goes over the RDMA CM too: the client names the server's dpverbs
	# address, which its device's ARP resolves.
	server_host=$ip_a
fi
joinable() {
	if [ "$link" = memif ]; then
		[ -S "$sock" ]
	elif [ "$rdma_cm" = 1 ]; then
		arp_answered "$ip_a" && sleep 0.2
	else
		listening
	fi
}

# With -R, perftest 4.5's two sides meet over TCP first and only then go to rdma_cm:
# the server to rdma_listen, the client straight to rdma_connect. A REQ that arrives
# before the listen is rejected, reason 8 (invalid service ID), by dpverbs' CM as by the
# kernel's (for UD, a SIDR_REQ is answered with status 1, service ID not supported:
# RDMA_CM_EVENT_UNREACHABLE, error 1); perftest's client then tries again on the ids it
# has just destroyed, and crashes (later perftest makes new ones), while its server
# waits for ever. Its first
# meeting, with -R through rdma_cm too, can be rejected the same way when the server's
# listen comes later than joinable() thinks ("Unexpected CM event bl blka 8", 8 being
# RDMA_CM_EVENT_REJECTED). On exactly those three lines in the client's output the pair
# runs again, up to 3 times in all: the race is perftest's, and nothing else that goes
# wrong is run again.
out_a=$tmp/a.out out_b=$tmp/b.out
for ((attempt = 1; ; attempt++)); do
	link_start 120 a "$out_a" "$prog_path" "${args[@]}" -p "$tcp_port"
	server=$last_pid
	wait_until "$server" joinable
	joinable || fail "the server never became joinable (memif socket, or TCP port $tcp_port)"
	sleep "$delay"
	link_start 120 b "$out_b" "$prog_path" "${args[@]}" -p "$tcp_port" "$server_host"
	client=$last_pid
	wait "$client"
	rc=$?
	link_forget "$client"
	if [ "$rc" != 0 ] && [ "$rdma_cm" = 1 ] && [ "$attempt" -lt 3 ] &&
		grep -Eq '^Event: RDMA_CM_EVENT_(REJECTED; error: 8|UNREACHABLE; error: 1)\.$|^Unexpected CM event bl blka 8$' \
			"$out_b"; then
		echo "note: attempt $attempt: the client's REQ came before the server's rdma_listen (no listener); again"
		link_stop "$server"
		[ "$link" = memif ] && rm -f "$sock"
		continue
	fi
	side_status "$rc" "client ($prog ${args[*]})"
	finish_side "$server" "server ($prog ${args[*]})"
	break
done

# What was asked for, with perftest's defaults.
conn=RC srq=OFF all=0 size='' iters=1000
set -- "${args[@]}" ""
for ((i = 1; i < $#; i++)); do
	next=${*:i+1:1}
	case ${!i} in
	-c) conn=$next ;;
	--connection=*) conn=${!i#*=} ;;
	--use-srq) srq=ON ;;
	-a | --all) all=1 ;;
	-s) size=$next ;;
	--size=*) size=${!i#*=} ;;
	-n) iters=$next ;;
	--iters=*) iters=${!i#*=} ;;
	esac
done
# An XRC connection receives through an XRC SRQ: perftest says so.
[ "$conn" = XRC ] && srq=ON
if [ -z "$size" ]; then
	size=2
	[[ $prog == *_bw ]] && size=65536
fi
# An atomic is 8 bytes, whatever -s says.
[[ $prog == ib_atomic_* ]] && size=8
mtu=$(sed -En 's/^ *Mtu *: *([0-9]+)\[B\].*/\1/p' "$out_b" | head -1)
sizes=()
if [ "$all" = 1 ]; then
	for ((s = 2; s <= 8388608; s *= 2)); do
		[ "$conn" = UD ] && [ -n "$mtu" ] && [ "$s" -gt "$mtu" ] && break
		sizes+=("$s")
	done
else
	[ "$conn" = UD ] && [ -n "$mtu" ] && [ "$size" -gt "$mtu" ] && size=$mtu
	sizes=("$size")
fi

# The result lines of one side, checked with awk: every size once, in order, nothing else.
check_table() { # outfile name kind(bw|lat) sizes...
	local out=$1 name=$2 kind=$3 why
	shift 3
	why=$(awk -v kind="$kind" -v iters="$iters" -v want="$*" '
		function num(x) { return x ~ /^[0-9]+(\.[0-9]+)?$/ }
		function bad(msg) { if (err == "") err = msg }
		/^ *#bytes/ { header = 1; next }
		header && /^ *[0-9]+ +[0-9]+ / {
			if (n++ && $1 + 0 <= prev) bad($1 " bytes after " prev ": sizes out of order")
			prev = $1 + 0
			if (!($1 in wanted)) bad("a line for " $1 " bytes, not asked for")
			else if (seen[$1]++) bad("two lines for " $1 " bytes")
			if ($2 != iters) bad($1 " bytes: " $2 " iterations, not " iters)
			# The standard deviation of a few samples may come out as "-nan"
			# (perftest takes the root of a rounding error below 0).
			for (f = 3; f <= NF; f++)
				if (!num($f) && !(kind == "lat" && f == 7 && $f ~ /^-?nan$/))
					bad($1 " bytes: field " f " is \"" $f "\"")
			if (kind == "bw") {
				if (NF != 5) bad($1 " bytes: " NF " fields, not 5")
				# peak, average (MiB/s), message rate (Mpps, 6 decimals)
				# 2 bytes at a few thousand messages a second is "0.00" MiB/s:
				# above 0 is for the rate to show, the bandwidth must agree with it.
				if ($4 < 0 || $5 <= 0) bad($1 " bytes: bandwidth " $4 ", rate " $5)
				lo = ($5 - 0.0000005) * $1 / 1.048576 - 0.005
				hi = ($5 + 0.0000005) * $1 / 1.048576 + 0.005
				if ($4 < lo || $4 > hi)
					bad($1 " bytes: " $4 " MiB/s disagrees with " $5 " Mpps")
			} else {
				if (NF != 9) bad($1 " bytes: " NF " fields, not 9")
				# min max typical average stdev 99% 99.9%
				if ($3 <= 0) bad($1 " bytes: t_min " $3)
				if ($3 > $5 || $5 > $4 || $3 > $6 || $6 > $4 || $3 > $8 ||
				    $8 > $9 || $9 > $4)
					bad($1 " bytes: latencies out of order: " $0)
			}
			next
		}
		BEGIN { k = split(want, w, " "); for (i = 1; i <= k; i++) wanted[w[i]] = 1 }
		END {
			for (i = 1; i <= k; i++) if (!(w[i] in seen)) bad("no line for " w[i] " bytes")
			if (!header) bad("no result table")
			print err
		}' "$out")
	[ -z "$why" ] || fail "$name: $why"
}

# The header must say what was asked: a connection type or SRQ perftest did not take
# would change what was measured.
for f in "$out_a" "$out_b"; do
	name=server
	[ "$f" = "$out_b" ] && name=client
	grep -Eq "Connection type : $conn([[:space:]]|$)" "$f" ||
		fail "$name: no \"Connection type : $conn\" in its header"
	grep -Eq "Using SRQ +: $srq([[:space:]]|$)" "$f" || fail "$name: no \"Using SRQ : $srq\" in its header"
	# DPDK's memif, in a process without a multi-process channel (--no-shconf,
	# --in-memory), says once that it cannot offer one: nothing here needs it.
	bad=$(grep -Ei 'error|fail|couldn.t|unable|^dpverbs: ' "$f" |
		grep -v 'rte_pmd_memif_probe(): Failed to register mp action callback: Operation not supported' |
		head -1)
	[ -z "$bad" ] || fail "$name: $bad"
done
kind=lat
[[ $prog == *_bw ]] && kind=bw
check_table "$out_b" client "$kind" "${sizes[@]}"
# A bandwidth test's server prints the table too: ib_send_bw's its own measure of every
# size, ib_write_bw's and ib_read_bw's (which move data without its CPU) the client's
# result of the last size only.
case $prog in
ib_send_bw) check_table "$out_a" server bw "${sizes[@]}" ;;
ib_write_bw | ib_read_bw | ib_atomic_bw) check_table "$out_a" server bw "${sizes[-1]}" ;;
esac

if [ "$failed" != 0 ]; then
	for side in a b; do
		if [ "$side" = a ]; then
			echo "==== side A (server), $ip_a, $link"
		else
			echo "==== side B (client), $ip_b, $link"
		fi
		cat "$tmp/$side.out"
		if [ -s "$tmp/$side-dpv0.txt" ]; then
			echo "---- its device's counters, those not 0"
			nonzero_counters "$tmp/$side-dpv0.txt"
		fi
	done
	exit 1
fi
echo "ok: $prog ${args[*]} over $link ($memory, client started $start)"
grep -E '^ *#bytes' "$out_b" | head -1
awk '/^ *#bytes/ { h = 1; next } h && /^ *[0-9]+ +[0-9]+ / { print }' "$out_b"
exit 0
