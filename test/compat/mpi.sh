#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Open MPI (Debian's openmpi-bin) with its UCX PML on the drop-in libibverbs.so.1: two
# ranks of mpi_check (mpi_check.c), each on a dpverbs device of its own, the two joined
# by a link. Usage:
#
#   mpi.sh LINK MEMORY TLS MPI_CHECK pingpong|bw ARGS...
#
#   LINK       afpacket  net_af_packet on the two ends of a veth pair in a network
#                        namespace of its own, where mpirun and both ranks run
#              memif     net_memif, rank 0 the server, in this network namespace
#   MEMORY     nohuge (--no-huge --no-shconf) or huge (--in-memory, hugepages)
#   TLS        the UCX_TLS of both ranks
#   MPI_CHECK  the program (meson builds it with mpicc when libopenmpi-dev is there)
#
# mpirun runs with --mca pml ucx (and btl self only: no other path), UCX_TLS=TLS and
# UCX_NET_DEVICES=dpv0:1, so that the traffic can only cross dpverbs, in a /dev of its
# own that holds the nodes UCX looks for (private_dev.sh, dpv-devnodes: DPV_DEVNODES).
# Needs root; skips (77) without openmpi-bin or without the program.
#
# What a run must show: mpirun exits 0 within 120 s (mpi_check ends the job with
# status 1 at the first byte that is wrong); for each size asked, rank 0's result line
# with the bytes checked that the size and counts give; UCP's lanes (UCX_LOG_LEVEL=info)
# only of TLS, on dpv0:1; and each rank's device counters (DPV_STATS_DUMP) at least one
# packet sent per iteration and no WR out of retries. The result lines, the lanes and
# the counters are printed. Only the processes started here are ended, by pid; the
# namespace, the temporary directory and EAL's runtime directories are removed on every
# exit.

set -u

# One rank, started by mpirun: its device's configuration, then the program.
if [ "${1:-}" = --rank ]; then
	shift
	r=${OMPI_COMM_WORLD_RANK:?mpi.sh --rank runs under mpirun}
	eal_var=DPV_MPI_EAL_$r ip_var=DPV_MPI_IP_$r
	exec env LD_LIBRARY_PATH="$DPV_MPI_LIBDIR" DPV_EAL_ARGS="${!eal_var}" \
		DPV_PORT_IPV4="${!ip_var}" DPV_PROGRESS=inline \
		DPV_STATS_DUMP="$DPV_MPI_TMP/rank$r-" "$@"
fi

here=$(cd "$(dirname "$0")" && pwd)
# The two sides, their link and the clean-up after them (link_*), fail and the rest.
# shellcheck source=../lib/link.sh
. "$here/../lib/link.sh"
link_args 6 "afpacket|memif nohuge|huge TLS MPI_CHECK pingpong|bw ARGS..." "$@"
link_libdir
link_need mpirun openmpi-bin
mpirun=$prog_path
if [ ! -x "$4" ]; then
	echo "skipped: no $4 (it is built with mpicc, Debian package libopenmpi-dev)"
	exit 77
fi
link_need_root "needs root (a private /dev for UCX's device nodes, a network namespace)"
link_private_dev "$0" "$@"

link=$1 memory=$2 tls=$3 prog=$4 mode=$5
shift 5
args=("$@")
link_eal "$memory"

link_init /tmp/dpv-mpi.XXXXXX
# Rank 0 is side A (prefix_a, vdev_a), rank 1 side B; the one namespace of afpacket is
# ns_a, which link_cleanup deletes.
prefix_a=dpvmpi-$id-0 prefix_b=dpvmpi-$id-1

run=()
case $link in
afpacket)
	link_netns "${DPV_DROPIN_NETNS:-dpv}M$id"
	ns_a=${DPV_DROPIN_NETNS:-dpv}M$id
	# Both ends in the one namespace, no kernel address on them: the ranks' frames
	# cross the kernel from one end to the other, mpirun's own traffic stays on lo.
	# DPDK's af_packet PMD joins each socket to the fanout group (pid ^ ifindex) &
	# 0xffff, and fanout groups are per network namespace: two ranks with consecutive
	# pids on ends with consecutive ifindexes could draw the same group and the second
	# fail to start (EINVAL), so the two ifindexes differ in a high bit.
	ip -n "$ns_a" link add "dpv${id}a" index 10 type veth peer name "dpv${id}b" index 16400 &&
		ip -n "$ns_a" link set "dpv${id}a" up && ip -n "$ns_a" link set "dpv${id}b" up &&
		ip -n "$ns_a" link set lo up || exit 1
	vdev_a="--vdev=net_af_packet0,iface=dpv${id}a,framecnt=4096"
	vdev_b="--vdev=net_af_packet0,iface=dpv${id}b,framecnt=4096"
	run=(ip netns exec "$ns_a")
	;;
