#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""No input crashes the console: 3,000 lines of command words, numbers, object ids and
junk in random order (a fixed seed, so every run types the same), on the embedded
default. The console must answer every line and end with status 0 after `quit`, having
destroyed everything ("bye" last); in a sanitizer build, any report fails the run too.

usage: random_input.py CONSOLE"""
import os
import random
import subprocess
import sys
import tempfile

WORDS = ["show", "devices", "port", "counters", "objects", "mr", "tags", "unexpected",
         "phase", "clear", "create", "pd", "cq", "srq", "qp", "rc", "ud", "destroy",
         "connect", "post", "srq_recv", "recv", "tag", "add", "del", "sync", "send",
         "write", "read", "poll", "set", "mode", "tag-pingpong", "tag-flood",
         "rndv-stream", "rc-pingpong", "stop", "capture", "help", "size", "count",
         "mask", "signaled", "imm", "eager", "rndv", "notag", "tm", "tags", "ops", "ex",
         "access", "fill", "dpv0", "dpv1", "0", "1", "2", "3", "4", "5", "0x10",
         "0xffffffffffffffff", "-1", "99999999999999999999", "l,w,r", "x", "max", "wait",
         "0:0", "0x1000:0x5", "%s", "%n", "\\", "'", '"']
FIRST = ["show", "clear", "create", "destroy", "connect", "post", "tag", "send", "write",
         "read", "poll", "set", "stop", "help", "capture", "zz"]


def main():
    console = sys.argv[1]
    rng = random.Random(7)
    tmp = tempfile.mkdtemp(prefix="dpv-testpmd-random-")
    lines = []
    while len(lines) < 3000:
        line = [rng.choice(FIRST)] + [rng.choice(WORDS) for _ in range(rng.randint(0, 7))]
        # A mode without a count, or a wait for a peer, would only make the run long.
        if "start" in line or "peer" in line or line[0] == "listen":
            continue
        if line[0] == "capture" and len(line) > 2 and line[1] == "start":
            line[2] = os.path.join(tmp, "c.pcapng")
        lines.append(" ".join(line))
    script = os.path.join(tmp, "random.cmds")
    with open(script, "w") as f:
        f.write("\n".join(lines) + "\nquit\n")
    p = subprocess.run([console, "-l", "0", "--no-pci", "--no-huge", "--no-shconf", "-m",
                        "512", "--log-level=lib.eal:error",
                        "--file-prefix=tp-random-%d" % os.getpid(), "--",
                        "--cmdline-file", script],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    for f in os.listdir(tmp):
        os.unlink(os.path.join(tmp, f))
    os.rmdir(tmp)
    out = p.stdout.decode(errors="replace").splitlines()
    err = p.stderr.decode(errors="replace")
    bad = p.returncode != 0 or not out or out[-1] != "bye" or "Sanitizer" in err or \
        "runtime error" in err
    if bad:
        print("FAIL: exit status %d; last lines:" % p.returncode)
        print("\n".join(out[-20:]))
        print("---- stderr ----\n" + err[-4000:])
        return 1
    print("ok: %d lines answered in %d lines of output" % (len(lines), len(out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
