#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Unmodified verbs programs on the drop-in across a hostile link that dpverbs does not
# make: two dpverbs processes on af_packet ports, each in a network namespace of its
# own, and between them a third namespace where fwd (fwd.c) forwards every frame,
# losing 5 %, duplicating 1 %, corrupting 0.5 % (one bit after the headers: the ICRC
# catches it) and holding back 20 % for 300 us, so that later frames pass them. Usage:
#
#   fwd.sh MEMORY TCP_PORT FWD RNDV_PEER
#
#   MEMORY     nohuge (--no-huge --no-shconf) or huge (--in-memory, hugepages)
#   TCP_PORT   the first of the programs' TCP ports (one each, nine in all)
#   FWD        the forwarder
#   RNDV_PEER  the tree's rendezvous program (test/rndv/rndv_peer.c)
#
#   ns A: veth_a, dpverbs 10.205.0.11, the kernel's 10.205.0.1 (servers, receiver)
#   ns F: fwd_a <- fwd -> fwd_b
#   ns B: veth_b, dpverbs 10.205.0.12, the kernel's 10.205.0.2 (clients, sender)
#
# The kernel's TCP (the programs' exchanges) crosses the forwarder too, as it would
# cross a netem qdisc. One after the other, each server on side A and its client on
# side B: ib_read_bw -s 1048576 -n 100, ib_write_bw -s 1048576 -n 100, ib_atomic_bw -n
# 2000 (fetch-and-add) and -A CMP_AND_SWAP (perftest 4.5 checks no data: their exit
# status and result lines are what is checked, as test/compat/perftest.sh does),
# ibv_rc_pingpong -s 65536 -n 300 -c and ibv_srq_pingpong -q 16 -c (-c: every byte
# checked), and rndv_peer, 300 messages with rendezvous of 64 KiB to 1 MiB (every byte
# checked, its receiver's device's rendezvous counted). Each must exit 0 and print what
# it prints when it did its work; both devices' counters (DPV_STATS_DUMP) must show no
# WR that ran out of retries (qp.retry_exceeded, qp.rnr_retry_exceeded) and no failed
# rendezvous; the forwarder's (printed when it is stopped at the end) that it lost,
# duplicated, corrupted and delayed frames both ways and forwarded none it could not
# take whole, and the devices' that they dropped corrupted frames (xport.rx_bad_icrc).
# A frame the forwarder's kernel could not queue for it (rx_dropped) is loss too: it
# is shown, not failed.
#
# DPV_DROPIN_LIBDIR names the drop-in's directory (meson sets it). Needs root (skipped
# without it), perftest, ibverbs-utils and ethtool (skipped without them). Only the
# processes started here are ended, by pid; the namespaces (and with them the veth
# pairs), the temporary directory and EAL's runtime directories are removed on every
# exit. On a failure the outputs and non-zero counters of the failed run are printed.

set -u
# shellcheck source=../lib/link.sh
. "$(dirname "$0")/../lib/link.sh"

link_args 4 "nohuge|huge TCP_PORT FWD RNDV_PEER" "$@"
memory=$1 port=$2 fwd=$3 peer=$4

link_libdir
link_need_root "needs root (network namespaces, veth pairs, raw sockets)"
link_need ibv_rc_pingpong ibverbs-utils
link_need ib_read_bw perftest
link_eal "$memory"

link_init /tmp/dpv-fwd.XXXXXX
prefix_a=dpvfwd-$id-a prefix_b=dpvfwd-$id-b
link_netns_fwd dpvf
# The kernel's addresses carry the TCP exchanges, dpverbs' own (one subnet) the RoCEv2
# frames (test/dropin/dropin.sh says why).
link_addrs 10.205.0 "$veth_a" "$veth_b"
ip_a=10.205.0.11 ip_b=10.205.0.12
link_afpacket

impair=(--loss 5 --dup 1 --corrupt 0.5 --delay 20 --delay-us 300 --seed 20)
if ! link_fwd "$tmp/fwd.out" "$fwd" "${impair[@]}"; then
	echo "FAIL: the forwarder did not start:"
	cat "$tmp/fwd.out"
	exit 1
fi
cat "$tmp/fwd.out"

failed=0
total_start=$(date +%s.%N)

expect() { # file name regex
	grep -Eq -- "$3" "$1" || fail "$2: no line matching '$3'"
}

refuse() { # file name regex
	! grep -Eq -- "$3" "$1" || fail "$2: printed '$(grep -Em1 -- "$3" "$1")'"
}

# perftest's result line for SIZE bytes and ITERS iterations (test/compat/perftest.sh
# checks the rest of its shape).
expect_bw() { # file name size iters
	local n='[0-9]+\.[0-9]+' sp='[[:space:]]+'
	expect "$1" "$2" "^ *$3$sp$4$sp$n$sp$n$sp${n}[[:space:]]*\$"
}

# Both devices' counters after a run: no WR out of retries, no failed rendezvous.
check_counters() { # name
	local s f c v
	for s in a b; do
		f=$tmp/$1-$s-dpv0.txt
		if [ ! -s "$f" ]; then
			fail "$1: side $s dumped no counters ($f)"
			continue
		fi
		for c in qp.retry_exceeded qp.rnr_retry_exceeded xport.tm_rndv_failed; do
			v=$(counter "$f" "$c")
			[ "$v" = 0 ] || fail "$1: side $s: $c $v"
		done
	done
}

