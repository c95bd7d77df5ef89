# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash disable=SC2034,SC2154
#
# The set-up the test scripts share: their temporary directory, the names of a run,
# network namespaces and veth pairs, a memif socket, the EAL arguments of each memory
# mode, the processes they start and end (by pid) and the clean-up after them on every
# exit. Most of them run two dpverbs processes, side A and side B, each with a device
# of its own, joined by a link (test/dropin/dropin.sh and memif_join.sh,
# test/rndv/rndv.sh, test/compat/perftest.sh, rdmacm.sh, ucx.sh and mpi.sh, the consoles
# of test/testpmd/session2.sh, and test/fwd/fwd.sh and goodput.sh, whose link passes
# through a forwarder in a third namespace); test/hostile/hostile.sh makes two
# namespaces of its own shape, test/bad_config/bad_config.sh and test/dropin/abi.sh
# only a temporary directory and what they start. A script (bash, set -u) sources it
# relative to its own directory, since meson runs it by path:
#
#   . "$(dirname "$0")/../lib/link.sh"
#
# Sourcing only defines functions (and link_lib, the directory of this file). What
# each needs and sets:
#
#   link_args MIN USAGE [ARGS...]
#                        exits 2 saying "usage: SCRIPT USAGE" when ARGS (the script's
#                        "$@") are fewer than MIN.
#   link_need PROGRAM PACKAGE
#                        prog_path, where PROGRAM is on PATH; exits 77 saying that it is
#                        not installed (Debian package PACKAGE) when it is not.
#   link_need_root WHY   exits 77 saying "skipped: WHY" unless the script runs as root.
#   link_libdir          libdir, the drop-in's directory, from DPV_DROPIN_LIBDIR (meson
#                        sets it; the script ends, 127, saying so when it is not, and 1
#                        when it holds no libibverbs.so.1), and LD_LIBRARY_PATH unset:
#                        only the programs under test get the drop-in (meson puts the
#                        build's library directories in LD_LIBRARY_PATH for every test),
#                        ip, ss and grep keep the system's. link_run gives it to a side's
#                        program.
#   link_private_dev SCRIPT [ARGS...]
#                        (root) runs SCRIPT ARGS again, in place of this process, with the
#                        /dev/infiniband nodes UCX looks for, in a mount namespace of its
#                        own (test/compat/private_dev.sh, with DPV_DEVNODES or the
#                        tree's dpv-devnodes); returns at once in the process run so.
#   link_init TEMPLATE   makes the temporary directory tmp (mktemp -d TEMPLATE; exit 1
#                        when it cannot) and id, 5 random hex digits for the script's
#                        names; empties pids, ns_a, ns_b, ns_f and veths; link_cleanup
#                        becomes the EXIT trap, and INT, TERM and HUP exit 1. The script
#                        sets prefix_a and prefix_b (its EAL file prefixes) right after.
#   link_cleanup         the EXIT trap: ends the processes of pids (those not waited for
#                        yet), by pid; deletes ns_a, ns_b and ns_f (and with them the veth
#                        ends in them) and the veth pairs of veths (for a pair made before
#                        its ends moved); removes tmp and EAL's runtime directories of
#                        prefix_a and prefix_b (/var/run/dpdk, $XDG_RUNTIME_DIR/dpdk).
#   link_eal MEMORY [MEGABYTES]
#                        eal_common, the EAL arguments of both sides: no PCI, no
#                        telemetry socket, EAL's errors only, and for MEMORY nohuge
#                        --no-huge --no-shconf -m 512, for huge --in-memory -m 256, or -m
#                        MEGABYTES (each side: one core and its file prefix come from
#                        link_side); exit 2 for another MEMORY.
#   link_memif           a net_memif link in this network namespace: sock (in tmp),
#                        vdev_a its server, vdev_b its client; run_a and run_b empty.
#   link_netns NAME      (root) the network namespace NAME; exits 77 saying why when it
#                        cannot be made. The script puts NAME in ns_a or ns_b right after,
#                        for link_cleanup.
#   link_netns_pair NAMES
#                        (root) the network namespaces ns_a=NAMES"A"id and
#                        ns_b=NAMES"B"id, the veth pair veth_a=NAMES"id"a (in ns_a) and
#                        veth_b=NAMES"id"b (in ns_b), both up, lo up in both; run_a and
#                        run_b run a command in them. Needs tmp. Exits 77 saying why when
#                        a namespace cannot be made, 1 when anything else fails.
#   link_netns_fwd NAMES (root) the same with a namespace between: ns_a=NAMES"A"id,
#                        ns_f=NAMES"F"id and ns_b=NAMES"B"id, and two veth pairs, veth_a
#                        (NAMES"id"a, in ns_a) to fwd_a (NAMES"id"fa, in ns_f) and fwd_b
#                        (NAMES"id"fb, in ns_f) to veth_b (NAMES"id"b, in ns_b), all up,
#                        lo up in all three, IPv6 off in ns_f (its kernel sends nothing
#                        on fwd_a and fwd_b); run_a, run_b and run_f run a command in
#                        them. Nothing joins ns_a to ns_b until a program in ns_f
#                        forwards between fwd_a and fwd_b (test/fwd/fwd.c). The kernel's
#                        checksum and segmentation offloads are off on veth_a and veth_b:
#                        a forwarder reads a frame as it left the kernel, so a TCP segment
#                        must leave with its checksum and no larger than the MTU. Exits
#                        as link_netns_pair does, and 77 without ethtool.
#   link_fwd OUTFILE FWD [OPTIONS...]
#                        (after link_netns_fwd) FWD OPTIONS fwd_a fwd_b in ns_f, in the
#                        background, its output into OUTFILE; fwd_pid its pid, in pids.
#                        Returns once it says it forwards (0), or 1 when it exits first or
#                        is still silent after 30 s. link_stop "$fwd_pid" ends it, and it
#                        prints its counters (NAME VALUE lines, for counter) into OUTFILE.
#   link_veth NAME_A NAME_B
#                        a veth pair, NAME_A in ns_a and NAME_B in ns_b, both up; added
#                        to veths once made. Fails (1) when ip does.
#   link_addrs NET DEV_A DEV_B
#                        the kernel's addresses NET.1/24 on DEV_A (in ns_a) and NET.2/24
#                        on DEV_B (in ns_b), server_host=NET.1; exits 1 when ip fails.
#   link_afpacket        vdev_a and vdev_b: net_af_packet on veth_a and veth_b, with 4096
#                        frames a ring, not the default 512 (test/dropin/dropin.sh: why).
#   link_side SIDE       for side a (core 0, prefix_a, vdev_a, ip_a, run_a) or b (core 1,
#                        prefix_b, vdev_b, ip_b, run_b): side_eal, its EAL arguments (with
#                        eal_common), side_ip, its dpverbs address, and side_run (an
#                        array), the command prefix that runs a program there. A caller
#                        declares them local, and may change them before link_run.
#   link_run SECONDS OUTFILE PROGRAM [ARGS...]
#                        PROGRAM in the background on the side link_side chose, under
#                        timeout --kill-after=5 SECONDS, with the drop-in of libdir,
#                        DPV_EAL_ARGS=side_eal, DPV_PORT_IPV4=side_ip, DPV_PROGRESS=inline,
#                        its counters dumped at exit to OUTFILE less .out, then -dpv0.txt
#                        (DPV_STATS_DUMP), the NAME=VALUE words of the array side_env (if
#                        set), and stdout and stderr line-buffered into OUTFILE (a side
#                        that is ended still shows how far it got; stderr into side_err
#                        instead, when that is set). Sets last_pid and adds it to pids.
#   link_start SECONDS SIDE OUTFILE PROGRAM [ARGS...]
#                        link_side SIDE, then link_run SECONDS OUTFILE PROGRAM ARGS: one
#                        side's program as it is, for a caller that changes nothing of
#                        the side's (the compat scripts' servers and clients).
#   link_pair NAME SECONDS PROGRAM [ARGS...]
#                        PROGRAM ARGS -p tcp_port on side A (a server) and, once it
#                        listens, PROGRAM ARGS -p tcp_port server_host on side B (its
#                        client), each through link_run with SECONDS, into $tmp/NAME-a.out
#                        and NAME-b.out (counters in NAME-a-dpv0.txt, NAME-b-dpv0.txt);
#                        waits for both (a server still running 30 s after its client
#                        has hung) and fails (fail) what did not end well; pair_secs is
#                        how long the two took.
#   link_track PID       a process started here (in the background): last_pid, and
#                        in pids for link_cleanup until it is waited for.
#   link_forget PID      PID out of pids (it has been waited for).
#   link_stop PID [SIGNAL]
#                        ends PID: SIGNAL (default TERM), 5 s to exit, then TERM; waits
#                        for it (its status is not the caller's) and forgets it.
#   listening            side A has a TCP listener on tcp_port (in run_a's namespace).
#   arp_answered IP      (af_packet) side A's dpverbs port answers ARP for IP: a UDP
#                        datagram from run_b's namespace makes its kernel ask, and it
#                        has learned the MAC (for programs whose server opens no TCP
#                        port, the rdma_cm ones: their device is up, their id listens
#                        right after).
#   wait_until PID COMMAND [ARGS...]
#                        runs COMMAND every 0.1 s, 300 times at most (30 s), until it
#                        succeeds (returns 0) or PID has exited (returns 1; 1 too after
#                        the 300th).
#   wait_exit PID TENTHS PID has exited within TENTHS tenths of a second (returns 0),
#                        or not (1).
#   fail MESSAGE...      prints "FAIL: MESSAGE" and sets failed=1 (the script sets
#                        failed=0 first).
#   finish_side PID NAME waits for PID and takes it out of pids; fails NAME when its status
#                        is not 0 (side_status).
#   side_status STATUS NAME
#                        fails NAME when STATUS, a side's exit status, is not 0: 124 and
#                        137 (timeout's) say it hung.
#   counter DUMPFILE NAME
#                        the counter NAME of a DPV_STATS_DUMP file (0 when it has none).
#   opt_of OPTION DEFAULT
#                        the value of OPTION among the program's arguments (the array
#                        args; the last one given), else DEFAULT.
#   rndv_counted OUTFILE DUMPFILE
#                        fails unless the counters of DUMPFILE (xport.tm_rndv_reads,
#                        tm_rndv_bytes) are the rendezvous, and their bytes, that
#                        rndv_peer's receiver says in OUTFILE its device read.
#   nonzero_counters DUMPFILE
#                        the counters of a dump that are not 0, on lines of 120 at most.

