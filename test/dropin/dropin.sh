#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# One unmodified ibverbs-utils program (rdma-core's binaries, as Debian ships them) run
# on the drop-in libibverbs.so.1, on two dpverbs devices in two processes joined by a
# link. Usage:
#
#   dropin.sh LINK MEMORY TCP_PORT PROGRAM [ARGS...]
#
#   LINK      memif     net_memif, server and client on one socket file
#             afpacket  net_af_packet on the two ends of a veth pair, each end in a
#                       network namespace of its own (needs root; exit 77 without it)
#             afxdp     net_af_xdp on the same veth pair, the TCP exchange on a second
#                       pair (needs root; exit 77 without it)
#             pci       two NICs bound to vfio-pci on one Ethernet segment, side A's
#                       DPV_DROPIN_PCI_A and side B's DPV_DROPIN_PCI_B (EAL's -a; exit
#                       77 when they are not set): test/vm runs it in a QEMU guest
#   MEMORY    nohuge    --no-huge --no-shconf
#             huge      --in-memory (hugepages, nothing shared between the processes)
#   TCP_PORT  where a pingpong's server listens for the QP exchange (ibv_devices and
#             ibv_devinfo need one too: an ibv_rc_pingpong holds their link)
#   PROGRAM   ibv_devices, ibv_devinfo, ibv_rc_pingpong, ibv_srq_pingpong, ibv_ud_pingpong,
#             ibv_uc_pingpong
#
# DPV_DROPIN_LIBDIR names the directory of the drop-in (meson sets it). With DPV_FAULTS
# set (a fault spec, doc/guides/configuration.md) both sides run through the faults port
# and dump their counters at exit (DPV_STATS_DUMP); a spec with loss= then also wants
# recovery to show in them: retransmissions on one side or the other, and no WR that
# ran out of retries on either. DPV_DROPIN_NETNS (default dpv) starts the names of the
# network namespaces and veth ends of the veth links, DPV_DROPIN_TMPDIR (default /tmp)
# is where the temporary directory (memif socket, outputs, counters) goes, so that runs
# side by side keep their names apart. The pingpongs run
# as a server (no host name) on side A and a client on side B; ibv_devices and
# ibv_devinfo run on side B while an ibv_rc_pingpong server on side A holds the link,
# released afterwards by a short exchange. Every process must exit 0 and print what the program prints when it really did
# its work (device lines, port attributes, "N bytes in", "N iters in", the peer's GID),
# and nothing that says it did not ("invalid data in page", "Failed status"). On a
# failure both sides' output is printed. Only the processes started here are ended, by
# pid; the temporary directory, EAL's runtime directories, and for the veth links the
# namespaces and the veth pair, are removed on every exit.
#
# DPV_DROPIN_WATCH=1 (with ibv_srq_pingpong) also watches side A the ways a person
# would: its EAL runs telemetry and DPDK's client (dpdk-telemetry.py) reads its device,
# QPs and SRQ while the server waits for its client; its frames go to a pcapng file
# (DPV_CAPTURE) that tshark reads after the run (watch.py says what must be found).

set -u
# The two sides, their link and the clean-up after them (link_*), fail and the rest.
# shellcheck source=../lib/link.sh
. "$(dirname "$0")/../lib/link.sh"

link_args 4 "memif|afpacket|afxdp|pci nohuge|huge TCP_PORT PROGRAM [ARGS...]" "$@"
link=$1 memory=$2 tcp_port=$3 prog=$4
shift 4
args=("$@")

link_libdir
link_need "$prog" ibverbs-utils

link_init "${DPV_DROPIN_TMPDIR:-/tmp}/dpv-dropin.XXXXXX"
prefix_a=dpvdropin-$id-a
prefix_b=dpvdropin-$id-b

# EAL of each side: one core each, no PCI, no telemetry socket, its own file prefix.
link_eal "$memory"
watch=${DPV_DROPIN_WATCH:-0}
if [ "$watch" = 1 ] && [ "$prog" != ibv_srq_pingpong ]; then
	echo "DPV_DROPIN_WATCH wants ibv_srq_pingpong (its SRQ is what it watches)" >&2
	exit 2
