#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Two consoles in two processes, joined by memif (server and client on one socket file
# in a temporary directory of this run): A lists two tags, registers an MR and listens
# on a TCP port the kernel picks; B connects its QP there (QPN, PSN, GID over TCP),
# WRITEs 16 bytes into A's MR by the address and rkey A printed, and sends three tagged
# messages, two for A's tags in reverse order and one for no tag. Each console's output
# is checked line by line (session2-a.out, session2-b.out).
# usage: session2.sh nohuge|huge CONSOLE CHECK_SESSION
set -u
# The temporary directory, the memif link, the EAL arguments, the consoles' pids and the
# clean-up after them (only the two consoles this script started, by pid).
# shellcheck source=../lib/link.sh
. "$(dirname "$0")/../lib/link.sh"
link_args 3 "nohuge|huge CONSOLE CHECK_SESSION" "$@"
mem=$1 console=$2 check=$3
here=$(cd "$(dirname "$0")" && pwd)
case $mem in
nohuge | huge) link_eal "$mem" ;;
*) echo "usage: $0 nohuge|huge CONSOLE CHECK_SESSION" >&2; exit 2 ;;
esac
link_init /tmp/dpv-testpmd2.XXXXXX
prefix_a=tpA$$ prefix_b=tpB$$
link_memif
# Both consoles on core 0.
eal_a="-l 0 --file-prefix=$prefix_a $eal_common $vdev_a"
eal_b="-l 0 --file-prefix=$prefix_b $eal_common $vdev_b"

cat > "$tmp/a.cmds" <<'CMDS'
create pd dpv0
create cq dpv0 size 256 ex
create srq 1 size 16 tm 1 tags 16 ops 8
create qp 1 rc 1 srq 1 send 8
create mr 1 4096
post srq_recv 1 4 1024
tag add 1 0x21 signaled
tag add 1 0x22 signaled
poll cq 1 max 2 wait 2
listen 0
poll cq 1 max 3 wait 3
show tags 1
show unexpected 1
show counters srq 1
show mr 1 0 32
quit
CMDS

# shellcheck disable=SC2086
"$console" $eal_a -- --ip 10.77.0.1 < "$tmp/a.cmds" > "$tmp/a.txt" 2> "$tmp/a.err" &
link_track $!
pid_a=$last_pid
port=
# shellcheck disable=SC2317 # wait_until calls it
listens() {
	port=$(sed -n 's/^listening on TCP port \([0-9]*\) .*/\1/p' "$tmp/a.txt")
	[ -n "$port" ]
}
wait_until "$pid_a" listens
if [ -z "$port" ]; then
	echo "FAIL: console A never listened"; cat "$tmp/a.txt" "$tmp/a.err"; exit 1
fi
# Where B may write: A's mr 1, as A printed it.
remote=$(sed -n 's/^mr 1 on dpv0: 4096 bytes at \(0x[0-9a-f]*\), lkey 0x[0-9a-f]*, rkey \(0x[0-9a-f]*\),.*/\1:\2/p' \
	"$tmp/a.txt")

cat > "$tmp/b.cmds" <<CMDS
create pd dpv0
create cq dpv0 size 64
create qp 1 rc 1 send 16
create mr 1 64 fill 0x5a
connect 1 peer 127.0.0.1:$port
write 1 1 $remote size 16
send 1 size 100 tag 0x22 eager
send 1 size 200 tag 0x21 eager
send 1 size 50 tag 0x99 eager
show objects
quit
CMDS
# shellcheck disable=SC2086
"$console" $eal_b -- --ip 10.77.0.2 < "$tmp/b.cmds" > "$tmp/b.txt" 2> "$tmp/b.err" &
link_track $!
pid_b=$last_pid
rc=0
wait "$pid_b" || { echo "FAIL: console B exited $?"; rc=1; }
link_forget "$pid_b"
wait "$pid_a" || { echo "FAIL: console A exited $?"; rc=1; }
link_forget "$pid_a"
python3 "$check" --output "$tmp/a.txt" "$here/session2-a.out" || rc=1
python3 "$check" --output "$tmp/b.txt" "$here/session2-b.out" || rc=1
if [ "$rc" != 0 ]; then
	echo "---- A stderr"; cat "$tmp/a.err"; echo "---- B stderr"; cat "$tmp/b.err"
fi
exit $rc
