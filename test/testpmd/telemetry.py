#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The console's devices read by DPDK's own telemetry client while it runs.

  telemetry.py DPV_TESTPMD

Starts dpv-testpmd on its embedded default (telemetry on, file prefix
dpv-testpmd-<pid>), adds a tag and sends one tagged eager message through its commands,
then asks dpdk-telemetry.py (Debian's dpdk-dev, run by the system's /usr/bin/python3)
for /dpverbs/devices, the receiving device's counters, its SRQs, QPs and CM ids, and checks the
values the commands imply; then ends the console's input and wants exit status 0.
Exits 77 (skipped) without the client.
"""
import os
import select
import subprocess
import sys
import time

# The client's runner and its checks of each reply: test/telemetry's.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "telemetry"))
from check_telemetry import SKIP, ask as ask_client  # noqa: E402

CLIENT = "/usr/bin/dpdk-telemetry.py"


def ask(prefix, cmds):
    return ask_client(CLIENT, prefix, cmds)


class Output:
    """The console's output, read from its pipe as it comes (select() and a buffered
    reader do not mix: lines already read into the buffer never wake select)."""

    def __init__(self, p):
        self.fd = p.stdout.fileno()
        self.pending = b""
        self.lines = []

    def wait_for(self, text, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            while b"\n" in self.pending:
                line, self.pending = self.pending.split(b"\n", 1)
                self.lines.append(line.decode(errors="replace"))
                if text in self.lines[-1]:
                    return
            ready, _, _ = select.select([self.fd], [], [], 0.5)
            if ready:
                data = os.read(self.fd, 65536)
                if data == b"":
                    break
                self.pending += data
        raise RuntimeError(f"no line with {text!r} in: {self.lines}")


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: telemetry.py DPV_TESTPMD")
    if not os.path.exists(CLIENT):
        print(f"skipped: no {CLIENT} (Debian package dpdk-dev)")
        return SKIP
    p = subprocess.Popen([argv[1]], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
    out = Output(p)
    bad = 0

    def eq(what, got, want):
        nonlocal bad
        if got != want:
            print(f"FAIL {what}: {got!r}, want {want!r}")
            bad += 1

    try:
        out.wait_for("help lists every command", 60)
        p.stdin.write(b"tag add 1 0x10 signaled\nsend 1 size 64 tag 0x10 eager\n"
                      b"poll cq 2 max 4 wait 2\n")
        p.stdin.flush()
        out.wait_for("TM_RECV success", 60)
        prefix = f"dpv-testpmd-{p.pid}"
        devices, counters, srqs, qps = ask(prefix, ["/dpverbs/devices",
                                                    "/dpverbs/counters,dpv1",
                                                    "/dpverbs/srqs,dpv1",
                                                    "/dpverbs/qps,dpv1"])
        eq("devices", devices, ["dpv0", "dpv1"])
        eq("dpv1 xport_tm_expected", counters.get("xport_tm_expected"), 1)
        eq("dpv1 SRQs", len(srqs), 1)
        eq("dpv1 QPs", len(qps), 1)
        srq, qp = ask(prefix, [f"/dpverbs/srq,dpv1,{srqs[0]}", f"/dpverbs/qp,dpv1,{qps[0]}"])
        eq("srq type", srq.get("type"), "TM")
        eq("srq posted", srq.get("posted"), 8)   # the 8 receives of the default
        eq("srq tm_adds", srq.get("tm_adds"), 1)
        eq("srq tm_expected", srq.get("tm_expected"), 1)
        eq("srq tm_listed", srq.get("tm_listed"), 0)  # the entry went with its match
        eq("qp state", qp.get("state"), "RTS")
        eq("qp srq", qp.get("srq"), srqs[0])
        eq("qp qp_rx_packets", qp.get("qp_rx_packets"), 1)
        eq("unknown device", ask(prefix, ["/dpverbs/counters,dpv7"])[0], None)
        cm = ask(prefix, ["/dpverbs/cm,dpv1"])[0] or {}
        eq("dpv1 CM ids", (cm.get("ids"), cm.get("id"), cm.get("state")), (0, [], []))
    finally:
        p.stdin.close()
        try:
            rc = p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = p.wait()
    eq("console exit status", rc, 0)
    print("console telemetry: " + ("ok" if bad == 0 else f"{bad} wrong"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
