#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Instructions (and simulated cache misses) per cycle of `dpv-perf tm`'s exact scenario
# for one version of lib/tm/dpv_tm.c, counted by callgrind: noise-free, unlike a timing.
#   devtools/tm-ab/tm-ir.sh A [DEPTH...]      (A: a file or a git revision; default 1 1024 65536)
# It runs tm_ab (tm_ab.c) on A twice, with two numbers of ops, and divides the
# difference of the counts by the difference of the ops, so filling the list cancels
# out. The last level simulated is a 2 MiB L2: "L2 misses" are lines fetched from
# beyond it.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
[ $# -ge 1 ] || { sed -n '3,5p' "$0"; exit 2; }
src=$1
shift
depths=("$@")
[ $# -gt 0 ] || depths=(1 1024 65536)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
TM_AB_BUILD=$work "$top/devtools/tm-ab/tm-ab.sh" "$src" "$src"
n1=100000 n2=600000
for d in "${depths[@]}"; do
	for n in $n1 $n2; do
		valgrind --tool=callgrind --cache-sim=yes --LL=2097152,16,64 --collect-atstart=no \
			--toggle-collect='A_dpv_tm_*' --callgrind-out-file="$work/cg.$n" \
			"$work/tm_ab" "$d" 1 "$n" noref >/dev/null 2>&1
	done
	awk -v d="$d" -v n=$((n2 - n1)) '
		/^events:/ { for (i = 2; i <= NF; i++) ev[i - 1] = $i }
		/^summary:/ { f++; for (i = 2; i <= NF; i++) v[f, ev[i - 1]] = $i }
		END {
			ir = (v[2, "Ir"] - v[1, "Ir"]) / n
			l1 = (v[2, "D1mr"] + v[2, "D1mw"] - v[1, "D1mr"] - v[1, "D1mw"]) / n
			l2 = (v[2, "DLmr"] + v[2, "DLmw"] - v[1, "DLmr"] - v[1, "DLmw"]) / n
			printf "depth %s: %.1f instructions per op, D1 misses %.2f, L2 misses %.3f\n", d, ir, l1, l2
		}' "$work/cg.$n1" "$work/cg.$n2"
done