link_lib=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

link_args() { # min usage args...
	local min=$1 usage=$2
	shift 2
	[ $# -ge "$min" ] && return 0
	echo "usage: $0 $usage" >&2
	exit 2
}

link_need() { # program package
	prog_path=$(command -v "$1") && return 0
	echo "skipped: $1 is not installed (Debian package $2)"
	exit 77
}

link_need_root() { # why
	[ "$(id -u)" = 0 ] && return 0
	echo "skipped: $1"
	exit 77
}

link_libdir() {
	libdir=${DPV_DROPIN_LIBDIR:?set DPV_DROPIN_LIBDIR to the directory of the drop-in libibverbs.so.1}
	unset LD_LIBRARY_PATH
	if [ ! -e "$libdir/libibverbs.so.1" ]; then
		echo "no $libdir/libibverbs.so.1" >&2
		exit 1
	fi
}

link_private_dev() { # script args...
	[ -n "${DPV_PRIVATE_DEV:-}" ] && return 0
	DPV_PRIVATE_DEV=1 exec "$link_lib/../compat/private_dev.sh" \
		"${DPV_DEVNODES:-$link_lib/../../app/dpv-devnodes/dpv-devnodes.sh}" "$@"
}

link_init() { # template
	tmp=$(mktemp -d "$1") || exit 1
	id=$(printf '%05x' $(( ($$ << 8 ^ RANDOM) & 0xfffff )))
	pids=() veths=()
	ns_a='' ns_b='' ns_f=''
	trap link_cleanup EXIT
	trap 'exit 1' INT TERM HUP
}

link_cleanup() {
	local pid v p
	# Nothing started here outlives the test: its processes not yet waited for (a pid
	# waited for may be someone else's by now), by pid.
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	done
	[ -n "$ns_a" ] && ip netns del "$ns_a" 2>/dev/null
	[ -n "$ns_b" ] && ip netns del "$ns_b" 2>/dev/null
	[ -n "${ns_f:-}" ] && ip netns del "$ns_f" 2>/dev/null
	# Deleting a namespace deletes the veth end inside it, and with it its peer; this
	# is for a pair made before its ends moved.
	for v in "${veths[@]}"; do
		ip link del "$v" 2>/dev/null
	done
	rm -rf "$tmp"
	# An empty prefix (a signal before the script set it) would name every process's.
	for p in "${prefix_a:-}" "${prefix_b:-}"; do
		[ -n "$p" ] || continue
		rm -rf "/var/run/dpdk/$p"
		[ -n "${XDG_RUNTIME_DIR:-}" ] && rm -rf "$XDG_RUNTIME_DIR/dpdk/$p"
	done
}

link_eal() { # memory [megabytes]
	local mem
	case $1 in
	nohuge) mem="--no-huge --no-shconf -m ${2:-512}" ;;
	huge) mem="--in-memory -m ${2:-256}" ;;
	*) echo "memory mode $1: want nohuge or huge" >&2; exit 2 ;;
	esac
	eal_common="--no-pci --no-telemetry --log-level=lib.eal:error $mem"
}

