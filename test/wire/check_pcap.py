#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Have two implementations that are not ours judge the packets dpverbs makes.

tshark must decode every RoCE frame as InfiniBand over UDP 4791 (RRoCE) with no
malformed or expert error; scapy's RoCE layer must compute the same ICRC as the frame
carries (tshark does not check it).

  check_pcap.py WIRE_PCAP
      WIRE_PCAP writes a pcap of every opcode lib/wire builds and a manifest; each frame
      must carry the opcode, QP and PSN the manifest says.
  check_pcap.py --capture CAPTURE_VERBS DIR
      CAPTURE_VERBS runs real traffic between two dpverbs devices, capturing both ports
      into one pcapng file in DIR (DPV_CAPTURE); every frame must be ARP or valid RoCE,
      carry its direction, its port's interface and a time within the run, and together they must show every
      opcode that traffic draws; what one device sent, the other received (a ring pair
      loses nothing).

Exits 77 (skipped) if tshark or scapy is missing; devtools/dpv.sh installs both.
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time

SKIP = 77
FIELDS = ["frame.number", "frame.protocols", "infiniband.bth.opcode",
          "infiniband.bth.destqp", "infiniband.bth.psn", "_ws.malformed",
          "_ws.expert.severity"]
# Of a pcapng capture: the frame's interface and direction (EPB flags: 1 in, 2 out),
# and its time.
CAPTURE_FIELDS = ["frame.interface_name", "frame.packet_flags_direction", "frame.time_epoch"]
# Of an atomic request (AtomicETH: tshark names its VA and R_Key as the RETH's) and an
# atomic acknowledgement (AtomicAckETH): wire_pcap.c fills them from the frame's index.
ATOMIC_FIELDS = ["infiniband.reth.va", "infiniband.reth.r_key", "infiniband.atomiceth.swapdt",
                 "infiniband.atomiceth.cmpdt", "infiniband.atomicacketh.origremdt"]
ATOMIC_ACK, CMP_SWAP, FETCH_ADD = 0x12, 0x13, 0x14
# Of an atomic write (IBTA 1.5): the RETH's length, and what tshark cannot decode.
# tshark 4.0 (Debian 12) does not know the opcode: it decodes the BTH ("Unknown (29)",
# neither malformed nor an expert error) and shows the rest of the frame, ICRC included,
# as unknown data, which must then be exactly the RETH and payload wire_pcap.c wrote.
# A tshark that knows the opcode decodes the RETH instead.
ATOMIC_WRITE_FIELDS = ["infiniband.reth.dmalen", "infiniband.vendor"]
ATOMIC_WRITE = 0x1D
# XRC: tshark 4.0 (Debian 12) decodes the BTH of its opcodes ("Extended Reliable
# Connection (XRC) - ...") and none of the headers after it, which it shows with the
# payload and ICRC as unknown data: that must be exactly the bytes written after the
# BTH, and for a request start with the XRCETH (a reserved byte, then the SRQ number:
# wire_pcap.c writes 0x300 + the frame's index). scapy checks the ICRC as for any frame.
XRC_REQUESTS = set(range(0xA0, 0xAD)) | {0xB3, 0xB4, 0xB6, 0xB7}
XRC_OPCODES = XRC_REQUESTS | set(range(0xAD, 0xB3))
BTH_END = 14 + 20 + 8 + 12


def atomic_problems(opcode, index, row):
    """What tshark read from the atomic headers of frame @p index that is not what
    wire_pcap.c wrote."""
    va, rkey, swap_add, compare, orig = row[len(FIELDS):len(FIELDS) + len(ATOMIC_FIELDS)]
    why = []
    if opcode in (CMP_SWAP, FETCH_ADD):
        want = (0x7F0000002000 + 8 * index, 0x5678, 0x1111111100000000 + index,
                0x2222222200000000 + index)
        got = tuple(int(v or "-1", 0) for v in (va, rkey, swap_add, compare))
        if got != want:
            why.append(f"AtomicETH {got} != {want}")
    if opcode == ATOMIC_ACK and int(orig or "-1", 0) != 0x3333333300000000 + index:
        why.append(f"AtomicAckETH original data {orig}")
    return why


