#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The prompt, at a terminal (a pseudo-terminal): tab completion of command words and
object ids, a command's one-line error, history (the up arrow), and Ctrl-D, which
destroys everything and leaves with status 0.

usage: prompt.py CONSOLE
Each step types, then waits (30 s at most) for the text it must bring."""
import os
import pty
import select
import sys
import time


def main():
    console = sys.argv[1]
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(console, [console, "-l", "0", "--no-pci", "--no-huge", "--no-shconf",
                           "-m", "512", "--log-level=lib.eal:error",
                           "--file-prefix=tp-prompt-%d" % os.getppid(), "--", "-i"])
    seen = b""

    def expect(text):
        nonlocal seen
        deadline = time.monotonic() + 30
        while text.encode() not in seen:
            left = deadline - time.monotonic()
            if left <= 0:
                raise SystemExit("FAIL: no '%s' in:\n%s" % (text, seen.decode(errors="replace")))
            r, _, _ = select.select([fd], [], [], left)
            if r:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    raise SystemExit("FAIL: the console ended before '%s':\n%s" %
                                     (text, seen.decode(errors="replace")))
                seen += chunk
        seen = seen[seen.index(text.encode()) + len(text):]

    steps = [
        (b"", "dpv> "),
        # "sh" completes to show, "ob" to objects.
        (b"sh\t", "show "),
        (b"ob\t\r", "srq 1   dpv1 pd 2, tag-matching"),
        # A device name, then an SRQ id: the only SRQ is 1.
        (b"show port dpv\t", "show port dpv"),
        (b"1\r", "MTU:"),
        (b"show cm dpv\t", "show cm dpv"),
        (b"0\r", "dpv0: 0 CM ids"),
        # With a complete command there too, the ids are listed rather than filled in.
        (b"show tags \t", " 1 [word]"),
        (b"1\r", "srq 1: 0 listed of 64"),
        (b"destroy srq 1\r", "destroy: EBUSY: srq 1 is in use by qp 2: destroy that first"),
        (b"bogus\r", "bogus: ENOENT: no such command"),
        # The up arrow brings the last line back.
        (b"\x1b[A\r", "bogus: ENOENT: no such command"),
        (b"\x04", "bye"),
    ]
    for typed, want in steps:
        if typed:
            os.write(fd, typed)
        expect(want)
    _, status = os.waitpid(pid, 0)
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        print("FAIL: exit status %d" % status)
        return 1
    print("ok: the prompt completes, recalls and leaves on Ctrl-D")
    return 0


if __name__ == "__main__":
    sys.exit(main())