link_memif() {
	sock=$tmp/memif.sock
	vdev_a="--vdev=net_memif0,role=server,socket=$sock,socket-abstract=no"
	vdev_b="--vdev=net_memif0,role=client,socket=$sock,socket-abstract=no"
	run_a=() run_b=()
}

link_veth() { # name-a name-b
	ip link add "$1" type veth peer name "$2" || return 1
	veths+=("$1")
	ip link set "$1" netns "$ns_a" && ip link set "$2" netns "$ns_b" &&
		ip -n "$ns_a" link set "$1" up && ip -n "$ns_b" link set "$2" up
}

link_netns() { # name
	ip netns add "$1" 2>"$tmp/netns.err" && return 0
	echo "skipped: cannot create a network namespace: $(cat "$tmp/netns.err")"
	exit 77
}

link_netns_pair() { # names
	link_netns "$1A$id"
	ns_a=$1A$id
	ip netns add "$1B$id" || exit 1
	ns_b=$1B$id
	veth_a=$1${id}a veth_b=$1${id}b
	link_veth "$veth_a" "$veth_b" || exit 1
	ip -n "$ns_a" link set lo up && ip -n "$ns_b" link set lo up || exit 1
	run_a=(ip netns exec "$ns_a") run_b=(ip netns exec "$ns_b")
}

