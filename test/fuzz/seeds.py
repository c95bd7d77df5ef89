#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Seeds for fuzz_xport from real traffic, and the replay of seeds and past crashes.

  seeds.py REPLAY CAPTURE_VERBS SEED_DIR CRASH_DIR

Runs CAPTURE_VERBS (test/wire: two dpverbs devices exchange every kind of message while
their ports are captured), turns the captured RoCE frames into fuzz_xport inputs in
SEED_DIR (a "captured frame" step each: fuzz_xport points it at its own QPs and
regions), the whole exchange in order and each kind of frame alone, adds inputs of
GSI datagrams to QP 1 (good ones both ways, a wrong length, a wrong Q_Key), and then has
REPLAY (fuzz_xport built with replay_main.c) run every seed and every file of CRASH_DIR,
the inputs that once crashed a fuzzer. Any crash, write outside a region or lost mbuf
fails it. libFuzzer's own run takes SEED_DIR as a second corpus.

Reads pcapng (what DPV_CAPTURE writes), the first interface's frames, and pcap.
"""
import glob
import os
import shutil
import struct
import subprocess
import sys
import tempfile

STEP_CAPTURED = 3      # fuzz_xport.c: (kind >> 1) % 8 == 3
MAX_STEPS = 64         # fuzz_xport.c: MAX_STEPS
ROCE_PORT = 4791


def frames_pcap(data, end):
    off = 24
    while off + 16 <= len(data):
        incl = struct.unpack(end + "I", data[off + 8:off + 12])[0]
        yield data[off + 16:off + 16 + incl]
        off += 16 + incl


def frames_pcapng(data, end):
    off = 0
    while off + 12 <= len(data):
        btype, blen = struct.unpack(end + "II", data[off:off + 8])
        if blen < 12:
            break
        body = data[off + 8:off + blen - 4]
        if btype == 6:      # enhanced packet block
            iface = struct.unpack(end + "I", body[:4])[0]
            cap = struct.unpack(end + "I", body[12:16])[0]
            if iface == 0:
                yield body[20:20 + cap]
        elif btype == 3:    # simple packet block (interface 0)
            orig = struct.unpack(end + "I", body[:4])[0]
            yield body[4:4 + orig]
        off += blen


def read_frames(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = data[:4]
    if magic == b"\x0a\x0d\x0d\x0a":
        return list(frames_pcapng(data, "<" if data[8:12] == b"\x4d\x3c\x2b\x1a" else ">"))
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        return list(frames_pcap(data, "<"))
    if magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        return list(frames_pcap(data, ">"))
    sys.exit(f"seeds.py: {path} is neither pcap nor pcapng")


def roce_dst(frame):
    """The IPv4 destination of a RoCEv2 frame, or None for anything else."""
    if len(frame) < 42 or frame[12:14] != b"\x08\x00" or frame[23] != 17:
        return None
    ihl = (frame[14] & 0x0F) * 4
    if struct.unpack("!H", frame[14 + ihl + 2:14 + ihl + 4])[0] != ROCE_PORT:
        return None
    return frame[30:34]


def step(side, frame):
    return bytes([STEP_CAPTURED << 1 | side]) + struct.pack("!H", len(frame)) + frame


STEP_CRAFTED = 4       # fuzz_xport.c: (kind >> 1) % 8 >= 4
UD_SEND_ONLY_INDEX = 18  # fuzz_xport.c: its place in opcodes[]
GSI_SEL = 0x08         # crafted(): sel % 3 == 2 (the UD QP), bit 3 (to QP 1), no TMH


def gsi_step(side, plen, qkey=None):
    """A crafted fuzz_xport step: a UD SEND_ONLY to QP 1 with a CM MAD's header (base
    version 1, class 7, class version 2, method Send) in @plen bytes of payload, the
    GSI Q_Key unless @qkey (then a 'bad' value that takes it from the input)."""
    bad = 0xFF if qkey is None else 40
    b = bytes([STEP_CRAFTED << 1 | side, GSI_SEL, bad, UD_SEND_ONLY_INDEX])
    # delta, RETH selector, VA and length, atomic swap, compare, orig, AETH
    b += bytes(1 + 1 + 2 + 2 + 4 + 1 + 4 + 1 + 3)
    if qkey is not None:
        b += struct.pack("!I", qkey)
    b += bytes(4)  # ImmDt
    mad = bytes([1, 7, 2, 3]) + bytes(4) + struct.pack("!Q", 0x1234) + \
        struct.pack("!HHI", 0x10, 0, 0)
    payload = (mad + bytes(range(256)))[:plen]
    return b + struct.pack("!H", plen) + payload


def gsi_seeds():
    """Frames to QP 1 both ways: good GSI datagrams (answered by the harness's
    consumer), a short one, one with another Q_Key."""
    return [gsi_step(0, 256) + gsi_step(1, 256),
            gsi_step(1, 252) + gsi_step(1, 260),
            gsi_step(0, 256, qkey=0x80010001) + gsi_step(1, 256)]


def main(argv):
    if len(argv) != 5:
        sys.exit("usage: seeds.py REPLAY CAPTURE_VERBS SEED_DIR CRASH_DIR")
    replay, capture_verbs, seed_dir, crash_dir = argv[1:]
    tmp = tempfile.mkdtemp(prefix="dpv-seeds.")
    try:
        capture = os.path.join(tmp, "capture.pcapng")
        subprocess.run([capture_verbs, capture], check=True, stdout=subprocess.DEVNULL)
        # Every frame is there twice, sent on one device's interface and received on
        # the other's: the first interface, dpv0's, holds both directions.
        frames = [f for f in read_frames(capture) if roce_dst(f) is not None]
    finally:
        shutil.rmtree(tmp)
    if len(frames) < 10:
        sys.exit(f"seeds.py: only {len(frames)} RoCE frames captured")
    # Side 1 is the device at the higher address: fuzz_xport's B, like dpv1.
    addrs = sorted({roce_dst(f) for f in frames})
    steps = [step(1 if roce_dst(f) == addrs[-1] else 0, f) for f in frames]
    os.makedirs(seed_dir, exist_ok=True)
    for old in glob.glob(os.path.join(seed_dir, "capture-*")):
        os.unlink(old)
    seeds = []
    for i in range(0, len(steps), MAX_STEPS):
        seeds.append(b"".join(steps[i:i + MAX_STEPS]))
    by_opcode = {}
    for s in steps:
        by_opcode.setdefault(s[3 + 42], s)  # the BTH opcode of the frame in the step
    seeds += list(by_opcode.values())
    seeds += gsi_seeds()
    for n, s in enumerate(seeds):
        with open(os.path.join(seed_dir, f"capture-{n:03d}"), "wb") as f:
            f.write(s)
    crashes = sorted(p for p in glob.glob(os.path.join(crash_dir, "*"))
                     if os.path.isfile(p) and not p.endswith(".md"))
    print(f"{len(frames)} RoCE frames captured, {len(by_opcode)} opcodes: "
          f"{len(seeds)} seeds; {len(crashes)} past crashes")
    inputs = sorted(glob.glob(os.path.join(seed_dir, "capture-*"))) + crashes
    return subprocess.run([replay] + inputs).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv))
