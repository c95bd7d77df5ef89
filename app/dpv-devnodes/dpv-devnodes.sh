#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
#
# dpv-devnodes: the device nodes that UCX looks for before it uses a verbs device.
#
# UCX (libuct_ib) keeps a device from ibv_get_device_list() only when
# /dev/infiniband/<dev_name> is a character device the process may read and write, the
# node through which rdma-core's library talks to the kernel. dpverbs has no kernel
# device and never opens such a node; its devices' dev_name is their name (dpv0,
# dpv1...). This makes, for each of them, a character node with the numbers of
# /dev/null (1:3), mode 0666: what UCX checks is there, and whoever opens it gets
# /dev/null. rdma-core's own library finds its devices through sysfs
# (/sys/class/infiniband_verbs), so these nodes change nothing for programs on it.
#
#   dpv-devnodes [--dir DIR] [COUNT]           make dpv0 .. dpv<COUNT-1> (default 32,
#                                              every device dpverbs can list)
#   dpv-devnodes [--dir DIR] --remove [COUNT]  remove the nodes it made
#   dpv-devnodes [--dir DIR] --check [COUNT]   exit 0 if they are all there
#
# DIR is /dev/infiniband unless given. Needs root (mknod) for make and remove. A name
# already taken by anything other than such a node is left alone and reported, and
# --remove removes only 1:3 character nodes named dpvN, and DIR itself when empty.
# The nodes live as long as the /dev they are in (until reboot on devtmpfs).

set -u

dir=/dev/infiniband
action=make
count=32

usage() {
	echo "usage: dpv-devnodes [--dir DIR] [--remove | --check] [COUNT]" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--dir) [ $# -ge 2 ] || usage; dir=$2; shift ;;
	--remove) action=remove ;;
	--check) action=check ;;
	-h | --help) sed -n '4,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) usage ;;
	*) count=$1 ;;
	esac
	shift
done
case $count in
'' | *[!0-9]*) echo "dpv-devnodes: COUNT must be a number, not '$count'" >&2; exit 2 ;;
esac
if [ "$count" -lt 1 ] || [ "$count" -gt 32 ]; then
	echo "dpv-devnodes: COUNT must be 1 to 32 (dpverbs lists at most 32 devices)" >&2
	exit 2
fi

# A node of ours: a character device 1:3 (stat prints the numbers in hex).
ours() {
	[ -c "$1" ] && [ "$(stat -c '%t:%T' "$1")" = 1:3 ]
}

rc=0
i=0
while [ "$i" -lt "$count" ]; do
	node=$dir/dpv$i
	case $action in
	make)
		if ours "$node"; then
			chmod 0666 "$node" || rc=1
		elif [ -e "$node" ] || [ -L "$node" ]; then
			echo "dpv-devnodes: $node exists and is not a 1:3 character node: left alone" >&2
			rc=1
		else
			mkdir -p "$dir" && mknod -m 0666 "$node" c 1 3 || rc=1
		fi
		;;
	remove)
		if ours "$node"; then
			rm -f "$node" || rc=1
		elif [ -e "$node" ]; then
			echo "dpv-devnodes: $node is not a 1:3 character node: left alone" >&2
		fi
		;;
	check)
		if ! ours "$node"; then
			echo "dpv-devnodes: no $node (run dpv-devnodes as root)" >&2
			rc=1
		elif [ ! -r "$node" ] || [ ! -w "$node" ]; then
			echo "dpv-devnodes: $node is not readable and writable by this user" >&2
			rc=1
		fi
		;;
	esac
	i=$((i + 1))
done
[ "$action" = remove ] && rmdir "$dir" 2>/dev/null
exit $rc