fi
telemetry_client=/usr/bin/dpdk-telemetry.py
if [ "$watch" = 1 ] && { [ ! -e "$telemetry_client" ] || ! command -v tshark >/dev/null; }; then
	echo "skipped: watching needs $telemetry_client (dpdk-dev) and tshark"
	exit 77
fi
watch_py=$(dirname "$0")/watch.py

# Side A (the pingpong server) and side B (the client): the command prefix that runs a
# program there, the dpverbs address (GID 0 is its IPv4-mapped form), and for the client
# the host name of the server's TCP listener.
case $link in
memif)
	# Both sides in this network namespace; the control exchange on localhost.
	link_memif
	ip_a=10.77.0.1 ip_b=10.77.0.2
	server_host=localhost
	;;
afpacket | afxdp)
	link_need_root "the $link link needs root (network namespaces, a veth pair)"
	names=${DPV_DROPIN_NETNS:-dpv}
	link_netns_pair "$names"
	ip_a=10.201.0.11 ip_b=10.201.0.12
	if [ "$link" = afpacket ]; then
		# Two addresses on each end of the link, one subnet: the kernel's, for the
		# pingpongs' TCP exchange of QP numbers and GIDs, and a different one for
		# dpverbs (DPV_PORT_IPV4), which answers ARP for it itself. The kernel would
		# answer ARP for its own address and take UDP 4791 sent to it; for dpverbs'
		# address it does neither (no address of its own, and a namespace does not
		# forward), so RoCEv2 frames reach only dpverbs, which gets a copy of every
		# frame of the port, while TCP reaches only the kernel (dpverbs drops what is
		# not RoCEv2 to its address). Both share one real kernel path.
		link_addrs 10.201.0 "$veth_a" "$veth_b"
		# The packet socket's rings hold 4096 frames, not the default 512. What overflows
		# the RX ring the kernel drops, and the transport resends it, but
		# ibv_srq_pingpong's 16 QPs send 64-packet messages in bursts that overflow 512
		# frames, and its client exits right after its last completion: a late drop of
		# its last ACKs leaves the server resending to QPs that are gone, and failing
		# with RETRY_EXC_ERR (reliability.md, Limits). The fault cases test loss on
		# purpose, and allow for that one ending.
		link_afpacket
	else
		# af_xdp's XDP program sends every frame of the queue to its socket, so the
		# kernel sees nothing of that link: the TCP exchange takes a second veth pair
		# with kernel addresses only.
		link_veth "${names}${id}c" "${names}${id}d" || exit 1
		link_addrs 10.202.0 "${names}${id}c" "${names}${id}d"
		vdev_a="--vdev=net_af_xdp0,iface=$veth_a,start_queue=0,queue_count=1"
		vdev_b="--vdev=net_af_xdp0,iface=$veth_b,start_queue=0,queue_count=1"
	fi
	;;
pci)
	# Each side probes its own NIC by PCI address (and no other: -a); the TCP exchange
	# on localhost.
	if [ -z "${DPV_DROPIN_PCI_A:-}" ] || [ -z "${DPV_DROPIN_PCI_B:-}" ]; then
		echo "skipped: the pci link wants DPV_DROPIN_PCI_A and DPV_DROPIN_PCI_B, two NICs bound to vfio-pci"
		exit 77
	fi
	eal_common=${eal_common/--no-pci /}
	vdev_a="-a $DPV_DROPIN_PCI_A" vdev_b="-a $DPV_DROPIN_PCI_B"
	run_a=() run_b=()
	ip_a=10.204.0.1 ip_b=10.204.0.2
	server_host=localhost
	;;
*)
	echo "link $link: want memif, afpacket, afxdp or pci" >&2
	exit 2
	;;
esac

# A program on one side, in the background, bounded by a timeout.
start_side() { # side seconds outfile program args...
	local side=$1 secs=$2 out=$3 side_eal side_ip side_run=() side_env=()
	shift 3
	link_side "$side"
	if [ "$side" = a ]; then
		# Side B starts once side A's program listens, which a pingpong server does
		# after opening its device: side A's open must not wait for the link (a memif
		# server's comes up when side B joins). test/compat/perftest.sh runs programs
		# that need the wait.
		side_run+=(env DPV_LINK_WAIT_MS=0)
		if [ "$watch" = 1 ]; then
			side_eal=${side_eal/--no-telemetry /}
			side_env=(DPV_CAPTURE="${out%.out}.pcapng")
		fi
	fi
	# Each side's counters go to $tmp/<out>-dpv0.txt at exit.
	link_run "$secs" "$out" "$@"
}

