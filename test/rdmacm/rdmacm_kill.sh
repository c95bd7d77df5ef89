#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# rdmacm_kill over af_packet: the survivor in one network namespace, its peers in
# another, on the two ends of a veth pair, so that the MADs and the killed peers' lost
# frames cross the kernel. Usage:
#
#   rdmacm_kill.sh PROGRAM
#
# PROGRAM is rdmacm_kill (with DPV_EAL_ARGS of the memory mode, as meson sets it). Needs
# root (skipped without it). DPV_RDMACM_NETNS (default dpv) starts the names of the
# namespaces and veth ends; they and the temporary directory are removed on every exit,
# and only the process started here is ended, by pid.

set -u
# shellcheck source=../lib/link.sh
. "$(dirname "$0")/../lib/link.sh"

link_args 1 "PROGRAM" "$@"
prog=$1
link_need_root "the afpacket link needs root (network namespaces, a veth pair)"
link_init "${TMPDIR:-/tmp}/dpv-rdmacm-kill.XXXXXX"
link_netns_pair "${DPV_RDMACM_NETNS:-dpv}"
# No address of the kernel's on either end: ARP for the devices' addresses is theirs.
# IPv6 off, so the kernel sends nothing on the link of its own.
for ns in "$ns_a" "$ns_b"; do
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 || exit 1
done
"$prog" afpacket "$ns_a" "$veth_a" "$ns_b" "$veth_b" &
link_track $!
pid=$last_pid
wait "$pid"
rc=$?
link_forget "$pid"
exit $rc