# What the two devices did to recover, on one line.
recovery() { # name
	cat "$tmp/$1-a-dpv0.txt" "$tmp/$1-b-dpv0.txt" 2>/dev/null | awk '
		$1 ~ /^qp\.(retrans_|ack_timeouts|seq_naks_sent|dup_re|retry_exceeded)/ ||
		$1 == "xport.rx_bad_icrc" { s[$1] += $2 }
		END { n = 0; for (k in s) if (s[k]) { printf "%s%s=%d", n++ ? " " : "", k, s[k] } }'
}

# One case: run it, check what it printed and its counters; on a failure print both
# sides' outputs and counters.
case_run() { # name check-function program args...
	local name=$1 check=$2 before=$failed
	shift 2
	failed=0
	tcp_port=$port
	port=$((port + 1))
	link_pair "$name" 150 "$@"
	"$check" "$name" "$@"
	check_counters "$name"
	if [ "$failed" = 0 ]; then
		echo "ok: $name ($*): $pair_secs s; $(recovery "$name")"
	else
		echo "FAIL: $name ($*) after $pair_secs s"
		for s in a b; do
			echo "==== $name, side $s"
			cat "$tmp/$name-$s.out"
			[ -s "$tmp/$name-$s-dpv0.txt" ] || continue
			echo "---- its device's counters, those not 0"
			nonzero_counters "$tmp/$name-$s-dpv0.txt"
		done
	fi
	[ "$before" = 0 ] || failed=1
}

perftest_bw() { # name program args...
	local name=$1 args=("${@:3}") size iters
	size=$(opt_of -s 65536) iters=$(opt_of -n 1000)
	# An atomic is 8 bytes, whatever -s says.
	[[ $2 == ib_atomic_* ]] && size=8
	expect_bw "$tmp/$name-b.out" "$name: the client" "$size" "$iters"
	expect_bw "$tmp/$name-a.out" "$name: the server" "$size" "$iters"
	for s in a b; do
		refuse "$tmp/$name-$s.out" "$name: side $s" \
			'[Ee]rror|[Ff]ail|[Cc]ouldn.t|[Uu]nable|^dpverbs: '
	done
}

pingpong() { # name program args...
	local name=$1 args=("${@:3}") size iters
	size=$(opt_of -s 4096) iters=$(opt_of -n 1000)
	for s in a b; do
		expect "$tmp/$name-$s.out" "$name: side $s" "^$((size * iters * 2)) bytes in [0-9.]+ seconds"
		expect "$tmp/$name-$s.out" "$name: side $s" "^$iters iters in [0-9.]+ seconds"
		refuse "$tmp/$name-$s.out" "$name: side $s" \
			'invalid data in page|Failed status|Couldn.t|failed|^dpverbs: '
	done
}

# rndv_peer checked every byte itself; its receiver's device must have counted the
# rendezvous it read, and their bytes, as the program saw them end.
rendezvous() { # name program args...
	local name=$1
	expect "$tmp/$name-a.out" "$name: the receiver" '^receiver: ok:'
	expect "$tmp/$name-b.out" "$name: the sender" '^sender: ok:'
	refuse "$tmp/$name-a.out" "$name: the receiver" '^FAIL'
	refuse "$tmp/$name-b.out" "$name: the sender" '^FAIL'
	rndv_counted "$tmp/$name-a.out" "$tmp/$name-a-dpv0.txt"
}

dev=(-d dpv0 -x 0)
case_run read_bw perftest_bw ib_read_bw -s 1048576 -n 100 "${dev[@]}"
case_run write_bw perftest_bw ib_write_bw -s 1048576 -n 100 "${dev[@]}"
case_run atomic_fadd perftest_bw ib_atomic_bw -n 2000 "${dev[@]}"
case_run atomic_cas perftest_bw ib_atomic_bw -n 2000 -A CMP_AND_SWAP "${dev[@]}"
case_run rc_pingpong pingpong ibv_rc_pingpong -g 0 -s 65536 -n 300 -c
case_run srq_pingpong pingpong ibv_srq_pingpong -g 0 -q 16 -c
case_run rndv rendezvous "$peer" -n 300 -S 20 -w 8 -t 120 --rndv-max 1048576 --lossy

link_stop "$fwd_pid"
total=$(echo "$(date +%s.%N) $total_start" | awk '{ printf "%.1f", $1 - $2 }')
echo "---- the forwarder, stopped after $total s"
cat "$tmp/fwd.out"
for c in lost duplicated corrupted delayed; do
	for d in "${fwd_a}_to_$fwd_b" "${fwd_b}_to_$fwd_a"; do
		v=$(counter "$tmp/fwd.out" "$d.$c")
		[ "$v" -gt 0 ] || fail "the forwarder: $d.$c $v: the link was not as hostile as asked"
	done
done
for d in "${fwd_a}_to_$fwd_b" "${fwd_b}_to_$fwd_a"; do
	v=$(counter "$tmp/fwd.out" "$d.truncated")
	[ "$v" = 0 ] || fail "the forwarder: $d.truncated $v: frames larger than the MTU (offloads on)"
done
grep -q '^fwd: stopped by' "$tmp/fwd.out" || fail "the forwarder did not stop as asked"
icrc=$(cat "$tmp"/*-dpv0.txt | awk '$1 == "xport.rx_bad_icrc" { s += $2 } END { print s + 0 }')
[ "$icrc" -gt 0 ] || fail "the forwarder corrupted frames, yet no device counted a bad ICRC"

[ "$failed" = 0 ] || exit 1
echo "ok: every program across the forwarder ($memory, ${impair[*]}), $total s"
exit 0
