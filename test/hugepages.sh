#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Run a hugepage variant of a test only when the machine has the hugepage memory it asks
# for; otherwise report it skipped (exit 77), so a machine without hugepages still runs
# every --no-huge variant and fails none. Usage: hugepages.sh MEGABYTES COMMAND [ARGS...]
need_mb=$1
shift
free_mb=$(awk '/^HugePages_Free:/ {f = $2} /^Hugepagesize:/ {s = $2} END {print int(f * s / 1024)}' /proc/meminfo)
if [ "${free_mb:-0}" -lt "$need_mb" ]; then
	echo "skipped: ${free_mb:-0} MiB of free hugepages, this variant needs $need_mb MiB (devtools/dpv.sh test reserves them)"
	exit 77
fi
exec "$@"
