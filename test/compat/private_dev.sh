#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Run a command with the /dev/infiniband nodes UCX needs (dpv-devnodes makes them:
# doc/guides/dropin.md), in a mount namespace of its own, so that the machine's /dev is
# untouched. Usage:
#
#   private_dev.sh DEVNODES COMMAND [ARGS...]
#
#   DEVNODES  the dpv-devnodes script (app/dpv-devnodes/dpv-devnodes.sh)
#
# A machine without RDMA hardware has no /dev/infiniband, and a tmpfs cannot be
# mounted on a directory that is not there without making it in the machine's /dev. So
# the namespace gets a /dev of its own: a tmpfs on which every entry of the real /dev
# is bind-mounted back (directories such as /dev/shm, /dev/hugepages and /dev/pts with
# what is mounted under them), and then dpv-devnodes makes /dev/infiniband/dpv0 ... in
# it. Every process the command starts shares that /dev; the namespace, and with it
# every mount made here, ends with the last of them. Needs root (exit 77 without it).

set -u

if [ $# -lt 2 ]; then
	echo "usage: $0 DEVNODES COMMAND [ARGS...]" >&2
	exit 2
fi
if [ "$(id -u)" != 0 ]; then
	echo "skipped: a private /dev needs root (unshare -m, mount)"
	exit 77
fi
devnodes=$1
shift
if ! unshare -m --propagation private true 2>/dev/null; then
	echo "skipped: cannot make a mount namespace here (unshare -m)"
	exit 77
fi
host=$(mktemp -d /tmp/dpv-privdev.XXXXXX) || exit 1

# shellcheck disable=SC2016
exec unshare -m --propagation private bash -c '
	set -u
	host=$1 devnodes=$2
	shift 2
	fail() { echo "private_dev.sh: $*" >&2; exit 1; }
	mount --rbind /dev "$host" || fail "cannot bind /dev"
	mount -t tmpfs -o mode=0755,size=1m dpv-dev /dev || fail "cannot mount a tmpfs on /dev"
	for e in "$host"/* "$host"/.[!.]*; do
		[ -e "$e" ] || [ -L "$e" ] || continue
		n=/dev/${e##*/}
		if [ -L "$e" ]; then
			cp -P "$e" "$n"
		elif [ -d "$e" ]; then
			mkdir "$n" && mount --rbind "$e" "$n"
		else
			touch "$n" && mount --bind "$e" "$n"
		fi || fail "cannot bring back $n"
	done
	umount -l "$host" && rmdir "$host" || fail "cannot let go of $host"
	sh "$devnodes" || fail "dpv-devnodes failed"
	exec "$@"' private_dev "$host" "$devnodes" "$@"
