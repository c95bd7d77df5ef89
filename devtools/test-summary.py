#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Sum meson test logs into one line "N passed, N failed, N skipped".

A cmocka program counts as the cases it ran (its "[  PASSED  ] N test(s)." and
"[  FAILED  ] N test(s)" lines); any other test counts as one. A test that failed
without reporting its failed cases (crash, timeout) counts at least one failure.
"""
import json
import re
import sys

PASSED = re.compile(r"^\[  PASSED  \] (\d+) test", re.M)
FAILED = re.compile(r"^\[  FAILED  \] (\d+) test", re.M)


def main(paths):
    passed = failed = skipped = 0
    for path in paths:
        try:
            with open(path) as f:
                lines = [json.loads(line) for line in f if line.strip()]
        except OSError as e:
            print(f"missing test log {path}: {e}", file=sys.stderr)
            failed += 1
            continue
        for t in lines:
            result = t.get("result", "")
            # cmocka prints its summary on stderr, its progress on stdout.
            out = (t.get("stdout", "") or "") + (t.get("stderr", "") or "")
            p = sum(int(n) for n in PASSED.findall(out))
            fl = sum(int(n) for n in FAILED.findall(out))
            if result == "SKIP":
                skipped += 1
            elif p or fl:
                passed += p
                failed += fl if fl or result == "OK" else 1
            elif result in ("OK", "EXPECTEDFAIL"):
                passed += 1
            else:
                failed += 1
                print(f"FAILED: {path}: {t.get('name')} ({result})", file=sys.stderr)
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