def atomic_write_problems(index, plen, row):
    """What tshark read from atomic write frame @p index (@p plen bytes of payload)
    that is not what wire_pcap.c wrote."""
    va, rkey = row[len(FIELDS):len(FIELDS) + 2]
    dmalen, vendor = row[len(FIELDS) + len(ATOMIC_FIELDS):][:2]
    want_va = 0x7F0000001000 + index
    if vendor:
        payload = bytes((0xD0 + index % 16 + k) & 0xFF for k in range(plen))
        want = (f"{want_va:016x}{0x1234:08x}{plen:08x}" + payload.hex() +
                "00" * ((4 - plen % 4) % 4))
        # The last occurrence: the one after the BTH.
        got = vendor.split(",")[-1].replace(":", "")
        if not (got.startswith(want) and len(got) == len(want) + 8):
            return [f"unknown data {got} != RETH and payload {want} + ICRC"]
        return []
    got = tuple(int(v or "-1", 0) for v in (va, rkey, dmalen))
    return [f"RETH {got}"] if got != (want_va, 0x1234, plen) else []
# RC SEND first/middle/last/last+imm/only, WRITE first/middle/last/only+imm,
# READ request, READ response first/middle/last/only, ACK, ATOMIC ACK, CMP_SWAP,
# FETCH_ADD, ATOMIC WRITE, UC SEND first/middle/last, UC WRITE only, UD SEND only+imm.
CAPTURE_OPCODES = {0, 1, 2, 3, 4, 6, 7, 8, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
                   29, 32, 33, 34, 42, 101}


def xrc_problems(opcode, index, row, raw):
    vendor = row[len(FIELDS) + len(ATOMIC_FIELDS) + 1]
    after_bth = raw[BTH_END:]
    why = []
    # (tshark may list the unknown data more than once: the whole is the longest.)
    if max(vendor.split(","), key=len) != after_bth.hex():
        why.append(f"tshark's unknown data {vendor[:40]} is not the headers after the BTH")
    if opcode in XRC_REQUESTS and after_bth[:4] != (0x300 + index).to_bytes(4, "big"):
        why.append(f"XRCETH {after_bth[:4].hex()}, not SRQ {0x300 + index:#x}")
    return why


def tshark_rows(pcap, extra=()):
    cmd = ["tshark", "-n", "-r", pcap, "-T", "fields", "-E", "separator=|"]
    # Payloads are application bytes: stop tshark guessing upper protocols
    # (RPC-over-RDMA, EoIB...) in them and calling its own guesses malformed.
    heur = subprocess.run(["tshark", "-G", "heuristic-decodes"], check=True,
                          capture_output=True, text=True).stdout
    for line in heur.split("\n"):
        parts = line.split("\t")
        if len(parts) == 3 and parts[0] == "infiniband.payload" and parts[1] != "ethertype":
            cmd += ["--disable-protocol", parts[1]]
    for f in FIELDS + list(extra):
        cmd += ["-e", f]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return [line.split("|") for line in out.split("\n") if line.strip()]


def icrc_problem(raw):
    """None if scapy finds the frame's ICRC right, else what is wrong."""
    from scapy.all import Ether
    from scapy.contrib.roce import BTH
    frame = Ether(raw)
    if BTH not in frame:
        return "scapy sees no BTH"
    want = frame[BTH].compute_icrc(None)
    if want != raw[-4:]:
        return f"ICRC {raw[-4:].hex()} != scapy {want.hex()}"
    return None


def roce_problems(row, raw):
    _, protos, _, _, _, malformed, severity = row[:len(FIELDS)]
    why = []
    if not protos.endswith(("infiniband", "infiniband:data")):
        why.append(f"protocols {protos}")
    if malformed or severity:
        why.append(f"tshark flags malformed={malformed} expert={severity}")
    problem = icrc_problem(raw)
    if problem:
        why.append(problem)
    return why


