#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Tag-matching rendezvous between two dpverbs processes (rndv_peer.c says what is sent
# and checked): the receiver, with its TM SRQ, on side A, the sender on side B, each on
# the drop-in libibverbs.so.1 with a device of its own. Usage:
#
#   rndv.sh PEER LINK MEMORY TCP_PORT [rndv_peer options...]
#
#   PEER      the rndv_peer program
#   LINK      memif     net_memif, server and client on one socket file, one namespace
#             afpacket  net_af_packet on a veth pair, each end in a network namespace of
#                       its own (needs root; exit 77 without it)
#   MEMORY    nohuge (--no-huge --no-shconf) or huge (--in-memory, hugepages)
#   TCP_PORT  where the receiver listens for the exchange of QP numbers and credits
#
# DPV_DROPIN_LIBDIR names the drop-in's directory (meson sets it). Both sides dump their
# counters at exit (DPV_STATS_DUMP): the receiver's xport.tm_rndv_reads and
# tm_rndv_bytes must be the rendezvous its device read and their bytes, as the program
# counted them, and xport.tm_rndv_failed 0 on both sides. With DPV_FAULTS set,
# both devices run through the faults port; a spec with loss= also wants recovery to
# show in both sides' counters (DPV_STATS_DUMP): frames dropped, retransmissions, and
# no WR that ran out of retries (qp.retry_exceeded, qp.rnr_retry_exceeded). With
# RNDV_EXPECT_FAIL=REGEX the run must fail instead, and the receiver's output match
# REGEX (the program's own checks are shown to catch what they look for). Both sides
# must exit 0 and print their "ok:" line; on a failure both outputs, and their
# counters that are not 0, are printed. Only processes started here are ended, by pid;
# the temporary directory, EAL's runtime directories and the namespaces are removed on
# every exit.

set -u
# shellcheck source=../lib/link.sh
. "$(dirname "$0")/../lib/link.sh"

link_args 4 "PEER memif|afpacket nohuge|huge TCP_PORT [rndv_peer options...]" "$@"
peer=$1 link=$2 memory=$3 tcp_port=$4
shift 4
args=("$@")

link_libdir

link_init /tmp/dpvrp-rndv.XXXXXX
prefix_a=dpvrp-$id-a
prefix_b=dpvrp-$id-b
link_eal "$memory"

case $link in
memif)
	link_memif
	ip_a=10.77.3.1 ip_b=10.77.3.2
	server_host=127.0.0.1
	;;
afpacket)
	link_need_root "the afpacket link needs root (network namespaces, a veth pair)"
	link_netns_pair dpvrp
	# The kernel's addresses carry the TCP exchange, dpverbs' own (one subnet, not
	# the kernel's) the RoCEv2 frames: test/dropin/dropin.sh says why.
	ip_a=10.203.0.11 ip_b=10.203.0.12
	link_addrs 10.203.0 "$veth_a" "$veth_b"
	link_afpacket
	;;
*)
	echo "link $link: want memif or afpacket" >&2
	exit 2
	;;
esac

failed=0
out_a=$tmp/a.out out_b=$tmp/b.out

if listening; then
	echo "TCP port $tcp_port is already in use"
	exit 1
fi
start=$(date +%s.%N)
# The receiver opens its device without waiting for the link (a memif server's comes up
# when the client joins), then listens; the sender starts once it does. Each is ended
# after 200 s, beyond the program's own watchdog (-t), which says what was missing.
side_eal='' side_ip='' side_run=() side_env=()
link_side a
side_run+=(env DPV_LINK_WAIT_MS=0)
link_run 200 "$out_a" "$peer" -p "$tcp_port" "${args[@]}"
recv_pid=$last_pid
if wait_until "$recv_pid" listening; then
	link_side b
	link_run 200 "$out_b" "$peer" -p "$tcp_port" "${args[@]}" "$server_host"
	finish_side "$last_pid" "the sender"
else
	fail "the receiver never listened on TCP port $tcp_port"
fi
finish_side "$recv_pid" "the receiver"
secs=$(echo "$(date +%s.%N) $start" | awk '{ printf "%.1f", $1 - $2 }')

for f in "$out_a" "$out_b"; do
	grep -q '^FAIL' "$f" && failed=1
