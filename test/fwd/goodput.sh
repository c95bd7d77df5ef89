#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The goodput of unmodified ib_read_bw and ib_write_bw (1 MiB messages) on the drop-in
# across the forwarder (fwd.c, the link of fwd.sh: namespaces A, F and B) when it loses
# a share of the frames both ways and does nothing else. A benchmark, not a test: it
# prints figures, and exits 1 when a run failed (it says how, and goes on). Usage:
#
#   goodput.sh FWD [options]
#
#   --levels L,L,...   loss percentages (0,1,5); the first is the reference
#   --reps N           runs of each op at each level (3)
#   --iters N          perftest's -n (100)
#   --memory M         nohuge or huge (nohuge)
#   --port P           perftest's TCP port (19820)
#
# Each rep runs every op at every level in turn, so that the host's load weighs on all
# alike; each figure is perftest's average (MiB/s), and each level's fraction is taken
# of the first level's figure of the same rep. The table gives the medians over the reps
# that ran to the end, and how many did not (a failed run prints its outputs, both
# devices' counters and the forwarder's). Each run's line also gives two losses not
# asked for: rx_dropped, what the forwarder's sockets could not take, and past_fwd, the
# frames the forwarder sent that neither device's port received: those the kernel or the
# port's packet ring dropped (port.rx_frames counts a few dozen of the kernel's own
# frames too, so a figure a little below 0 is no loss).
# DPV_DROPIN_LIBDIR names the drop-in's directory. Needs root, perftest and ethtool.

set -u
# shellcheck source=../lib/link.sh
. "$(dirname "$0")/../lib/link.sh"

link_args 1 "FWD [--levels L,L,...] [--reps N] [--iters N] [--memory M] [--port P]" "$@"
fwd=$1
shift
levels=0,1,5 reps=3 iters=100 memory=nohuge tcp_port=19820
while [ $# -gt 0 ]; do
	[ $# -ge 2 ] || { echo "goodput.sh: $1 wants a value" >&2; exit 2; }
	case $1 in
	--levels) levels=$2 ;;
	--reps) reps=$2 ;;
	--iters) iters=$2 ;;
	--memory) memory=$2 ;;
	--port) tcp_port=$2 ;;
	*) echo "goodput.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift 2
done
IFS=, read -ra level_list <<<"$levels"

link_libdir
link_need_root "needs root (network namespaces, veth pairs, raw sockets)"
link_need ib_read_bw perftest
link_eal "$memory"
link_init /tmp/dpv-goodput.XXXXXX
prefix_a=dpvgp-$id-a prefix_b=dpvgp-$id-b
link_netns_fwd dpvg
link_addrs 10.206.0 "$veth_a" "$veth_b"
ip_a=10.206.0.11 ip_b=10.206.0.12
link_afpacket

any_failed=0
# The forwarder's counters whose names match REGEX, both ways summed.
fwd_sum() { # regex file
	awk -v k="$1" '$1 ~ k { s += $2 } END { print s + 0 }' "$2"
}
: >"$tmp/results"
for ((rep = 1; rep <= reps; rep++)); do
	for op in read write; do
		for level in "${level_list[@]}"; do
			name=$op-$level-$rep failed=0
			if ! link_fwd "$tmp/fwd-$name.out" "$fwd" --loss "$level" --seed "$rep"; then
				cat "$tmp/fwd-$name.out"
				exit 1
			fi
			link_pair "$name" 600 "ib_${op}_bw" -s 1048576 -n "$iters" -d dpv0 -x 0
			link_stop "$fwd_pid"
			bw=$(awk '/^ *#bytes/ { h = 1; next } h && $1 == 1048576 { print $4; exit }' \
				"$tmp/$name-b.out")
			lost=$(fwd_sum '\.lost$' "$tmp/fwd-$name.out")
			rx_dropped=$(fwd_sum '\.rx_dropped$' "$tmp/fwd-$name.out")
			past_fwd=$(($(fwd_sum '\.forwarded$' "$tmp/fwd-$name.out") -
				$(counter "$tmp/$name-a-dpv0.txt" port.rx_frames) -
				$(counter "$tmp/$name-b-dpv0.txt" port.rx_frames)))
			if [ "$failed" != 0 ] || [ -z "$bw" ]; then
				any_failed=1 bw=fail
				echo "FAIL: ib_${op}_bw -s 1048576 -n $iters at $level % loss, rep $rep:"
				for s in a b; do
					echo "==== side $s"
					cat "$tmp/$name-$s.out"
					echo "---- its device's counters, those not 0"
					nonzero_counters "$tmp/$name-$s-dpv0.txt"
				done
				echo "---- the forwarder"
				cat "$tmp/fwd-$name.out"
			fi
			echo "$op $level $rep $bw lost=$lost rx_dropped=$rx_dropped past_fwd=$past_fwd ${pair_secs}s" |
				tee -a "$tmp/results"
		done
	done
done

echo
echo "goodput.sh $levels, $reps reps of ib_read_bw / ib_write_bw -s 1048576 -n $iters ($memory)"
echo
echo "| op, loss % | MiB/s | of ${level_list[0]} % | runs failed |"
echo "| --- | ---: | ---: | ---: |"
awk -v first="${level_list[0]}" -v levels="$levels" '
	{ bw[$1, $2, $3] = $4; n = $3 > n ? $3 : n }
	function median(a, k,   i, j, t) {
		for (i = 2; i <= k; i++)
			for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
	}
	END {
		nl = split(levels, lv, ",")
		split("read write", order, " ")
		for (o = 1; o <= 2; o++) {
			op = order[o]
			for (l = 1; l <= nl; l++) {
				delete v; delete f
				k = kf = bad = 0
				for (r = 1; r <= n; r++) {
					x = bw[op, lv[l], r]
					if (x == "fail") { bad++; continue }
					v[++k] = x
					if (bw[op, first, r] != "fail") f[++kf] = x / bw[op, first, r]
				}
				printf "| %s, %s | %s | %s | %d |\n", toupper(op), lv[l],
					k ? sprintf("%.1f", median(v, k)) : "-",
					kf ? sprintf("%.3f", median(f, kf)) : "-", bad
			}
		}
	}' "$tmp/results"
exit "$any_failed"