link_netns_fwd() { # names
	local ns end
	if ! command -v ethtool >/dev/null; then
		echo "skipped: ethtool is not installed (Debian package ethtool)"
		exit 77
	fi
	link_netns "$1A$id"
	ns_a=$1A$id
	ip netns add "$1F$id" || exit 1
	ns_f=$1F$id
	ip netns add "$1B$id" || exit 1
	ns_b=$1B$id
	veth_a=$1${id}a veth_b=$1${id}b fwd_a=$1${id}fa fwd_b=$1${id}fb
	for end in a b; do
		ip link add "$1${id}$end" type veth peer name "$1${id}f$end" || exit 1
		veths+=("$1${id}$end")
		ip link set "$1${id}f$end" netns "$ns_f" || exit 1
	done
	ip link set "$veth_a" netns "$ns_a" && ip link set "$veth_b" netns "$ns_b" || exit 1
	ip netns exec "$ns_f" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
		net.ipv6.conf.default.disable_ipv6=1 || exit 1
	for ns in "$ns_a" "$ns_f" "$ns_b"; do
		ip -n "$ns" link set lo up || exit 1
	done
	ip -n "$ns_a" link set "$veth_a" up && ip -n "$ns_b" link set "$veth_b" up &&
		ip -n "$ns_f" link set "$fwd_a" up && ip -n "$ns_f" link set "$fwd_b" up || exit 1
	for end in a b; do
		ns=ns_$end end=veth_$end
		ip netns exec "${!ns}" ethtool -K "${!end}" tx off tso off gso off gro off \
			>/dev/null || exit 1
	done
	run_a=(ip netns exec "$ns_a") run_b=(ip netns exec "$ns_b") run_f=(ip netns exec "$ns_f")
}

link_fwd() { # outfile fwd options...
	local out=$1
	shift
	"${run_f[@]}" "$@" "$fwd_a" "$fwd_b" >"$out" 2>&1 &
	link_track $!
	fwd_pid=$!
	wait_until "$fwd_pid" grep -qs '^fwd: forwarding' "$out"
}

link_addrs() { # net dev-a dev-b
	ip -n "$ns_a" addr add "$1.1/24" dev "$2" || exit 1
	ip -n "$ns_b" addr add "$1.2/24" dev "$3" || exit 1
	server_host=$1.1
}

link_afpacket() {
	vdev_a="--vdev=net_af_packet0,iface=$veth_a,framecnt=4096"
	vdev_b="--vdev=net_af_packet0,iface=$veth_b,framecnt=4096"
}

link_side() { # side
	if [ "$1" = a ]; then
		side_eal="-l 0 --file-prefix $prefix_a $eal_common $vdev_a" side_ip=$ip_a
		side_run=("${run_a[@]}")
	else
		side_eal="-l 1 --file-prefix $prefix_b $eal_common $vdev_b" side_ip=$ip_b
		side_run=("${run_b[@]}")
	fi
}

