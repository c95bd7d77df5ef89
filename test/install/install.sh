#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# install.sh BUILDDIR PREFIX LIBDIR BINDIR INCLUDEDIR MANDIR DATADIR PROGRAM.c
#
# What a user gets from `meson install`: the build is installed into a temporary
# DESTDIR, whose files must be exactly the public ones: the commands, their man pages,
# the drop-in libibverbs.so.1 and librdmacm.so.1 and their links, dpverbs.pc, dpv_verbs.h and the profile,
# no internal header and no static library. The drop-in, dpv-perf and dpv-devnodes (as
# root: the nodes it makes and removes) are checked there, then PROGRAM.c, an ordinary
# verbs program that includes dpv_verbs.h, is built with `pkg-config --cflags --libs
# dpverbs` alone and run on the installed drop-in with a ring pair: it must list dpv0
# and dpv1 and query them.
# LIBDIR and the other directories are meson's options: relative to PREFIX, or absolute.
# Environment: MESON, PKG_CONFIG and CC name the tools (default: from PATH).
set -u
if [ $# -ne 8 ]; then
	echo "usage: $0 BUILDDIR PREFIX LIBDIR BINDIR INCLUDEDIR MANDIR DATADIR PROGRAM.c" >&2
	exit 2
fi
build=$1 prefix=$2 src=$8
meson=${MESON:-meson} pkg_config=${PKG_CONFIG:-pkg-config} cc=${CC:-cc}
under_prefix() { case $1 in /*) echo "$1" ;; *) echo "$prefix/$1" ;; esac; }
libdir=$(under_prefix "$3") bindir=$(under_prefix "$4") includedir=$(under_prefix "$5")
mandir=$(under_prefix "$6") datadir=$(under_prefix "$7")

tmp=$(mktemp -d)
eal_prefix=dpvinstall$$
# EAL's run-time directory of the run below: /var/run/dpdk/<prefix> as root, else under
# XDG_RUNTIME_DIR.
trap 'rm -rf "$tmp" "/var/run/dpdk/$eal_prefix" "${XDG_RUNTIME_DIR:-/tmp}/dpdk/$eal_prefix"' EXIT
root=$tmp/root
n=0 fails=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; }
check() { # description, command...
	local what=$1
	shift
	if "$@"; then ok "$what"; else not_ok "$what"; fi
}

if ! "$meson" install -C "$build" --no-rebuild --quiet --destdir "$root" >"$tmp/install.log" 2>&1; then
	not_ok "meson install --destdir"
	sed 's/^/  /' "$tmp/install.log"
	echo "$((n - fails)) of $n install checks passed"
	exit 1
fi
ok "meson install --destdir"

# Every file installed, nothing more and nothing less.
expected=$(printf '%s\n' "$bindir/dpv-devnodes" "$bindir/dpv-perf" "$bindir/dpv-testpmd" \
	"$includedir/dpverbs/dpv_verbs.h" \
	"$libdir/dpverbs/libibverbs.so" "$libdir/dpverbs/libibverbs.so.1" \
	"$libdir/dpverbs/libibverbs.so.1.14.44" "$libdir/dpverbs/librdmacm.so" \
	"$libdir/dpverbs/librdmacm.so.1" "$libdir/dpverbs/librdmacm.so.1.3.44" \
	"$libdir/pkgconfig/dpverbs.pc" \
	"$datadir/dpverbs/ring-pair.ini" \
	"$mandir/man1/dpv-devnodes.1" "$mandir/man1/dpv-perf.1" "$mandir/man1/dpv-testpmd.1" \
	"$mandir/man7/dpverbs.7" | sort)
installed=$(cd "$root" && find . ! -type d | sed 's/^\.//' | sort)
if [ "$installed" = "$expected" ]; then
	ok "the installed files are exactly the $(echo "$expected" | wc -l) public ones"
else
	not_ok "the installed files are exactly the $(echo "$expected" | wc -l) public ones"
	comm -23 <(echo "$expected") <(echo "$installed") | sed 's/^/  missing: /'
	comm -13 <(echo "$expected") <(echo "$installed") | sed 's/^/  not expected: /'
fi

# The drop-in, in a directory of its own, with the links a linker and a loader follow.
dropin=$root$libdir/dpverbs
real=
for f in "$dropin"/libibverbs.so.1.*; do
	[ -e "$f" ] && real=${f##*/} && break
done
check "drop-in library $libdir/dpverbs/${real:-libibverbs.so.1.*}" \
	test -n "$real" -a -f "$dropin/$real" -a ! -L "$dropin/$real"
check "libibverbs.so.1 links to $real" \
	test -L "$dropin/libibverbs.so.1" -a "$(readlink -f "$dropin/libibverbs.so.1")" = "$(readlink -f "$dropin/$real")"
check "libibverbs.so links to $real" \
	test -L "$dropin/libibverbs.so" -a "$(readlink -f "$dropin/libibverbs.so")" = "$(readlink -f "$dropin/$real")"
check "its SONAME is libibverbs.so.1" \
	grep -q 'SONAME.*\[libibverbs\.so\.1\]' <(readelf -d "$dropin/$real" 2>&1)

# The drop-in librdmacm beside it, which takes that libibverbs.so.1 whatever the
# program's search path.
check "librdmacm.so.1 links to librdmacm.so.1.3.44" \
	test -L "$dropin/librdmacm.so.1" -a "$(readlink -f "$dropin/librdmacm.so.1")" = "$(readlink -f "$dropin/librdmacm.so.1.3.44")"
check "its SONAME is librdmacm.so.1" \
	grep -q 'SONAME.*\[librdmacm\.so\.1\]' <(readelf -d "$dropin/librdmacm.so.1.3.44" 2>&1)
check "librdmacm.so.1 loads the libibverbs.so.1 beside it" \
	grep -q "libibverbs\.so\.1 => $dropin/libibverbs\.so\.1 " <(env -u LD_LIBRARY_PATH ldd "$dropin/librdmacm.so.1" 2>&1)

check "dpv-perf in $bindir runs" grep -q '^usage: dpv-perf' <("$root$bindir/dpv-perf" --help 2>&1)
check "dpv-devnodes in $bindir, executable" test -x "$root$bindir/dpv-devnodes"
check "dpv-devnodes --check finds no node in an empty directory" \
	grep -q "dpv-devnodes: no $tmp/ib/dpv0 " <("$root$bindir/dpv-devnodes" --dir "$tmp/ib" --check 1 2>&1)
if [ "$(id -u)" = 0 ]; then
	# Root can make nodes: two, then --check, then --remove (which takes the directory).
	check "dpv-devnodes --dir makes dpv0 and dpv1, 1:3 character nodes" \
		sh -c '"$1" --dir "$2" 2 && "$1" --dir "$2" --check 2 &&
			test "$(stat -c %t:%T:%a "$2/dpv1")" = 1:3:666' sh "$root$bindir/dpv-devnodes" "$tmp/ib"
	check "dpv-devnodes --remove removes them and the directory" \
		sh -c '"$1" --dir "$2" --remove 2 && test ! -e "$2"' sh "$root$bindir/dpv-devnodes" "$tmp/ib"
fi

# A program built as the user would, from the installed tree only.
flags=$(PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_PATH=$root$libdir/pkgconfig \
	"$pkg_config" --cflags --libs dpverbs 2>"$tmp/pc.err")
check "pkg-config --cflags --libs dpverbs: $flags" test -n "$flags" -a ! -s "$tmp/pc.err"
prog=$tmp/list_devices
# shellcheck disable=SC2086 # the flags are words
if $cc -Wall -Wextra -Werror -o "$prog" "$src" $flags >"$tmp/cc.log" 2>&1; then
	ok "cc $(basename "$src") \$(pkg-config --cflags --libs dpverbs)"
else
	not_ok "cc $(basename "$src") \$(pkg-config --cflags --libs dpverbs)"
	sed 's/^/  /' "$tmp/cc.log"
fi
readelf -d "$prog" >"$tmp/dynamic" 2>&1
check "the program NEEDs libibverbs.so.1" grep -q 'NEEDED.*\[libibverbs\.so\.1\]' "$tmp/dynamic"
# pkg-config puts the sysroot in front of libdir or not, depending on its make: either
# way the RUNPATH is the drop-in's directory.
runpath=$(sed -n 's/.*(RUNPATH).*\[\(.*\)\]$/\1/p' "$tmp/dynamic")
check "its RUNPATH is the drop-in's directory ($runpath)" \
	test "$runpath" = "$libdir/dpverbs" -o "$runpath" = "$dropin"

export LD_LIBRARY_PATH=$dropin
check "the loader takes libibverbs.so.1 from $libdir/dpverbs" \
	grep -q "libibverbs\.so\.1 => $dropin/libibverbs\.so\.1 " <(ldd "$prog" 2>&1)
env -u DPV_CONFIG -u DPV_PROGRESS -u DPV_CAPTURE DPV_RING_PAIRS=1 \
	DPV_PORT_IPV4=127.0.0.1,127.0.0.2 \
	DPV_EAL_ARGS="-l 0 --no-huge -m 256 --no-pci --no-telemetry --no-shconf --file-prefix=$eal_prefix" \
	timeout 60 "$prog" >"$tmp/run.out" 2>"$tmp/run.err"
rc=$?
check "the program exits 0 (exit $rc)" test $rc -eq 0
check "it lists two devices" grep -qx 'devices: 2' "$tmp/run.out"
check "fw_ver is dpverbs and DPV_VERSION of the installed dpv_verbs.h" \
	grep -qx "fw_ver: dpverbs $(sed -n 's/^#define DPV_VERSION "\(.*\)"$/\1/p' \
		"$root$includedir/dpverbs/dpv_verbs.h")" "$tmp/run.out"
check "named dpv0 and dpv1" \
	test "$(grep '^device [0-9]*:' "$tmp/run.out" | tr '\n' ' ')" = "device 0: dpv0 device 1: dpv1 "
check "port 1 of dpv0 is active" grep -q '^port 1: PORT_ACTIVE,' "$tmp/run.out"
check "GID 0 of dpv0 is ::ffff:127.0.0.1" grep -qx 'gid 0: ::ffff:127.0.0.1' "$tmp/run.out"
check "dpv_verbs_query_engine() links and answers" grep -q '^engine: ' "$tmp/run.out"
if [ $fails -ne 0 ]; then
	sed 's/^/  stdout: /' "$tmp/run.out"
	sed 's/^/  stderr: /' "$tmp/run.err"
fi
echo "$((n - fails)) of $n install checks passed"
[ $fails -eq 0 ]
