#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The drop-in's ABI, from the outside (objdump -T), against what binaries built with
# rdma-core import and against its own version script:
#   1. every IBVERBS_* symbol each of ibverbs-utils' binaries imports is defined by
#      the drop-in in that version node (they are linked BIND_NOW: one missing symbol
#      and the program does not start);
#   2. every symbol of libibverbs.map is exported, in the node the map puts it in;
#   3. nothing else is exported (the DPDK linked in stays private).
# Usage: abi.sh LIBIBVERBS.SO.1 LIBIBVERBS.MAP

set -u
lib=$1 map=$2
bins=(ibv_devices ibv_devinfo ibv_rc_pingpong ibv_srq_pingpong ibv_ud_pingpong ibv_uc_pingpong)

command -v objdump >/dev/null || { echo "skipped: no objdump (binutils)"; exit 77; }
for b in "${bins[@]}"; do
	command -v "$b" >/dev/null || { echo "skipped: $b is not installed (ibverbs-utils)"; exit 77; }
done

tmp=$(mktemp -d /tmp/dpv-abi.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT

# "name version" of what the library defines (a version in parentheses is a
# non-default one, name@VERSION; it binds an import of that version all the same).
objdump -T "$lib" | awk '$0 !~ /\*UND\*/ && / D[FO] / && /IBVERBS_/ {
	v = $(NF - 1); gsub(/[()]/, "", v); print $NF, v }' | sort -u >"$tmp/defined"
if [ ! -s "$tmp/defined" ]; then
	echo "FAIL: $lib defines no IBVERBS_* symbol"
	exit 1
fi

failed=0
for b in "${bins[@]}"; do
	objdump -T "$(command -v "$b")" | awk '/\*UND\*/ && /IBVERBS_/ {
		v = $(NF - 1); gsub(/[()]/, "", v); print $NF, v }' | sort -u >"$tmp/$b"
	missing=$(comm -23 "$tmp/$b" "$tmp/defined")
	if [ -n "$missing" ]; then
		echo "FAIL: $b imports what the drop-in does not define:"
		echo "$missing" | sed 's/^/    /'
		failed=1
	else
		echo "ok: $b: its $(wc -l <"$tmp/$b") imports are all defined"
	fi
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
objdump -T "$lib" | awk '$0 !~ /\*UND\*/ && / D[FO] / && $NF !~ /^IBVERBS_/ { print $NF }' |
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