link_run() { # seconds outfile program args...
	local secs=$1 out=$2
	shift 2
	# Both appending: stdout and stderr in one file keep their order.
	: >"$out"
	timeout --kill-after=5 "$secs" "${side_run[@]}" env LD_LIBRARY_PATH="$libdir" \
		DPV_EAL_ARGS="$side_eal" DPV_PORT_IPV4="$side_ip" DPV_PROGRESS=inline \
		DPV_STATS_DUMP="${out%.out}-" "${side_env[@]}" stdbuf -oL -eL "$@" >>"$out" \
		2>>"${side_err:-$out}" &
	link_track $!
}

link_start() { # seconds side outfile program args...
	local side_eal side_ip side_run=() side_env=()
	link_side "$2"
	link_run "$1" "${@:3}"
}

link_pair() { # name seconds program args...
	local name=$1 secs=$2 side_eal side_ip side_run=() side_env=() t0 server
	shift 2
	t0=$(date +%s.%N)
	if listening; then
		fail "$name: TCP port $tcp_port is already in use"
		return
	fi
	link_side a
	link_run "$secs" "$tmp/$name-a.out" "$@" -p "$tcp_port"
	server=$last_pid
	if wait_until "$server" listening; then
		link_side b
		link_run "$secs" "$tmp/$name-b.out" "$@" -p "$tcp_port" "$server_host"
		finish_side "$last_pid" "$name: the client"
		wait_exit "$server" 300 || fail "$name: the server still runs 30 s after its client"
	else
		fail "$name: the server never listened on TCP port $tcp_port"
	fi
	finish_side "$server" "$name: the server"
	pair_secs=$(echo "$(date +%s.%N) $t0" | awk '{ printf "%.1f", $1 - $2 }')
}

link_track() { # pid
	last_pid=$1
	pids+=("$1")
}

link_forget() { # pid
	local p rest=()
	for p in "${pids[@]}"; do
		[ "$p" = "$1" ] || rest+=("$p")
	done
	pids=("${rest[@]}")
}

link_stop() { # pid [signal]
	kill -"${2:-TERM}" "$1" 2>/dev/null
	wait_exit "$1" 50 || kill "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	link_forget "$1"
}

listening() {
	"${run_a[@]}" ss -Hltn "sport = :$tcp_port" 2>/dev/null | grep -q .
}

arp_answered() { # ip
	# shellcheck disable=SC2016 # $1 is the inner shell's
	"${run_b[@]}" bash -c 'echo > "/dev/udp/$1/9"' sh "$1" 2>/dev/null
	"${run_b[@]}" ip neigh show "$1" 2>/dev/null | grep -q lladdr
}

wait_exit() { # pid tenths
	local i
	for ((i = 0; i < $2; i++)); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	! kill -0 "$1" 2>/dev/null
}

wait_until() { # pid command...
	local pid=$1 i
	shift
	for ((i = 0; i < 300; i++)); do
		"$@" && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

fail() {
	echo "FAIL: $*"
	failed=1
}

finish_side() { # pid name
	local rc
	wait "$1"
	rc=$?
	link_forget "$1"
	side_status "$rc" "$2"
}

side_status() { # status name
	case $1 in
	0) ;;
	124 | 137) fail "$2 did not finish in time (hung)" ;;
	*) fail "$2 exited with status $1" ;;
	esac
}

counter() { # dumpfile name
	awk -v n="$2" '$1 == n { v = $2 } END { print v + 0 }' "$1" 2>/dev/null || echo 0
}

opt_of() { # option default
	local i v=$2
	for ((i = 0; i + 1 < ${#args[@]}; i++)); do
		[ "${args[i]}" = "$1" ] && v=${args[i + 1]}
	done
	echo "$v"
}

rndv_counted() { # outfile dumpfile
	local reads bytes v
	read -r reads bytes < <(sed -nE \
		's/.* ([0-9]+) rendezvous read by the device \(([0-9]+) bytes\).*/\1 \2/p' "$1")
	v=$(counter "$2" xport.tm_rndv_reads)
	[ "$v" = "${reads:-}" ] ||
		fail "xport.tm_rndv_reads $v, but ${reads:-no} rendezvous ended read by the device"
	v=$(counter "$2" xport.tm_rndv_bytes)
	[ "$v" = "${bytes:-}" ] ||
		fail "xport.tm_rndv_bytes $v, but the device's rendezvous ended with ${bytes:-no} bytes"
}

nonzero_counters() { # dumpfile
	awk '$2 != 0' "$1" | paste -sd ' ' | fold -s -w 120
}