failed=0

expect() { # file name regex
	grep -Eq -- "$3" "$1" || fail "$2: no line matching '$3'"
}

refuse() { # file name regex
	! grep -Eq -- "$3" "$1" || fail "$2: printed '$(grep -Em1 -- "$3" "$1")'"
}

ipre() { echo "${1//./\\.}"; }

out_a=$tmp/a.out out_b=$tmp/b.out
if [ "$tcp_port" = 0 ]; then
	echo "every program needs a TCP port (the pingpongs' exchange, the peer's hold)" >&2
	exit 2
fi

# A pingpong server on side A and, once it listens, its client on side B; both waited
# for. The server holds the link: it opens its device, then waits in accept().
pingpong_server() { # outfile args...
	local out=$1
	shift
	# Someone else's listener would take our client's connection.
	if listening; then
		fail "TCP port $tcp_port is already in use"
		return 1
	fi
	start_side a 90 "$out" "$@" -p "$tcp_port"
	server_pid=$last_pid
	wait_until "$server_pid" listening && return 0
	fail "the server never listened on TCP port $tcp_port"
	finish_side "$server_pid" "server ($*)"
	return 1
}

pingpong_client() { # outfile args...
	local out=$1
	shift
	start_side b 60 "$out" "$@" -p "$tcp_port" "$server_host"
	finish_side "$last_pid" "client ($* $server_host)"
	# The server finishes with its client; one that does not in 30 s has hung (or
	# waits for a client that never connected) and is ended.
	wait_exit "$server_pid" 300 || { kill "$server_pid" 2>/dev/null &&
		fail "server still running 30 s after its client ended: ended it"; }
	finish_side "$server_pid" "server ($*)"
}

# What a pingpong side must have printed: the peer's GID 0 (-g 0), the transfer lines
# of the size and count asked for (the programs' defaults otherwise).
check_pingpong() { # outfile name peer-ip program args...
	local out=$1 name=$2 peer=$3 prog=$4 size=4096 iters=1000 i
	shift 4
	[ "$prog" = ibv_ud_pingpong ] && size=2048
	set -- "$@" ""
	for ((i = 1; i < $#; i++)); do
		case ${!i} in
		-s) size=${*:i+1:1} ;;
		-n) iters=${*:i+1:1} ;;
		esac
	done
	expect "$out" "$name" "^  remote address: .*GID ::ffff:$(ipre "$peer")\$"
	# (ibv_srq_pingpong counts its -n exchanges over all its QPs together.)
	expect "$out" "$name" "^$((size * iters * 2)) bytes in [0-9.]+ seconds"
	expect "$out" "$name" "^$iters iters in [0-9.]+ seconds"
	refuse "$out" "$name" 'invalid data in page|Failed status|Couldn'"'"'t|failed'
}

