#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# A memif client that opens its device before its server is there (drivers/ethdev's
# wait_server()): on the drop-in, with Debian's ibverbs-utils.
#
#   memif_join.sh TCP_PORT
#
# 1. The client (ibv_devinfo) starts first, its server (an ibv_rc_pingpong server,
#    which opens its device and waits) 0.5 s later: the client's open waits for it and
#    the client reports PORT_ACTIVE.
# 2. A client whose server never comes, DPV_LINK_WAIT_MS=300: ibv_devinfo cannot open
#    its device, after the wait, and dpverbs says once, on stderr, that the port was
#    refused its connection.
#
# DPV_DROPIN_LIBDIR names the drop-in's directory. Only the processes started here are
# ended, by pid; the temporary directory and EAL's runtime directories are removed.

set -u
# The two sides, their link and the clean-up after them (link_*), fail and the rest.
# shellcheck source=../lib/link.sh
. "$(dirname "$0")/../lib/link.sh"
link_libdir
tcp_port=${1:?usage: $0 TCP_PORT}
link_need ibv_devinfo ibverbs-utils
link_need ibv_rc_pingpong ibverbs-utils
link_init /tmp/dpv-memif-join.XXXXXX
# Side A the memif server, side B its client.
prefix_a=dpvjoin-$id-s prefix_b=dpvjoin-$id-c

link_eal nohuge 256
link_memif
ip_a=10.79.1.1 ip_b=10.79.1.2
side_eal='' side_ip='' side_run=() side_env=() side_err=''
failed=0

# 1. Client first.
link_side b
link_run 30 "$tmp/c1.out" ibv_devinfo
client=$last_pid
sleep 0.5
link_side a
link_run 30 "$tmp/s1.out" ibv_rc_pingpong -g 0 -p "$tcp_port"
server=$last_pid
wait "$client" || fail "the client (ibv_devinfo) exited with status $?"
link_forget "$client"
grep -Eq $'^\t+state:\t+PORT_ACTIVE \\(4\\)$' "$tmp/c1.out" ||
	fail "the client that started first did not report PORT_ACTIVE"
link_stop "$server"

# 2. No server at all.
t0=$(date +%s%N)
link_side b
side_env=(DPV_LINK_WAIT_MS=300) side_err=$tmp/c2.err
link_run 30 "$tmp/c2.out" ibv_devinfo
client=$last_pid
wait "$client" && fail "ibv_devinfo opened a memif client's device with no server"
link_forget "$client"
waited_ms=$((($(date +%s%N) - t0) / 1000000))
[ "$waited_ms" -ge 300 ] || fail "ibv_devinfo gave up after $waited_ms ms, before DPV_LINK_WAIT_MS=300"
if [ "$(grep -c '^dpverbs:' "$tmp/c2.err")" != 1 ] ||
	! grep -q '^dpverbs: dpv0: cannot open DPDK port 0: Connection refused$' "$tmp/c2.err"; then
	fail "not one dpverbs line saying the port's connection was refused"
fi

if [ "$failed" != 0 ]; then
	for f in c1.out s1.out c2.out c2.err; do
		echo "==== $f"
		cat "$tmp/$f"
	done
	exit 1
fi
echo "ok: a memif client started before its server waits for it; without one it says so"
exit 0
