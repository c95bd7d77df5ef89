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
#      are installed;
#   5. with the drop-in librdmacm.so.1 and its version script: every DPVERBS_PRIVATE_0.1
#      and IBVERBS_* symbol it imports is defined by the drop-in libibverbs (the node
#      of the calls verbs_cm.h declares, for it alone); it exports exactly what
#      Debian's librdmacm.so.1 does, each symbol in its node, and every RDMACM_*
#      symbol rdmacm-utils' binaries import.
# Usage: abi.sh LIBIBVERBS.SO.1 LIBIBVERBS.MAP [LIBRDMACM.SO.1 LIBRDMACM.MAP]

set -u
# The temporary directory and its clean-up.
# shellcheck source=../lib/link.sh
. "$(dirname "$0")/../lib/link.sh"
link_args 2 "LIBIBVERBS.SO.1 LIBIBVERBS.MAP [LIBRDMACM.SO.1 LIBRDMACM.MAP]" "$@"
lib=$1 map=$2 cmlib=${3:-} cmmap=${4:-}
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
# check_imports FILE [NODES]: every symbol of a NODES version (default IBVERBS_) FILE
# imports is defined.
check_imports() {
	local f=$1 n nodes=${2:-IBVERBS_}
	n=$(basename "$1")
	objdump -T "$f" | awk -v nodes="$nodes" '/\*UND\*/ && $0 ~ nodes {
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

# The drop-in librdmacm.so.1.
if [ -n "$cmlib" ]; then
	check_imports "$cmlib" '(IBVERBS|DPVERBS)_'
	# "name version" of what it defines, against the map and Debian's library.
	objdump -T "$cmlib" | awk '$0 !~ /\*UND\*/ && / D[FO] / && $NF !~ /^RDMACM_/ {
		v = $(NF - 1); gsub(/[()]/, "", v); print $NF, v }' | sort -u >"$tmp/cm_defined"
	awk '/^[A-Za-z0-9_.]+[ \t]*\{/ { node = $1; sub(/\{.*/, "", node); next }
		/^[ \t]*}/ { node = ""; next }
		node != "" && /^[ \t]*[A-Za-z_][A-Za-z0-9_]*;/ {
			s = $1; sub(/;.*/, "", s); print s, node }' "$cmmap" | sort -u >"$tmp/cm_map"
	if [ ! -s "$tmp/cm_map" ] || ! cmp -s "$tmp/cm_map" "$tmp/cm_defined"; then
		echo "FAIL: $(basename "$cmlib") does not export exactly $(basename "$cmmap"):"
		diff "$tmp/cm_map" "$tmp/cm_defined" | sed 's/^/    /' | head -20
		failed=1
	else
		echo "ok: $(basename "$cmlib") exports the $(wc -l <"$tmp/cm_map") symbols of $(basename "$cmmap"), nothing else"
	fi
	real_cm=$(ldconfig -p | awk '$1 == "librdmacm.so.1" && /x86-64|x86_64/ { print $NF; exit }')
	if [ -n "$real_cm" ]; then
		objdump -T "$real_cm" | awk '$0 !~ /\*UND\*/ && / D[FO] / && $NF !~ /^RDMACM_/ {
			v = $(NF - 1); gsub(/[()]/, "", v); print $NF, v }' | sort -u >"$tmp/cm_real"
		if cmp -s "$tmp/cm_real" "$tmp/cm_defined"; then
			echo "ok: the same $(wc -l <"$tmp/cm_real") symbols and versions as $real_cm"
		else
			echo "FAIL: not the symbols and versions of $real_cm:"
			diff "$tmp/cm_real" "$tmp/cm_defined" | sed 's/^/    /' | head -20
			failed=1
		fi
	else
		echo "not checked: no librdmacm.so.1 of rdma-core (Debian package librdmacm1)"
	fi
	sort -u "$tmp/cm_defined" "$tmp/defined" >"$tmp/all_defined"
	cp "$tmp/all_defined" "$tmp/defined"
	if dpkg-query -W -f='${Status}' rdmacm-utils 2>/dev/null | grep -q 'install ok installed'; then
		for f in $(dpkg -L rdmacm-utils | grep /bin/); do
			[ -f "$f" ] && check_imports "$f" '(IBVERBS|RDMACM)_'
		done
	else
		echo "not checked: rdmacm-utils is not installed"
	fi
fi
exit $failed
