# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
#
# The guest's cases against the Linux kernel's own RoCE: guest.sh sources this after
# its vfio cases, with its run_case, result, say and want. NIC A goes back to its
# kernel driver (virtio-pci, then virtio_net), takes the address 10.207.0.1 and a
# Soft-RoCE device on top (rdma_rxe, `rdma link add rxe0 type rxe netdev ETH`); NIC B
# stays on vfio-pci, dpverbs' (the drop-ins, DPV_PORT_IPV4=10.207.0.2). The kernel's
# side runs Debian's own libibverbs and librdmacm (librxe, no drop-in in its
# LD_LIBRARY_PATH), so every packet between them is the kernel's RoCEv2 (its ICRC, its
# UDP source ports) against dpverbs', and every connection the kernel's CM against
# dpverbs' (IBTA CM MADs on QP1, the kernel's formats):
#
#   rxe_setup       NIC A to virtio_net, its address, rxe0 on it: the port ACTIVE and
#                   the RoCEv2 GID of 10.207.0.1 found (its index for the kernel's -g)
#   rxe_rping_dk    rping -v -V -C 10 -S 3000 (a READ response or WRITE of three
#                   packets at MTU 1024): dpverbs' server, the kernel's client
#   rxe_rping_kd    the same, the kernel's server, dpverbs' client
#   rxe_rping_q_dk, rxe_rping_q_kd  the same with -q (each side readies a QP of its own
#                   with rdma_init_qp_attr(), the connection has none), only when
#                   DPV_VM_CASES names them
#   rxe_rc_dk       ibv_rc_pingpong -n 20 -s 4096 -c (no CM: QP numbers, PSNs and GIDs
#                   over TCP on the guest's loopback), dpverbs' server, the kernel's
#                   client
#   rxe_rc_kd       the same the other way round
#   rxe_ucmatose_dk ucmatose -c 2 -C 10 (two RC connections, their DREQ/DREP):
#                   dpverbs' server, the kernel's client; only when DPV_VM_CASES names it,
#                   as rxe_ucmatose_kd and rxe_udaddy_dk (the other way round)
#   rxe_udaddy_kd   udaddy -c 2 -C 10 (UD ids: SIDR_REQ/SIDR_REP): the kernel's server,
#                   dpverbs' client
#
# The rping cases check every line of ping data each side prints, byte by byte
# (test/compat/rdmacm.sh's rule), so the RDMA READ and WRITE that rping's server does
# are checked in both directions. Skipped (77), saying which package, without iproute2's
# rdma, rdmacm-utils, ibverbs-providers' librxe or the kernel's rdma_rxe module (vm.sh
# checks, DPV_VM_RXE_SKIP says).
# DPV_VM_CAPTURE=1 has dpverbs write what its device saw to JOB_DIR/<case>.pcapng
# (DPV_CAPTURE), for tshark.
# guest.sh sets pci_a, pci_b, job and src:
# shellcheck disable=SC2154

rxe_ip_k=10.207.0.1 rxe_ip_d=10.207.0.2
rxe_rdmacm=$DPV_VM_RDMACM_LIBDIR
rxe_eal="-l 0 --in-memory -m 64 -a $pci_b --no-telemetry --log-level=lib.eal:error"
rxe_netdev="" rxe_gid=""

