#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A/B two versions of lib/tm/dpv_tm.c in one process (tm_ab.c says how and why).
#   devtools/tm-ab/tm-ab.sh A B [DEPTH [REPS [OPS_PER_REP [noref]]]]
# A and B are each a file, or a git revision (its lib/tm/dpv_tm.c). Example:
#   devtools/tm-ab/tm-ab.sh HEAD~1 lib/tm/dpv_tm.c 1024 41
# CLOCK=cpu times by the process's CPU time rather than the wall clock (a loaded machine).
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
[ $# -ge 2 ] || { sed -n '3,7p' "$0"; exit 2; }
a=$1 b=$2
shift 2
# TM_AB_BUILD=DIR: only build DIR/tm_ab, and keep it (tm-ir.sh counts with it).
if [ -n "${TM_AB_BUILD:-}" ]; then
	work=$TM_AB_BUILD
else
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
fi
flags=(-O2 -g -Wall -Wextra -Werror -I"$top/lib/tm" -I"$top/test/ref")
for side in A B; do
	src=$a
	[ $side = B ] && src=$b
	if [ -f "$src" ]; then
		cp "$src" "$work/$side.c"
	else
		git -C "$top" show "$src:lib/tm/dpv_tm.c" >"$work/$side.c"
	fi
	cc "${flags[@]}" -c "$work/$side.c" -o "$work/$side.o"
	nm "$work/$side.o" | awk -v p="${side}_" '$2 ~ /^[TDBR]$/ && $3 ~ /^dpv_tm/ {print $3, p $3}' \
		>"$work/$side.syms"
	objcopy --redefine-syms="$work/$side.syms" "$work/$side.o"
done
cc "${flags[@]}" -c "$top/test/ref/tm_ref.c" -o "$work/ref.o"
cc "${flags[@]}" "$top/devtools/tm-ab/tm_ab.c" "$work/A.o" "$work/B.o" "$work/ref.o" \
	-o "$work/tm_ab"
[ -n "${TM_AB_BUILD:-}" ] || "$work/tm_ab" "${@:-1024}"
