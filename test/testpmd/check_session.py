#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Run a dpv-testpmd session and check its output line by line.

usage: check_session.py [--mem nohuge|huge] [--stdin] [--auto] CONSOLE SCRIPT EXPECTED
       check_session.py --output FILE EXPECTED

The console runs on the embedded default (its ring pair), with EAL arguments of this
test (a file prefix of its own; --no-huge, or hugepages), the script given with
--cmdline-file (or on a pipe with --stdin; not at all with --auto). Every line it prints
on stdout must match the next line of EXPECTED, which is literal text except for:
  {n}  a decimal number      {x}  a 0x hex number      {*}  anything
and the directive lines
  @skip-to TEXT   skip output up to and including the line that is TEXT
  @exit N         the exit status the console must end with (default 0)
  @pcapng NAME    file NAME of the run's directory is a pcapng file holding packets
@TMP@ in the script, and {tmp} in EXPECTED, stand for a directory of this run.
Lines the console prints once a second while a traffic mode runs ("rate: ...") depend
on timing and are not checked. Exit 0 when all match, 1 with the first difference.
"""
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

PLACEHOLDERS = {"{n}": r"[0-9]+", "{x}": r"0x[0-9a-f]+", "{*}": r".*"}
TMP = None


def pcapng_packets(path):
    """Enhanced packet blocks of a pcapng file, or -1 when it is not one."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 12 or struct.unpack_from("<I", data, 0)[0] != 0x0A0D0D0A:
        return -1
    off, n = 0, 0
    while off + 12 <= len(data):
        kind, length = struct.unpack_from("<II", data, off)
        if length < 12 or off + length > len(data):
            return -1
        n += kind == 6
        off += length
    return n


def pattern(line):
    out, i = "", 0
    placeholders = dict(PLACEHOLDERS)
    if TMP is not None:
        placeholders["{tmp}"] = re.escape(TMP)
    while i < len(line):
        for k, v in placeholders.items():
            if line.startswith(k, i):
                out += v
                i += len(k)
                break
        else:
            out += re.escape(line[i])
            i += 1
    return re.compile(out + r"\Z")


def main():
    args = sys.argv[1:]
    mem, use_stdin, auto, output = "nohuge", False, False, None
    while args and args[0].startswith("--"):
        opt = args.pop(0)
        if opt == "--mem":
            mem = args.pop(0)
        elif opt == "--stdin":
            use_stdin = True
        elif opt == "--auto":
            auto = True
        elif opt == "--output":
            output = args.pop(0)
        else:
            sys.exit("unknown option " + opt)
    if output is not None:
        # The session ran elsewhere (two consoles, session2.sh): check what it printed.
        expected, = args
        with open(output, "rb") as f:
            p = subprocess.CompletedProcess([], 0, f.read(), b"")
        return check(p, expected)
    console, script, expected = args
    global TMP
    TMP = tempfile.mkdtemp(prefix="dpv-testpmd-")
    try:
        if not auto:
            with open(script, "rb") as f:
                text = f.read().replace(b"@TMP@", TMP.encode())
            script = os.path.join(TMP, os.path.basename(script))
            with open(script, "wb") as f:
                f.write(text)
        return run(console, script, expected, mem, use_stdin, auto)
    finally:
        shutil.rmtree(TMP, ignore_errors=True)


def run(console, script, expected, mem, use_stdin, auto):
    eal = ["-l", "0", "--no-pci", "--log-level=lib.eal:error",
           "--file-prefix=tp-check-%d" % os.getpid()]
    eal += ["--no-huge", "--no-shconf", "-m", "512"] if mem == "nohuge" else \
        ["--in-memory", "-m", "512"]
    cmd = [console] + eal + ["--"]
    stdin = subprocess.DEVNULL
    if auto:
        cmd += ["--auto"]
    elif use_stdin:
        stdin = open(script, "rb")
    else:
        cmd += ["--cmdline-file", script]
    p = subprocess.run(cmd, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=300)
    return check(p, expected)


def check(p, expected):
    out = [l for l in p.stdout.decode(errors="replace").splitlines()
           if not l.startswith("rate: ")]
    want_rc, pos, failed = 0, 0, None
    with open(expected) as f:
        lines = [l.rstrip("\n") for l in f]
    while lines and lines[-1] == "":
        lines.pop()
    for n, w in enumerate(lines, 1):
        if w.startswith("@exit "):
            want_rc = int(w.split()[1])
            continue
        if w.startswith("@pcapng "):
            path = os.path.join(TMP or ".", w.split()[1])
            n_pkts = pcapng_packets(path) if os.path.exists(path) else -1
            if n_pkts <= 0:
                failed = "%s:%d: %s is not a pcapng file with packets" % (expected, n, path)
                break
            continue
        if w.startswith("@skip-to "):
            target = w[len("@skip-to "):]
            while pos < len(out) and out[pos] != target:
                pos += 1
            if pos == len(out):
                failed = "%s:%d: no line '%s' in the output" % (expected, n, target)
                break
            pos += 1
            continue
        if pos == len(out):
            failed = "%s:%d: output ended; want: %s" % (expected, n, w)
            break
        if not pattern(w).match(out[pos]):
            failed = "%s:%d: output line %d differs\n  want: %s\n  got:  %s" % (
                expected, n, pos + 1, w, out[pos])
            break
        pos += 1
    if failed is None and pos < len(out):
        failed = "%s: unexpected output after the last line: %s" % (expected, out[pos])
    if failed is None and p.returncode != want_rc:
        failed = "exit status %d, want %d" % (p.returncode, want_rc)
    if failed is not None:
        print("FAIL: " + failed)
        print("---- stdout ----\n" + p.stdout.decode(errors="replace"))
        print("---- stderr ----\n" + p.stderr.decode(errors="replace"))
        return 1
    print("ok: %d lines of %s" % (len(out), os.path.basename(expected)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
