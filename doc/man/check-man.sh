#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# check-man.sh PAGE...: every page renders through groff and man without one warning
# (groff -ww: all warnings), and has the sections a man page must have. Skipped (77)
# where groff or man-db is not installed.
for tool in groff man; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "skipped: $tool is not installed (Debian packages groff-base, man-db)"
		exit 77
	fi
done
err=$(mktemp)
trap 'rm -f "$err"' EXIT
fails=0
for page in "$@"; do
	ok=1
	out=$(groff -man -ww -z "$page" 2>&1)
	if [ -n "$out" ]; then
		printf 'groff -man -ww -z %s:\n%s\n' "$page" "$out"
		ok=0
	fi
	text=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings=w -l "$page" 2>"$err")
	if [ -s "$err" ]; then
		printf 'man -l %s:\n' "$page"
		cat "$err"
		ok=0
	fi
	for section in NAME SYNOPSIS DESCRIPTION 'SEE ALSO'; do
		if ! printf '%s\n' "$text" | grep -q "^$section\$"; then
			echo "$page: no $section section in what man renders"
			ok=0
		fi
	done
	if [ $ok -eq 1 ]; then
		echo "ok - $page"
	else
		echo "not ok - $page"
		fails=$((fails + 1))
	fi
done
[ $fails -eq 0 ]
