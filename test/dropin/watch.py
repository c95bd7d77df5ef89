#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""What dropin.sh's watch mode checks of an unmodified ibv_srq_pingpong server.

  watch.py telemetry CLIENT PREFIX SERVER_OUT RX_DEPTH NUM_QP
      While the server waits for its client (its device open, its QPs in INIT, RX_DEPTH
      receives posted to its SRQ), DPDK's telemetry client CLIENT (run by
      /usr/bin/python3) reads the /dpverbs/ commands from the server's telemetry socket
      (EAL --file-prefix PREFIX): one device, dpv0; the NUM_QP QPs the server printed,
      each in INIT on the one SRQ, which holds RX_DEPTH receives.
  watch.py capture PCAPNG DUMP IFACE ITERS SIZE MTU
      The server's DPV_CAPTURE file, after the run: tshark decodes every frame as ARP
      or InfiniBand over UDP, each with its direction, on the one interface of the
      device's port, IFACE (DPDK 22.11's rte_pcapng names it: dpdk:<port id>, or the
      kernel's name of an af_packet port); the file holds every frame the server's
      counters (DPV_STATS_DUMP's file DUMP) say the port moved and the capture took,
      none dropped; every frame it sent is ARP or RoCE (an af_packet port also receives
      the kernel's traffic, which the device drops); the server exchanged at least ITERS messages of SIZE bytes each
      way (ibv_srq_pingpong may do a few more), so at least ITERS * ceil(SIZE / MTU)
      distinct SEND packets (QP, PSN: a resend repeats one) went out and came in; and
      the file names dpv0.
"""
import json
import os
import re
import subprocess
import sys

# tshark as the wire test runs it (its payload heuristics off).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "wire"))
import check_pcap  # noqa: E402

PYTHON = "/usr/bin/python3"
PI_WARN = 0x00600000  # tshark's _ws.expert.severity of a warning


def fail(msg):
    print(f"FAIL: {msg}")
    return 1


def telemetry(client, prefix, server_out, rx_depth, num_qp):
    with open(server_out) as f:
        qpns = sorted(int(m.group(1), 16) for m in
                      re.finditer(r"local address: .*QPN 0x([0-9a-f]+)", f.read()))
    if len(qpns) != num_qp:
        return fail(f"the server printed {len(qpns)} QPNs, not {num_qp}")
    cmds = ["/dpverbs/devices", "/dpverbs/qps,dpv0", "/dpverbs/srqs,dpv0",
            "/dpverbs/counters,dpv0"] + [f"/dpverbs/qp,dpv0,{q}" for q in qpns]
    out = subprocess.run([PYTHON, client, "-f", prefix], input="\n".join(cmds) + "\n",
                         capture_output=True, text=True, timeout=60)
    lines = [line for line in out.stdout.split("\n") if line.strip()]
    if out.returncode != 0 or len(lines) != len(cmds):
        return fail(f"telemetry client: {out.stdout} {out.stderr}")
    r = {cmd: json.loads(line)[cmd.split(",")[0]] for cmd, line in zip(cmds, lines)}
    bad = 0
    if r["/dpverbs/devices"] != ["dpv0"]:
        bad += fail(f"devices {r['/dpverbs/devices']}")
    if r["/dpverbs/qps,dpv0"] != qpns:
        bad += fail(f"QPs {r['/dpverbs/qps,dpv0']}, the server printed {qpns}")
    srqs = r["/dpverbs/srqs,dpv0"] or []
    if len(srqs) != 1:
        return fail(f"SRQs {srqs}, want the server's one")
    srq = srqs[0]
    for q in qpns:
        qp = r[f"/dpverbs/qp,dpv0,{q}"] or {}
        if (qp.get("state"), qp.get("srq"), qp.get("type")) != ("INIT", srq, "RC"):
            bad += fail(f"QP {q}: {qp}")
    counters = r["/dpverbs/counters,dpv0"] or {}
    if counters.get("qp_tx_packets") != 0:
        bad += fail(f"qp_tx_packets {counters.get('qp_tx_packets')} before any exchange")
    s = ask_one(client, prefix, f"/dpverbs/srq,dpv0,{srq}") or {}
    if (s.get("type"), s.get("posted"), s.get("qps")) != ("BASIC", rx_depth, num_qp):
        bad += fail(f"SRQ {srq}: {s}, want {rx_depth} receives posted, {num_qp} QPs")
    print(f"telemetry: dpv0 with QPs {qpns} in INIT on SRQ {srq}, {s.get('posted')} receives"
          f" posted; {bad} wrong")
    return 1 if bad else 0


def ask_one(client, prefix, cmd):
    out = subprocess.run([PYTHON, client, "-f", prefix], input=cmd + "\n",
                         capture_output=True, text=True, timeout=60)
    return json.loads(out.stdout.strip().split("\n")[-1])[cmd.split(",")[0]]


def dump_counters(path):
    with open(path) as f:
        return {k: int(v) for k, v in (line.split() for line in f if line.strip())}


def capture(pcap, dump, want_iface, iters, size, mtu):
    rows = check_pcap.tshark_rows(pcap, check_pcap.CAPTURE_FIELDS)
    bad = 0
    sends = {"0x00000001": set(), "0x00000002": set()}
    for _, protos, opcode, qp, psn, malformed, severity, iface, direction, _ in rows:
        if iface != want_iface or direction not in sends:
            bad += fail(f"frame on {iface!r} direction {direction!r}, want {want_iface}")
        if protos.endswith(":arp"):
            continue
        if ":udp:infiniband" not in protos:
            # What else an af_packet port gets (the kernel's TCP, IPv6 neighbour
            # discovery) the device receives and drops; it sends none of it.
            if direction != "0x00000001":
                bad += fail(f"sent a frame that is neither ARP nor RoCE: {protos}")
            continue
        # A note is no fault: the pingpongs' own hop limit of 1 draws "TTL only 1".
        if not protos.endswith(("infiniband", "infiniband:data")) or malformed or \
                int(severity or "0") >= PI_WARN:
            bad += fail(f"frame {protos} malformed={malformed} expert={severity}")
        elif opcode in ("0", "1", "2", "4") and direction in sends:
            sends[direction].add((qp, psn))
    want = iters * -(-size // mtu)
    for direction, name in (("0x00000002", "sent"), ("0x00000001", "received")):
        if len(sends[direction]) < want:
            bad += fail(f"{len(sends[direction])} distinct SEND packets {name}, want {want}")
    # The dump is written at exit just before the capture ends: a frame may come after.
    c = dump_counters(dump)
    moved = c["port.rx_frames"] + c["port.tx_frames"] + c["port.tx_dropped"]
    if c["port.capture_dropped"] != 0 or c["port.capture_frames"] != moved or \
            len(rows) < c["port.capture_frames"]:
        bad += fail(f"{len(rows)} frames in the file; the port moved {moved}, captured "
                    f"{c['port.capture_frames']}, dropped {c['port.capture_dropped']}")
    info = subprocess.run(["capinfos", pcap], capture_output=True, text=True).stdout
    if "dpv0 is DPDK port 0" not in info:
        bad += fail("capinfos does not name dpv0")
    print(f"capture: {len(rows)} frames ({moved} moved by the port), "
          f"{len(sends['0x00000002'])} SEND packets out and {len(sends['0x00000001'])} in; "
          f"{bad} wrong")
    return 1 if bad else 0


def main(argv):
    if argv[1] == "telemetry":
        return telemetry(argv[2], argv[3], argv[4], int(argv[5]), int(argv[6]))
    return capture(argv[2], argv[3], argv[4], int(argv[5]), int(argv[6]), int(argv[7]))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