# Loss on the link: both sides' dumps must show that the transport recovered from it.
check_recovery() { # outfile-a outfile-b
	local a=${1%.out}-dpv0.txt b=${2%.out}-dpv0.txt f retrans=0 dropped=0 v lingered=0
	for f in "$a" "$b"; do
		if [ ! -s "$f" ]; then
			fail "no counters in $f (DPV_STATS_DUMP)"
			return
		fi
		# Every cause of a resend that answers a loss (an RNR wait is not one).
		v=$(awk '$1 ~ /^qp\.retrans_/ && $1 != "qp.retrans_packets" &&
			$1 != "qp.retrans_rnr" { s += $2 } END { print s + 0 }' "$f")
		retrans=$((retrans + v))
		dropped=$((dropped + $(counter "$f" faults.tx.dropped) + $(counter "$f" faults.rx.dropped)))
		v=$(counter "$f" qp.retry_exceeded)
		[ "$v" = 0 ] || fail "$f: qp.retry_exceeded $v"
		lingered=$((lingered + $(counter "$f" xport.linger_acks)))
	done
	echo "recovery: faults dropped $dropped frames, the QPs resent $retrans times" \
		"($(grep -h '^qp.retrans_' "$a" "$b" | awk '{ s[$1] += $2 } END { for (k in s) printf "%s=%d ", k, s[k] }'))," \
		"destroyed QPs acknowledged $lingered resends again (xport.linger_acks)"
	[ "$dropped" -gt 0 ] || fail "DPV_FAULTS=$DPV_FAULTS, yet no frame was dropped"
	[ "$retrans" -gt 0 ] || fail "frames were lost, yet no QP counted a retransmission"
}

# The one way a pingpong may still fail under loss with every part of dpverbs right:
# the last ACK one side sent was lost, and its peer, which had all it waited for,
# destroyed its QPs and exited. The destroyed QPs linger (doc/guides/reliability.md,
# "Lingering QPs"): they acknowledge the other side's resends again for about twice
# their ACK timeout, and the process waits for them at exit. A resend that comes only
# after that (its sender held off its core that long, on a loaded host) reaches a QP
# that is no more (IBTA drops such a packet, as dpverbs does, counting it in
# xport.rx_unknown_qp), and its WR ends with RETRY_EXC_ERR. The peer's counters show
# it: resends that came for no QP. Sets race to what was seen.
end_race() {
	local x y unknown
	for x in a b; do
		y=b
		[ "$x" = b ] && y=a
		unknown=$(counter "$tmp/$y-dpv0.txt" xport.rx_unknown_qp)
		if grep -q 'retry counter exceeded' "$tmp/$x.out" &&
			grep -Eq '^[0-9]+ iters in' "$tmp/$y.out" && [ "$unknown" -gt 0 ]; then
			race="side $x ran out of retries after side $y had finished; $unknown of its frames reached side $y for no QP"
			return 0
		fi
	done
	return 1
}

case $prog in
ibv_devices | ibv_devinfo)
	# The program runs on side B while side A's device is up and holds the link (a
	# memif client cannot even start without its server); the holder is an
	# ibv_rc_pingpong server, released afterwards by a short exchange.
	hold=(ibv_rc_pingpong -g 0 -n 4 -s 1024)
	if pingpong_server "$tmp/hold-a.out" "${hold[@]}"; then
		start_side b 60 "$out_b" "$prog_path" "${args[@]}"
		finish_side "$last_pid" "side B ($prog ${args[*]})"
		pingpong_client "$tmp/hold-b.out" "${hold[@]}"
		check_pingpong "$tmp/hold-a.out" "holder (server)" "$ip_b" "${hold[@]}"
		check_pingpong "$tmp/hold-b.out" "holder release (client)" "$ip_a" "${hold[@]}"
	fi
	name="side B ($prog ${args[*]})"
	if [ "$prog" = ibv_devices ]; then
		# One device, dpv0, with the node GUID dpverbs derives from the MAC (known
		# before the device is opened, as from rdma-core's sysfs).
		expect "$out_b" "$name" '^[[:space:]]+device[[:space:]]+node GUID$'
		expect "$out_b" "$name" '^[[:space:]]+dpv0[[:space:]]+[0-9a-f]{16}$'
		refuse "$out_b" "$name" '^[[:space:]]+dpv0[[:space:]]+0{16}$'
		refuse "$out_b" "$name" '^[[:space:]]+dpv1[[:space:]]'
	else
		expect "$out_b" "$name" $'^hca_id:\tdpv0$'
		expect "$out_b" "$name" $'^\ttransport:\t+InfiniBand \\(0\\)$'
		expect "$out_b" "$name" $'^\tfw_ver:\t+dpverbs '
		expect "$out_b" "$name" $'^\tphys_port_cnt:\t+1$'
		expect "$out_b" "$name" $'^\t+state:\t+PORT_ACTIVE \\(4\\)$'
		expect "$out_b" "$name" $'^\t+active_mtu:\t+(256|512|1024|2048|4096) '
		expect "$out_b" "$name" $'^\t+link_layer:\t+Ethernet$'
		refuse "$out_b" "$name" '^hca_id:.dpv1'
		if [[ " ${args[*]} " == *" -v "* ]]; then
			expect "$out_b" "$name" $'^\tmax_qp:\t+[1-9]'
			expect "$out_b" "$name" $'^\tmax_srq:\t+[1-9]'
			expect "$out_b" "$name" $'^\tmax_num_tags:\t+[1-9]'
			expect "$out_b" "$name" $'^\t+GID\\[  0\\]:\t+::ffff:'"$(ipre "$ip_b")"', RoCE v2$'
		fi
	fi
	;;
