#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A running device attacked from another network namespace (test_hostile.c, attack.py).
#
#   hostile.sh nohuge|huge TEST_HOSTILE
#
# Two network namespaces and two veth pairs:
#
#   namespace D: the test program, devices dpv0 (net_af_packet on a0) and dpv1 (on b0)
#   namespace X: xa (a0's peer) and xb (b0's peer) in a bridge, so dpv0 and dpv1 reach
#                each other through X's kernel, and the attacker (attack.py, scapy for
#                its checks and a raw packet socket for speed) sends on xa, straight at
#                dpv0.
#
# Neither namespace gives the kernel an IPv4 address or IPv6, so the only ones to
# answer frames on these links are the two dpverbs devices. The namespaces, and with
# them the veth pairs, are removed on every exit.
set -u
# The temporary directory, the names of the run, the namespaces and their clean-up.
# shellcheck source=../lib/link.sh
. "$(dirname "$0")/../lib/link.sh"

if [ $# -ne 2 ]; then
	echo "usage: hostile.sh nohuge|huge TEST_HOSTILE" >&2
	exit 2
fi
memory=$1 prog=$2
here=$(cd "$(dirname "$0")" && pwd)

link_need_root "needs root (network namespaces, veth pairs)"
# Debian's scapy is a package of Debian's own python3.
if ! /usr/bin/python3 -c 'import scapy.contrib.roce' 2>/dev/null; then
	echo "skipped: /usr/bin/python3 has no scapy (Debian package python3-scapy)"
	exit 77
fi
link_eal "$memory" 512

link_init /tmp/dpv-hostile.XXXXXX
# Namespace D is side A's (ns_a), X side B's, for link_cleanup.
ns_d=dpvh${id}d ns_x=dpvh${id}x
link_netns "$ns_d"
ns_a=$ns_d
ip netns add "$ns_x" || exit 1
ns_b=$ns_x
for ns in "$ns_d" "$ns_x"; do
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
		net.ipv6.conf.default.disable_ipv6=1 || exit 1
	ip -n "$ns" link set lo up || exit 1
done
for end in a b; do
	ip link add "dpvh${id}$end" type veth peer name "dpvh${id}x$end" || exit 1
	veths+=("dpvh${id}$end")
	ip link set "dpvh${id}$end" netns "$ns_d" name "${end}0" || exit 1
	ip link set "dpvh${id}x$end" netns "$ns_x" name "x$end" || exit 1
done
ip -n "$ns_x" link add br0 type bridge || exit 1
for i in xa xb; do
	ip -n "$ns_x" link set "$i" master br0 up || exit 1
done
ip -n "$ns_x" link set br0 up || exit 1
ip -n "$ns_d" link set a0 up && ip -n "$ns_d" link set b0 up || exit 1
mac() { ip -n "$1" -br link show "$2" | awk '{print $3}'; }

export DPV_EAL_ARGS="-l 0 $eal_common \
--vdev=net_af_packet0,iface=a0,framecnt=4096 --vdev=net_af_packet1,iface=b0,framecnt=4096"
export DPV_PORT_IPV4=10.202.0.1,10.202.0.2
mac_a=$(mac "$ns_d" a0) mac_b=$(mac "$ns_d" b0)
export DPV_HOSTILE_MAC_A=$mac_a DPV_HOSTILE_MAC_B=$mac_b
export DPV_HOSTILE_DIR=$tmp
# test_hostile runs the attacker itself, one phase at a time, while it drives the
# devices: "ip netns exec X /usr/bin/python3 attack.py PHASE DIR" on xa.
export DPV_HOSTILE_NETNS=$ns_x DPV_HOSTILE_IFACE=xa
export DPV_HOSTILE_SCRIPT=$here/attack.py
ip netns exec "$ns_d" "$prog"
