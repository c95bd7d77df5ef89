#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Decode every frame lib/wire builds with two implementations that are not ours.

tshark must see each frame as InfiniBand over UDP 4791 (RRoCE) with the opcode, QP and
PSN we wrote and no malformed or expert error; scapy's RoCE layer must compute the same
ICRC as the one in the frame (tshark does not check it). Usage: check_pcap.py WIRE_PCAP
where WIRE_PCAP is the wire_pcap program. Exits 77 (skipped) if tshark or scapy is
missing; devtools/dpv.sh installs both.
"""
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = 77


def main(gen):
    if shutil.which("tshark") is None:
        print("tshark missing: skipped")
        return SKIP
    try:
        from scapy.all import Ether, rdpcap
        from scapy.contrib.roce import BTH
    except ImportError:
        print("python3-scapy missing: skipped")
        return SKIP

    with tempfile.TemporaryDirectory() as tmp:
        pcap = os.path.join(tmp, "wire.pcap")
        manifest = subprocess.run([gen, pcap], check=True, capture_output=True, text=True)
        expected = [tuple(int(x) for x in line.split()) for line in manifest.stdout.split("\n")
                    if line.strip()]
        fields = ["frame.number", "frame.protocols", "infiniband.bth.opcode",
                  "infiniband.bth.destqp", "infiniband.bth.psn", "_ws.malformed",
                  "_ws.expert.severity"]
        cmd = ["tshark", "-n", "-r", pcap, "-T", "fields", "-E", "separator=|"]
        # Our payloads are application bytes: stop tshark guessing upper protocols
        # (RPC-over-RDMA, EoIB...) in them and calling its own guesses malformed.
        heur = subprocess.run(["tshark", "-G", "heuristic-decodes"], check=True,
                              capture_output=True, text=True).stdout
        for line in heur.split("\n"):
            parts = line.split("\t")
            if (len(parts) == 3 and parts[0] == "infiniband.payload"
                    and parts[1] != "ethertype"):
                cmd += ["--disable-protocol", parts[1]]
        for f in fields:
            cmd += ["-e", f]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        rows = [line.split("|") for line in out.split("\n") if line.strip()]
        packets = rdpcap(pcap)

    bad = 0
    if len(rows) != len(expected) or len(packets) != len(expected):
        print(f"expected {len(expected)} frames, tshark saw {len(rows)}, scapy {len(packets)}")
        return 1
    for (num, opcode, plen), row, pkt in zip(expected, rows, packets):
        n, protos, t_op, t_qp, t_psn, malformed, severity = row
        why = []
        if not protos.endswith(("infiniband", "infiniband:data")):
            why.append(f"protocols {protos}")
        if t_op != str(opcode):
            why.append(f"opcode {t_op} != {opcode}")
        if int(t_qp or "0", 0) != 0x11 + num - 1:
            why.append(f"QP {t_qp}")
        if t_psn != str((0xFFFFF0 + num - 1) & 0xFFFFFF):
            why.append(f"PSN {t_psn}")
        if malformed or severity:
            why.append(f"tshark flags malformed={malformed} expert={severity}")
        frame = Ether(bytes(pkt))
        if BTH not in frame:
            why.append("scapy sees no BTH")
        else:
            want = frame[BTH].compute_icrc(None)
            have = bytes(pkt)[-4:]
            if want != have:
                why.append(f"ICRC {have.hex()} != scapy {want.hex()}")
        if why:
            bad += 1
            print(f"frame {num} (opcode {opcode}, {plen} bytes): " + "; ".join(why))
    print(f"{len(expected)} frames: {len(expected) - bad} decoded as InfiniBand with a "
          f"correct ICRC, {bad} wrong")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