ibv_rc_pingpong | ibv_srq_pingpong | ibv_ud_pingpong | ibv_uc_pingpong)
	# With loss, up to 3 runs: another one only after a run that ended in the race
	# end_race() describes, which is the programs' and not dpverbs'.
	for attempt in 1 2 3; do
		failed=0
		if pingpong_server "$out_a" "$prog_path" "${args[@]}"; then
			if [ "$watch" = 1 ]; then
				/usr/bin/python3 "$watch_py" telemetry "$telemetry_client" "$prefix_a" \
					"$out_a" "$(opt_of -r 500)" "$(opt_of -q 16)" || failed=1
			fi
			pingpong_client "$out_b" "$prog_path" "${args[@]}"
		fi
		if [ "$watch" = 1 ] && [ "$failed" = 0 ]; then
			/usr/bin/python3 "$watch_py" capture "$tmp/a.pcapng" "$tmp/a-dpv0.txt" \
				dpv0 "$(opt_of -n 1000)" "$(opt_of -s 4096)" 1024 || failed=1
		fi
		check_pingpong "$out_a" server "$ip_b" "$prog" "${args[@]}"
		check_pingpong "$out_b" client "$ip_a" "$prog" "${args[@]}"
		if [[ "${DPV_FAULTS:-}" == *loss=* ]]; then
			check_recovery "$out_a" "$out_b"
			if [ "$failed" != 0 ] && [ "$attempt" -lt 3 ] && end_race; then
				echo "run $attempt ended in the end-of-run race (the FAIL lines above):" \
					"$race; running again"
				# What the devices did, for a run that passes in the end too: how
				# many QPs lingered and answered, and when the resends came.
				for f in a b; do
					echo "---- $f, run $attempt: its device's counters, those not 0"
					nonzero_counters "$tmp/$f-dpv0.txt"
				done
				for f in a b; do
					mv "$tmp/$f.out" "$tmp/$f.run$attempt.out"
					mv "$tmp/$f-dpv0.txt" "$tmp/$f.run$attempt-dpv0.txt" 2>/dev/null
				done
				# A memif server that failed left its socket file behind.
				[ "$link" = memif ] && rm -f "$sock"
				continue
			fi
		fi
		break
	done
	;;
*)
	echo "program $prog: not one of the six ibverbs-utils programs" >&2
	exit 2
	;;
esac

if [ "$failed" != 0 ] && [ "$link" = afxdp ] &&
	grep -qs 'failed to initialize net_af_xdp' "$tmp"/*.out; then
	# Not every kernel or container lets a process attach XDP programs.
	echo "skipped: net_af_xdp does not start here:"
	grep -hs -B3 'failed to initialize net_af_xdp' "$tmp"/*.out | head -20
	exit 77
fi
if [ "$failed" != 0 ]; then
	for f in hold-a a hold-b b a.run1 b.run1 a.run2 b.run2; do
		[ -e "$tmp/$f.out" ] || continue
		case ${f%%.*} in
		*a) echo "==== $f: side A, $ip_a, $link ${run_a[*]}" ;;
		*b) echo "==== $f: side B, $ip_b, $link ${run_b[*]}" ;;
		esac
		cat "$tmp/$f.out"
		if [ -s "$tmp/$f-dpv0.txt" ]; then
			echo "---- $f: its device's counters, those not 0"
			nonzero_counters "$tmp/$f-dpv0.txt"
		fi
	done
	exit 1
fi
echo "ok: $prog ${args[*]} over $link ($memory)${DPV_FAULTS:+ with DPV_FAULTS=$DPV_FAULTS}"
grep -E '^[0-9]+ (bytes|iters) in|state:|^[[:space:]]+dpv0[[:space:]]' "$tmp"/*.out | sed "s|^$tmp/||"
exit 0