rxe_setup() {
	local dev=/sys/bus/pci/devices/$pci_a port=/sys/class/infiniband/rxe0/ports/1 i gid type want t0
	echo "NIC A $pci_a: driver $(basename "$(readlink "$dev"/driver)")"
	# Back from vfio-pci to its own driver: the override cleared, then a probe.
	echo >"$dev"/driver_override
	[ -e "$dev"/driver ] && echo "$pci_a" >"$dev"/driver/unbind
	echo "$pci_a" >/sys/bus/pci/drivers_probe
	modprobe virtio_net || return 1
	for i in $(seq 50); do
		rxe_netdev=$(ls "$dev"/virtio*/net 2>/dev/null)
		[ -n "$rxe_netdev" ] && break
		sleep 0.1
	done
	[ -n "$rxe_netdev" ] || { echo "NIC A has no network interface after virtio_net"; return 1; }
	echo "NIC A: driver $(basename "$(readlink "$dev"/driver)"), interface $rxe_netdev"
	ip addr add $rxe_ip_k/24 dev "$rxe_netdev" && ip link set "$rxe_netdev" up || return 1
	# What the kernel would load on demand itself, it cannot here: its modprobe runs in
	# the initramfs, which has no modules. rxe's ICRC takes the crypto API's crc32.
	modprobe -a crc32_generic rdma_rxe rdma_ucm || return 1
	rdma link add rxe0 type rxe netdev "$rxe_netdev" || return 1
	rdma link show
	# The RoCEv2 GID of the interface's IPv4 address: its index is the kernel's -g.
	want=0000:0000:0000:0000:0000:ffff:$(printf '%02x%02x:%02x%02x' ${rxe_ip_k//./ })
	t0=$SECONDS
	while [ -z "$rxe_gid" ] && [ $((SECONDS - t0)) -lt 20 ]; do
		# The table has 1,024 entries, the addresses' at its head; read by the
		# shell, not by a program each (under TCG a process takes a tenth of a second or
		# more to start).
		for ((i = 0; i < 16; i++)); do
			gid="" type=""
			read -r gid <"$port/gids/$i" 2>/dev/null
			read -r type <"$port/gid_attrs/types/$i" 2>/dev/null
			if [ "$gid" = "$want" ] && [ "$type" = "RoCE v2" ]; then
				rxe_gid=$i
				break
			fi
		done
		[ -n "$rxe_gid" ] || sleep 0.2
	done
	echo "rxe0: port $(cat $port/state), RoCEv2 GID $want at index ${rxe_gid:-none}"
	[ -n "$rxe_gid" ]
}

# A side in the background: k the kernel's (Debian's libraries alone), d dpverbs' (the
# drop-ins on NIC B). Its pid in rxe_pid.
rxe_start() { # side outfile program args...
	local side=$1 out=$2 cap=()
	shift 2
	if [ "$side" = k ]; then
		timeout --kill-after=5 90 stdbuf -oL -eL "$@" >"$out" 2>&1 &
	else
		[ "${DPV_VM_CAPTURE:-0}" = 1 ] && cap=(DPV_CAPTURE="${out%.out}.pcapng")
		timeout --kill-after=5 90 env LD_LIBRARY_PATH="$rxe_rdmacm:$DPV_DROPIN_LIBDIR" \
			DPV_EAL_ARGS="$rxe_eal" DPV_PORT_IPV4=$rxe_ip_d "${cap[@]}" \
			stdbuf -oL -eL "$@" >"$out" 2>&1 &
	fi
	rxe_pid=$!
}

# The guest's uptime and WHAT, read by the shell (no process to start).
rxe_stamp() { # what
	local up
	read -r up _ </proc/uptime
	echo "[$up] $1"
}

# Waits for a side; says how it ended.
rxe_wait() { # pid name
	local rc
	wait "$1"
	rc=$?
	[ $rc = 0 ] && return 0
	echo "FAIL: $2 exited $rc$([ $rc = 124 ] && echo ' (timeout)')"
	return 1
}

# Until the server can be joined, or it ended: WHAT is tcp:PORT (ibv_rc_pingpong's
# server listens on it), cm:PORT (the kernel's rdma_cm has an id listening there) or
# arp (dpverbs' device answers ARP for its address: its ids listen right after).
rxe_ready() { # pid what
	local t0=$SECONDS
	# The address a dpverbs process of an earlier case answered for is not this one's.
	[ "$2" = arp ] && ip neigh flush dev "$rxe_netdev"
	while kill -0 "$1" 2>/dev/null && [ $((SECONDS - t0)) -lt 60 ]; do
		case $2 in
		tcp:*) ss -ltn "sport = :${2#tcp:}" | grep -q LISTEN && return 0 ;;
		cm:*) rdma resource show cm_id 2>/dev/null | grep LISTEN | grep -q ":${2#cm:} " &&
			return 0 ;;
		arp)
			echo >/dev/udp/$rxe_ip_d/9 2>/dev/null
			if ip neigh show $rxe_ip_d | grep -q lladdr; then
				sleep 0.5
				return 0
			fi
			;;
		esac
		sleep 0.2
	done
	return 1
}