def check_generated(gen):
    from scapy.all import rdpcap
    with tempfile.TemporaryDirectory() as tmp:
        pcap = os.path.join(tmp, "wire.pcap")
        manifest = subprocess.run([gen, pcap], check=True, capture_output=True, text=True)
        expected = [tuple(int(x) for x in line.split())
                    for line in manifest.stdout.split("\n") if line.strip()]
        rows = tshark_rows(pcap, ATOMIC_FIELDS + ATOMIC_WRITE_FIELDS)
        packets = rdpcap(pcap)
    if len(rows) != len(expected) or len(packets) != len(expected):
        print(f"expected {len(expected)} frames, tshark saw {len(rows)}, scapy {len(packets)}")
        return 1
    bad = 0
    for (num, opcode, plen), row, pkt in zip(expected, rows, packets):
        why = roce_problems(row, bytes(pkt))
        if row[2] != str(opcode):
            why.append(f"opcode {row[2]} != {opcode}")
        if int(row[3] or "0", 0) != 0x11 + num - 1:
            why.append(f"QP {row[3]}")
        if row[4] != str((0xFFFFF0 + num - 1) & 0xFFFFFF):
            why.append(f"PSN {row[4]}")
        why += atomic_problems(opcode, num - 1, row)
        if opcode == ATOMIC_WRITE:
            why += atomic_write_problems(num - 1, plen, row)
        if opcode in XRC_OPCODES:
            why += xrc_problems(opcode, num - 1, row, bytes(pkt))
        if why:
            bad += 1
            print(f"frame {num} (opcode {opcode}, {plen} bytes): " + "; ".join(why))
    print(f"{len(expected)} frames: {len(expected) - bad} decoded as InfiniBand with a "
          f"correct ICRC, {bad} wrong")
    return 1 if bad else 0


def capture_comment(pcap):
    out = subprocess.run(["capinfos", "-k", pcap], capture_output=True, text=True).stdout
    return out


def check_capture(prog, out_dir):
    from scapy.all import rdpcap
    os.makedirs(out_dir, exist_ok=True)
    for old in glob.glob(os.path.join(out_dir, "*.pcap*")):
        os.unlink(old)
    pcap = os.path.join(out_dir, "capture.pcapng")
    # Each frame is stamped with the wall clock: within the run, give or take a second.
    began = time.time() - 1
    subprocess.run([prog, pcap], check=True)
    ended = time.time() + 1
    files = sorted(glob.glob(os.path.join(out_dir, "*.pcap*")))
    if files != [pcap]:
        print(f"expected one capture, {pcap}, found {files}")
        return 1
    seen, bad, roce, arp = set(), 0, 0, 0
    moved = {}  # (interface, direction) -> frames
    rows = tshark_rows(pcap, CAPTURE_FIELDS)
    packets = rdpcap(pcap)
    if len(rows) != len(packets):
        print(f"{pcap}: tshark saw {len(rows)} frames, scapy {len(packets)}")
        return 1
    for row, pkt in zip(rows, packets):
        iface, direction, stamp = row[len(FIELDS):]
        why = []
        if direction not in ("0x00000001", "0x00000002"):
            why.append(f"direction {direction!r}")
        if not began <= float(stamp or 0) <= ended:
            why.append(f"time {stamp}, not within the run ({began:.0f}..{ended:.0f})")
        key = (iface, direction)
        moved[key] = moved.get(key, 0) + 1
        if row[1].endswith(":arp"):
            arp += 1
        else:
            roce += 1
            why += roce_problems(row, bytes(pkt))
            if row[2]:
                seen.add(int(row[2]))
        if why:
            bad += 1
            print(f"frame {row[0]}: " + "; ".join(why))
    ifaces = sorted({k[0] for k in moved})
    # Each interface is named after its device (rte_pcapng names them "dpdk:<port>").
    if ifaces != ["dpv0", "dpv1"]:
        print(f"interfaces {ifaces}, want dpv0 and dpv1 (the two devices)")
        bad += 1
    for a, b in (("dpv0", "dpv1"), ("dpv1", "dpv0")):
        sent, got = moved.get((a, "0x00000002"), 0), moved.get((b, "0x00000001"), 0)
        if sent != got or sent == 0:
            print(f"{a} sent {sent} frames, {b} received {got}")
            bad += 1
    comment = capture_comment(pcap)
    if "dpv0 is DPDK port 0" not in comment or "dpv1 is DPDK port 1" not in comment:
        print(f"the section comment does not name the devices: {comment}")
        bad += 1
    missing = sorted(CAPTURE_OPCODES - seen)
    print(f"{roce} RoCE frames ({bad} wrong) and {arp} ARP frames captured; by interface "
          f"and direction {sorted(moved.items())}; opcodes seen {sorted(seen)}"
          + (f"; missing {missing}" if missing else ""))
    return 1 if bad or missing or roce == 0 else 0


def main(argv):
    if shutil.which("tshark") is None:
        print("tshark missing: skipped")
        return SKIP
    try:
        import scapy.contrib.roce  # noqa: F401
    except ImportError:
        print("python3-scapy missing: skipped")
        return SKIP
    if argv[1] == "--capture":
        return check_capture(argv[2], argv[3])
    return check_generated(argv[1])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