done
if [ -n "${RNDV_EXPECT_FAIL:-}" ]; then
	if [ "$failed" = 0 ]; then
		echo "FAIL: the run passed, yet it was to fail with '$RNDV_EXPECT_FAIL'"
		cat "$out_a" "$out_b"
		exit 1
	fi
	if ! grep -Eq -- "$RNDV_EXPECT_FAIL" "$out_a"; then
		echo "FAIL: the run failed, but the receiver did not say '$RNDV_EXPECT_FAIL'"
		cat "$out_a" "$out_b"
		exit 1
	fi
	echo "ok: the run failed as it had to:"
	grep -h '^FAIL' "$out_a" "$out_b"
	exit 0
fi
grep -q '^receiver: ok:' "$out_a" || fail "the receiver did not print its ok line"
grep -q '^sender: ok:' "$out_b" || fail "the sender did not print its ok line"

# The receiver's device counted the rendezvous it read, and their bytes, as the program
# saw them end (doc/guides/reliability.md, Counters); none may have failed on either.
if [ "$failed" = 0 ] && [ -s "$tmp/a-dpv0.txt" ]; then
	rndv_counted "$out_a" "$tmp/a-dpv0.txt"
	for s in a b; do
		v=$(counter "$tmp/$s-dpv0.txt" xport.tm_rndv_failed)
		[ "$v" = 0 ] || fail "side $s: xport.tm_rndv_failed $v"
	done
fi

# Loss on the link: both sides' counters must show that the transport recovered.
if [[ "${DPV_FAULTS:-}" == *loss=* ]]; then
	dropped=0 retrans=0
	for f in "$tmp/a-dpv0.txt" "$tmp/b-dpv0.txt"; do
		if [ ! -s "$f" ]; then
			fail "no counters in $f (DPV_STATS_DUMP)"
			continue
		fi
		dropped=$((dropped + $(counter "$f" faults.tx.dropped) + $(counter "$f" faults.rx.dropped)))
		# Resends that answer a loss (an RNR wait is not one).
		retrans=$((retrans + $(awk '$1 ~ /^qp\.retrans_/ && $1 != "qp.retrans_packets" &&
			$1 != "qp.retrans_rnr" { s += $2 } END { print s + 0 }' "$f")))
		for c in qp.retry_exceeded qp.rnr_retry_exceeded; do
			v=$(counter "$f" "$c")
			[ "$v" = 0 ] || fail "$(basename "$f"): $c $v"
		done
	done
	[ "$dropped" -gt 0 ] || fail "DPV_FAULTS=$DPV_FAULTS, yet no frame was dropped"
	[ "$retrans" -gt 0 ] || fail "frames were lost, yet no QP counted a retransmission"
	shown='^qp\.(retrans_|retry_exceeded|rnr_retry_exceeded|ack_timeouts|seq_naks_sent|'
	shown+='rnr_naks_sent|dup_requests|dup_responses)'
	for s in a b; do
		f=$tmp/$s-dpv0.txt
		echo "side $s counters: faults dropped tx $(counter "$f" faults.tx.dropped)" \
			"rx $(counter "$f" faults.rx.dropped);" \
			"$(grep -E "$shown" "$f" | awk '{ printf "%s=%s ", $1, $2 }')"
	done
fi

if [ "$failed" != 0 ]; then
	for s in a b; do
		case $s in
		a) echo "==== side A (the receiver), $ip_a, $link" ;;
		b) echo "==== side B (the sender), $ip_b, $link" ;;
		esac
		cat "$tmp/$s.out"
		if [ -s "$tmp/$s-dpv0.txt" ]; then
			echo "---- side $s: its device's counters, those not 0"
			nonzero_counters "$tmp/$s-dpv0.txt"
		fi
	done
	exit 1
fi
echo "ok: rndv_peer ${args[*]} over $link ($memory)," \
	"${DPV_FAULTS:+with DPV_FAULTS=$DPV_FAULTS, }$secs s"
cat "$out_a" "$out_b"
for s in a b; do
	[ -s "$tmp/$s-dpv0.txt" ] || continue
	echo "---- side $s: its device's counters, those not 0"
	nonzero_counters "$tmp/$s-dpv0.txt"
done
exit 0
