#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Have tshark's InfiniBand CM dissector judge every CM MAD lib/cm packs.

  check_cm_pcap.py CM_PCAP
      CM_PCAP writes a pcap of one RoCEv2 frame per CM message (a UD SEND to QP1) and a
      manifest line per frame: number, attribute ID, local and remote comm ID (or
      request ID), service ID, QPN, REJ reason. Every frame must be InfiniBand with no
      malformed or expert flag, a GSI datagram (dest QP 1, DETH Q_Key 0x80010000 from
      QP 1), a CM MAD of the manifest's message, with the fields tshark decodes equal
      to the manifest's; scapy must find its ICRC right. tshark 4.0 decodes no field of
      MRA, SIDR_REQ and SIDR_REP: those are read from its MAD data payload at the
      spec's offsets.

Exits 77 (skipped) if tshark or scapy is missing; devtools/dpv.sh installs both.
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "wire"))
from check_pcap import icrc_problem  # noqa: E402  (the wire test's scapy ICRC check)

SKIP = 77
REQ, MRA, REJ, REP, RTU, DREQ, DREP, SIDR_REQ, SIDR_REP = range(0x10, 0x19)
INFO = {REQ: "ConnectRequest", MRA: "MsgRcptAck", REJ: "ConnectReject",
        REP: "ConnectReply", RTU: "ReadyToUse", DREQ: "DisconnectRequest",
        DREP: "DisconnectReply", SIDR_REQ: "ServiceIDResReq",
        SIDR_REP: "ServiceIDResReqResp"}
BASE = ["frame.number", "frame.protocols", "_ws.malformed", "_ws.expert.severity",
        "_ws.col.Info", "infiniband.bth.destqp", "infiniband.deth.q_key",
        "infiniband.deth.srcqp", "infiniband.mad.baseversion", "infiniband.mad.mgmtclass",
        "infiniband.mad.classversion", "infiniband.mad.method",
        "infiniband.mad.attributeid", "infiniband.mad.data"]
# What tshark decodes of each message, as (field, manifest column): columns are
# 0 local ID, 1 remote ID, 2 service ID, 3 QPN, 4 REJ reason.
DECODED = {
    REQ: [("infiniband.cm.req", 0), ("infiniband.cm.req.serviceid", 2),
          ("infiniband.cm.req.localqpn", 3)],
    REP: [("infiniband.cm.rep", 0), ("infiniband.cm.rep.remotecommid", 1),
          ("infiniband.cm.rep.localqpn", 3)],
    RTU: [("infiniband.cm.rtu.localcommid", 0), ("infiniband.cm.rtu.remotecommid", 1)],
    REJ: [("infiniband.cm.rej.localcommid", 0), ("infiniband.cm.rej.remotecommid", 1),
          ("infiniband.cm.rej.reason", 4)],
    DREQ: [("infiniband.cm.dreq.localcommid", 0), ("infiniband.cm.dreq.remotecommid", 1),
           ("infiniband.cm.req.remoteqpneecn", 3)],
    DREP: [("infiniband.cm.drsp.localcommid", 0), ("infiniband.cm.drsp.remotecommid", 1)],
}
# The REQ's private data starts with Linux's IP CM header, which tshark decodes.
IP_CM = [("infiniband.cm.req.ip_cm.ipv", 4), ("infiniband.cm.req.ip_cm.sip4", "127.0.30.1"),
         ("infiniband.cm.req.ip_cm.dip4", "127.0.30.2")]
# Not decoded by tshark 4.0: (byte offset in the attribute data, bytes, column).
RAW = {
    MRA: [(0, 4, 0), (4, 4, 1)],
    SIDR_REQ: [(0, 4, 0), (8, 8, 2)],
    SIDR_REP: [(0, 4, 0), (8, 3, 3), (12, 8, 2)],
}
FIELDS = BASE + sorted({f for fs in DECODED.values() for f, _ in fs} | {f for f, _ in IP_CM})


def num(s):
    return int(s, 0) if s else None


def problems(row, want, raw):
    got = dict(zip(FIELDS, row))
    attr = want[1]
    why = []
    if not got["frame.protocols"].endswith("infiniband"):
        why.append(f"protocols {got['frame.protocols']}")
    if got["_ws.malformed"] or got["_ws.expert.severity"]:
        why.append(f"tshark flags malformed={got['_ws.malformed']} "
                   f"expert={got['_ws.expert.severity']}")
    if (num(got["infiniband.bth.destqp"]), num(got["infiniband.deth.q_key"]),
            num(got["infiniband.deth.srcqp"])) != (1, 0x80010000, 1):
        why.append("not a GSI datagram: dest QP {} Q_Key {} source QP {}".format(
            got["infiniband.bth.destqp"], got["infiniband.deth.q_key"],
            got["infiniband.deth.srcqp"]))
    hdr = tuple(num(got[f]) for f in BASE[8:13])
    if hdr != (1, 0x07, 2, 0x03, attr):
        why.append(f"MAD header (base, class, version, method, attribute) {hdr}")
    if got["_ws.col.Info"] != "CM: " + INFO.get(attr, "?"):
        why.append(f"info '{got['_ws.col.Info']}'")
    for field, col in DECODED.get(attr, []):
        if num(got[field]) != want[2 + col]:
            why.append(f"{field} {got[field]} != {want[2 + col]:#x}")
    if attr == REQ:
        for field, value in IP_CM:
            if (num(got[field]) if isinstance(value, int) else got[field]) != value:
                why.append(f"{field} {got[field]} != {value}")
    data = bytes.fromhex(got["infiniband.mad.data"])
    for off, n, col in RAW.get(attr, []):
        value = int.from_bytes(data[off:off + n], "big")
        if value != want[2 + col]:
            why.append(f"data[{off}:{off + n}] {value:#x} != {want[2 + col]:#x}")
    problem = icrc_problem(raw)
    if problem:
        why.append(problem)
    return why


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    if shutil.which("tshark") is None:
        print("tshark not installed: skipped")
        return SKIP
    try:
        from scapy.all import rdpcap
    except ImportError:
        print("scapy not installed: skipped")
        return SKIP
    with tempfile.TemporaryDirectory() as tmp:
        pcap = os.path.join(tmp, "cm.pcap")
        manifest = subprocess.run([argv[1], pcap], check=True, capture_output=True,
                                  text=True).stdout
        expected = [tuple(int(x, 0) for x in line.split())
                    for line in manifest.split("\n") if line.strip()]
        cmd = ["tshark", "-n", "-r", pcap, "-T", "fields", "-E", "separator=|"]
        for f in FIELDS:
            cmd += ["-e", f]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        rows = [line.split("|") for line in out.split("\n") if line.strip()]
        packets = rdpcap(pcap)
    if len(rows) != len(expected) or len(packets) != len(expected):
        print(f"expected {len(expected)} frames, tshark saw {len(rows)}, scapy {len(packets)}")
        return 1
    bad = 0
    for want, row, pkt in zip(expected, rows, packets):
        why = problems(row, want, bytes(pkt))
        name = INFO.get(want[1], hex(want[1]))
        if why:
            bad += 1
            print(f"frame {want[0]} ({name}): " + "; ".join(why))
        else:
            print(f"frame {want[0]}: CM {name}, fields as sent")
    seen = {w[1] for w in expected}
    if seen != set(INFO):
        print(f"messages missing from the capture: {sorted(set(INFO) - seen)}")
        bad += 1
    print(f"{len(expected)} frames: {len(expected) - bad} decoded as InfiniBand CM with "
          f"their fields and a correct ICRC, {bad} wrong")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