memif)
	link_memif
	;;
*)
	echo "link $link: want afpacket or memif" >&2
	exit 2
	;;
esac

root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
out=$tmp/mpirun.out
timeout --kill-after=5 120 "${run[@]}" env \
	DPV_MPI_LIBDIR="$libdir" DPV_MPI_TMP="$tmp" \
	DPV_MPI_EAL_0="-l 0 --file-prefix $prefix_a $eal_common $vdev_a" DPV_MPI_IP_0=10.206.0.1 \
	DPV_MPI_EAL_1="-l 1 --file-prefix $prefix_b $eal_common $vdev_b" DPV_MPI_IP_1=10.206.0.2 \
	UCX_NET_DEVICES=dpv0:1 UCX_TLS="$tls" UCX_LOG_LEVEL=info \
	"$mpirun" "${root[@]}" -np 2 --bind-to none --mca pml ucx --mca btl self \
	-x DPV_MPI_LIBDIR -x DPV_MPI_TMP -x DPV_MPI_EAL_0 -x DPV_MPI_IP_0 -x DPV_MPI_EAL_1 \
	-x DPV_MPI_IP_1 -x UCX_NET_DEVICES -x UCX_TLS -x UCX_LOG_LEVEL \
	bash "$here/mpi.sh" --rank "$prog" "$mode" "${args[@]}" >"$out" 2>&1 &
link_track $!
wait "$last_pid"
rc=$?
link_forget "$last_pid"

failed=0
case $rc in
0) ;;
124 | 137) fail "mpirun did not finish in time (hung)" ;;
*) fail "mpirun exited with status $rc" ;;
esac

# The result line of each size, with the bytes the size and the counts give.
iters=${args[0]}
if [ "$mode" = bw ]; then
	window=${args[1]} sizes=("${args[@]:2}")
else
	window=1 sizes=("${args[@]:1}")
fi
for s in "${sizes[@]}"; do
	if [ "$mode" = bw ]; then
		re="^bw $s bytes $iters x $window [0-9.]+ MB/s checked $((s * iters * window))\$"
	else
		re="^pingpong $s bytes $iters iters [0-9.]+ us checked $((s * iters * 2))\$"
	fi
	grep -Eq -- "$re" "$out" || fail "no result line for $s bytes ('$re')"
done
! grep -Eq 'UCX +(ERROR|FATAL)' "$out" || fail "$(grep -Em1 'UCX +(ERROR|FATAL)' "$out")"

allowed=" ${tls//,/ } "
allowed=${allowed// rc_v / rc_verbs ud_verbs }
lanes=$(grep -ohE 'ep_cfg\[[0-9]+\]: .*' "$out" | sort -u)
[ -n "$lanes" ] || fail "no ep_cfg line (UCX_LOG_LEVEL=info): which transports UCP chose is unknown"
for tl in $(grep -oE '[a-z0-9_]+/[A-Za-z0-9_:.-]+' <<<"$lanes" | sort -u); do
	[[ $allowed == *" ${tl%%/*} "* && $tl == */dpv0:1 ]] ||
		fail "UCP chose $tl, which UCX_TLS=$tls on UCX_NET_DEVICES=dpv0:1 excludes"
done

sent=()
for r in 0 1; do
	f=$tmp/rank$r-dpv0.txt
	if [ ! -s "$f" ]; then
		fail "rank $r: no counters (DPV_STATS_DUMP)"
		sent+=(0)
		continue
	fi
	v=$(awk '$1 == "xport.tx_packets" { print $2 }' "$f")
	sent+=("${v:-0}")
	[ "${v:-0}" -ge "$iters" ] ||
		fail "rank $r's device sent ${v:-0} packets for $iters iterations: the traffic did not cross dpverbs"
	v=$(awk '$1 == "qp.retry_exceeded" { print $2 }' "$f")
	[ "${v:-0}" = 0 ] || fail "rank $r: qp.retry_exceeded $v"
done

if [ "$failed" != 0 ]; then
	echo "==== mpirun ($link, $memory, UCX_TLS=$tls)"
	cat "$out"
	for r in 0 1; do
		[ -s "$tmp/rank$r-dpv0.txt" ] || continue
		echo "---- rank $r: its device's counters, those not 0"
		nonzero_counters "$tmp/rank$r-dpv0.txt"
	done
	exit 1
fi
echo "ok: mpi_check $mode ${args[*]} over $link ($memory), pml ucx, UCX_TLS=$tls"
grep -E '^(pingpong|bw) ' "$out"
echo "$lanes"
echo "dpverbs packets sent: rank 0 ${sent[0]}, rank 1 ${sent[1]}"
exit 0