# rping's data (rping.c): "rdma-ping-N: " then characters from 'A' + N % 58 on, 'z'
# wrapping to 'A', SIZE - 1 bytes in all: COUNT such lines after PREFIX, in order.
rxe_check_rping() { # outfile name prefix count size
	local why
	why=$(awk -v count="$4" -v size="$5" -v prefix="$3" '
		function want(n,   s, c, i) {
			s = "rdma-ping-" n ": "
			c = 65 + n % 58
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
	[ -z "$why" ] && return 0
	echo "FAIL: $2: $why"
	return 1
}

rxe_show() { # files...
	local f
	for f in "$@"; do
		echo "---- $(basename "$f")"
		cat "$f"
	done
}

# One program between the two ends: its server on SERVER (k or d), its client on the
# other; the server's address is that side's.
rxe_pair() { # case server ready server-command... -- client-command...
	local name=$1 srv=$2 ready=$3 cli=d failed=0 spid out_s out_c
	shift 3
	local server=() client=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do server+=("$1"); shift; done
	shift
	client=("$@")
	[ "$srv" = d ] && cli=k
	out_s=$job/$name.server-$srv.out out_c=$job/$name.client-$cli.out
	echo "server ($srv): ${server[*]}"
	echo "client ($cli): ${client[*]}"
	rxe_stamp "server starts"
	rxe_start "$srv" "$out_s" "${server[@]}"
	spid=$rxe_pid
	rxe_ready "$spid" "$ready" || { echo "FAIL: the server did not come up"; failed=1; }
	if [ $failed = 0 ]; then
		rxe_stamp "server ready ($ready), client starts"
		rxe_start "$cli" "$out_c" "${client[@]}"
		rxe_wait "$rxe_pid" client || failed=1
		rxe_stamp "client ended"
	fi
	rxe_wait "$spid" server || failed=1
	rxe_stamp "server ended"
	rxe_show "$out_s" "$out_c"
	! grep -Eil 'error|fail|unhandled|dpverbs:' "$out_s" "$out_c" ||
		{ echo "FAIL: a side complained"; failed=1; }
	rxe_out_s=$out_s rxe_out_c=$out_c
	return $failed
}

# How to know an rdma_cm server is up: the kernel's lists its id, dpverbs' answers ARP.
rxe_ready_of() { # server-side port
	if [ "$1" = k ]; then echo "cm:$2"; else echo arp; fi
}

rxe_rping() { # case server-side [rping-options...]
	local ip=$rxe_ip_d failed=0 name=$1 srv=$2
	shift 2
	[ "$srv" = k ] && ip=$rxe_ip_k
	rxe_pair "$name" "$srv" "$(rxe_ready_of "$srv" 20500)" \
		rping -s -a $ip -p 20500 -v -V -C 10 -S 3000 "$@" -- \
		rping -c -a $ip -p 20500 -v -V -C 10 -S 3000 "$@" || failed=1
	rxe_check_rping "$rxe_out_c" client "ping data: " 10 3000 || failed=1
	rxe_check_rping "$rxe_out_s" server "server ping data: " 10 3000 || failed=1
	return $failed
}

rxe_rc() { # case server-side
	local kargs=(-d rxe0 -g "$rxe_gid") dargs=(-g 0) s c
	if [ "$2" = k ]; then s=("${kargs[@]}") c=("${dargs[@]}"); else s=("${dargs[@]}") c=("${kargs[@]}"); fi
	rxe_pair "$1" "$2" tcp:20502 ibv_rc_pingpong "${s[@]}" -p 20502 -n 20 -s 4096 -c -- \
		ibv_rc_pingpong "${c[@]}" -p 20502 -n 20 -s 4096 -c localhost || return 1
	grep -Eq '^20 iters in' "$rxe_out_c" || { echo "FAIL: the client did not finish 20 iterations"; return 1; }
}

rxe_cm_pair() { # case server-side program port args...
	local name=$1 srv=$2 prog=$3 port=$4 ip=$rxe_ip_d f
	shift 4
	[ "$srv" = k ] && ip=$rxe_ip_k
	rxe_pair "$name" "$srv" "$(rxe_ready_of "$srv" "$port")" "$prog" -b $ip "$@" -- "$prog" -s $ip "$@" || return 1
	for f in "$rxe_out_s" "$rxe_out_c"; do
		if ! grep -q '^test complete' "$f" || ! grep -q '^return status 0' "$f"; then
			echo "FAIL: $(basename "$f"): no \"test complete\" and \"return status 0\""
			return 1
		fi
	done
}

rxe_cases="rxe_setup rxe_rping_dk rxe_rping_kd rxe_rc_dk rxe_rc_kd rxe_udaddy_kd"
rxe_named="rxe_ucmatose_dk rxe_ucmatose_kd rxe_udaddy_dk rxe_rping_q_dk rxe_rping_q_kd"
rxe_wanted=""
for c in $rxe_cases; do want "$c" && rxe_wanted+=" $c"; done
for c in $rxe_named; do more "$c" && rxe_wanted+=" $c"; done
if [ -n "$rxe_wanted" ]; then
	why=${DPV_VM_RXE_SKIP:-}
	if [ -n "$why" ]; then
		for c in $rxe_wanted; do
			echo "skipped: $why" >"$job/$c.log"
			result skip "$c" 0
		done
	else
		# Every rxe case stands on it, named or not.
		[ -n "${DPV_VM_CASES:-}" ] && DPV_VM_CASES+=" rxe_setup"
		run_case rxe_setup 60 rxe_setup
		if [ -n "$rxe_gid" ]; then
			run_case rxe_rping_dk 120 rxe_rping rxe_rping_dk d
			run_case rxe_rping_kd 120 rxe_rping rxe_rping_kd k
			run_case rxe_rc_dk 120 rxe_rc rxe_rc_dk d
			run_case rxe_rc_kd 120 rxe_rc rxe_rc_kd k
			# Only when DPV_VM_CASES names them: the rping cases have both passive
			# sides already, and each case costs some 10 s under TCG.
			more rxe_ucmatose_dk &&
				run_case rxe_ucmatose_dk 120 rxe_cm_pair rxe_ucmatose_dk d ucmatose 7471 -c 2 -C 10
			more rxe_ucmatose_kd &&
				run_case rxe_ucmatose_kd 120 rxe_cm_pair rxe_ucmatose_kd k ucmatose 7471 -c 2 -C 10
			more rxe_rping_q_dk && run_case rxe_rping_q_dk 120 rxe_rping rxe_rping_q_dk d -q
			more rxe_rping_q_kd && run_case rxe_rping_q_kd 120 rxe_rping rxe_rping_q_kd k -q
			more rxe_udaddy_dk &&
				run_case rxe_udaddy_dk 120 rxe_cm_pair rxe_udaddy_dk d udaddy 7174 -c 2 -C 10
			run_case rxe_udaddy_kd 120 rxe_cm_pair rxe_udaddy_kd k udaddy 7174 -c 2 -C 10
		fi
	fi
fi
