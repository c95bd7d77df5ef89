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
mem=$1 console=$2 check=$3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tmp=$(mktemp -d /tmp/dpv-testpmd2.XXXXXX)
pid_a= pid_b=
cleanup() {
	# Only the two consoles this script started, by pid.
	[ -n "$pid_a" ] && kill "$pid_a" 2>/dev/null
	[ -n "$pid_b" ] && kill "$pid_b" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
case $mem in
nohuge) eal_mem="--no-huge --no-shconf -m 512" ;;
huge) eal_mem="--in-memory -m 256" ;;
*) echo "usage: $0 nohuge|huge CONSOLE CHECK_SESSION" >&2; exit 2 ;;
esac
sock=$tmp/memif.sock
eal="-l 0 --no-pci --log-level=lib.eal:error $eal_mem"

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
"$console" $eal --file-prefix="tpA$$" \
	--vdev="net_memif0,role=server,socket=$sock,socket-abstract=no" -- --ip 10.77.0.1 \
	< "$tmp/a.cmds" > "$tmp/a.txt" 2> "$tmp/a.err" &
pid_a=$!
port=
for _ in $(seq 300); do
	port=$(sed -n 's/^listening on TCP port \([0-9]*\) .*/\1/p' "$tmp/a.txt")
	[ -n "$port" ] && break
	kill -0 "$pid_a" 2>/dev/null || break
	sleep 0.1
done
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
"$console" $eal --file-prefix="tpB$$" \
	--vdev="net_memif0,role=client,socket=$sock,socket-abstract=no" -- --ip 10.77.0.2 \
	< "$tmp/b.cmds" > "$tmp/b.txt" 2> "$tmp/b.err" &
pid_b=$!
rc=0
wait "$pid_b" || { echo "FAIL: console B exited $?"; rc=1; }
pid_b=
wait "$pid_a" || { echo "FAIL: console A exited $?"; rc=1; }
pid_a=
python3 "$check" --output "$tmp/a.txt" "$here/session2-a.out" || rc=1
python3 "$check" --output "$tmp/b.txt" "$here/session2-b.out" || rc=1
if [ "$rc" != 0 ]; then
	echo "---- A stderr"; cat "$tmp/a.err"; echo "---- B stderr"; cat "$tmp/b.err"
fi
exit $rc
