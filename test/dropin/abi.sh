#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The drop-in's ABI, from the outside (objdump -T), against what binaries built with
# rdma-core import and against its own version script:
#   1. every IBVERBS_* symbol each of ibverbs-utils' binaries imports is defined by
#      the drop-in in that version node (they are linked BIND_NOW: one missing symbol
#      and the program does not start);
#   2. every symbol of libibverbs.map is exported, in the node the map puts it in
#      (rdma-core's IBVERBS_* nodes, and DPVERBS_0.1 for the calls of dpv_verbs.h);
#   3. nothing else is exported (the DPDK linked in stays private);
#   4. every IBVERBS_* symbol rdma-core's provider libraries import (ibverbs-providers:
#      libmlx5, libefa... which perftest, UCX and pyverbs link directly) is defined, as
#      is every one that perftest's and UCX's binaries import, where those packages
#      are installed.
# Usage: abi.sh LIBIBVERBS.SO.1 LIBIBVERBS.MAP

set -u
# The temporary directory and its clean-up.
# shellcheck source=../lib/link.sh
. "$(dirname "$0")/../lib/link.sh"
link_args 2 "LIBIBVERBS.SO.1 LIBIBVERBS.MAP" "$@"
lib=$1 map=$2
bins=(ibv_devices ibv_devinfo ibv_rc_pingpong ibv_srq_pingpong ibv_ud_pingpong ibv_uc_pingpong)

command -v objdump >/dev/null || { echo "skipped: no objdump (binutils)"; exit 77; }
for b in "${bins[@]}"; do
	link_need "$b" ibverbs-utils
done

link_init /tmp/dpv-abi.XXXXXX

# "name version" of what the library defines (a version in parentheses is a
# non-default one, name@VERSION; it binds an import of that version all the same).
objdump -T "$lib" | awk '$0 !~ /\*UND\*/ && / D[FO] / && /(IBVERBS|DPVERBS)_/ {
	v = $(NF - 1); gsub(/[()]/, "", v); print $NF, v }' | sort -u >"$tmp/defined"
if [ ! -s "$tmp/defined" ]; then
	echo "FAIL: $lib defines no IBVERBS_* symbol"
	exit 1
fi

failed=0
# check_imports FILE: every IBVERBS_* symbol FILE imports is defined.
check_imports() {
	local f=$1 n
	n=$(basename "$1")
	objdump -T "$f" | awk '/\*UND\*/ && /IBVERBS_/ {
		v = $(NF - 1); gsub(/[()]/, "", v); print $NF, v }' | sort -u >"$tmp/imports"
	missing=$(comm -23 "$tmp/imports" "$tmp/defined")
	if [ -n "$missing" ]; then
		echo "FAIL: $n imports what the drop-in does not define:"
		echo "$missing" | sed 's/^/    /'
		failed=1
	else
		echo "ok: $n: its $(wc -l <"$tmp/imports") imports are all defined"
	fi
}
for b in "${bins[@]}"; do
	check_imports "$(command -v "$b")"
done

# The provider libraries, as the real libibverbs.so.1's directory holds them.
real=$(ldconfig -p | awk '$1 == "libibverbs.so.1" && /x86-64|x86_64/ { print $NF; exit }')
libs=()
if [ -n "$real" ]; then
	d=$(dirname "$(readlink -f "$real")")
	for f in "$d"/lib{mlx5,mlx4,efa,mana}.so.1 "$d"/libibverbs/*-rdmav34.so; do
		[ -e "$f" ] && libs+=("$(readlink -f "$f")")
	done
fi
if [ ${#libs[@]} -eq 0 ]; then
	echo "FAIL: no rdma-core provider library found (Debian package ibverbs-providers)"
	failed=1
fi
for f in $(printf '%s\n' "${libs[@]}" | sort -u); do
	check_imports "$f"
done
for p in perftest ucx-utils libucx0; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || {
		echo "not checked: $p is not installed"
		continue
	}
	for f in $(dpkg -L "$p" | grep -E '/bin/|\.so'); do
		[ -f "$f" ] && [ ! -L "$f" ] && objdump -T "$f" 2>/dev/null | grep -q 'IBVERBS_' &&
			check_imports "$f"
	done
done

# The version script: a node opens with "NAME {", a symbol is "name;" inside it.
awk '/^[A-Za-z0-9_.]+[ \t]*\{/ { node = $1; sub(/\{.*/, "", node); next }
	/^[ \t]*}/ { node = ""; next }
	node != "" && /^[ \t]*[A-Za-z_][A-Za-z0-9_]*;/ {
		s = $1; sub(/;.*/, "", s); print s, node }' "$map" | sort -u >"$tmp/map"
if [ ! -s "$tmp/map" ]; then
	echo "FAIL: no symbol read from $map"
	exit 1
fi
missing=$(comm -23 "$tmp/map" "$tmp/defined")
if [ -n "$missing" ]; then
	echo "FAIL: $(echo "$missing" | wc -l) symbols of $(basename "$map") are not exported in their node:"
	echo "$missing" | sed 's/^/    /'
	failed=1
else
	echo "ok: the $(wc -l <"$tmp/map") symbols of $(basename "$map") are exported in their nodes"
fi

# Every exported name of any version: none outside the map.
objdump -T "$lib" | awk '$0 !~ /\*UND\*/ && / D[FO] / && $NF !~ /^(IBVERBS|DPVERBS)_/ { print $NF }' |
	sort -u >"$tmp/exported"
cut -d' ' -f1 "$tmp/map" | sort -u >"$tmp/map_names"
extra=$(comm -23 "$tmp/exported" "$tmp/map_names")
if [ -n "$extra" ]; then
	echo "FAIL: exported but not in $(basename "$map"):"
	echo "$extra" | head -20 | sed 's/^/    /'
	failed=1
else
	echo "ok: nothing exported outside $(basename "$map")"
fi
exit $failed
