#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""DPDK's own telemetry client (dpdk-telemetry.py) reads a running dpverbs program.

  check_telemetry.py TELEMETRY_VERBS CLIENT [--native]

TELEMETRY_VERBS (telemetry_verbs.c) runs two devices of a ring pair with telemetry on
(its own --file-prefix) and stops after each of two phases of traffic; CLIENT, run by
/usr/bin/python3 as DPDK installs it, asks the /dpverbs/ commands at each stop. The
replies must show the devices, QPs and SRQs the program made, with the values its
traffic implies: receives posted and consumed, SENDs sent and received between the
two stops, tags listed, the CM ids of phase 2 (a listener, a resolution) each whole
in every column of /dpverbs/cm; unknown devices, objects and bad parameters answer null. Then,
while the program creates and destroys QPs and SRQs without a pause, lookups of what
the lists name answer the object whole or null (never another one, never a crash:
the sanitizer build checks the program), and the QP that stays is always found.

Exits 77 (skipped) when the client is missing (Debian package dpdk-dev).
"""
import json
import os
import shutil
import subprocess
import sys

SKIP = 77
PYTHON = "/usr/bin/python3"  # the client's interpreter: the system's, as DPDK's package


def runtime_dir(prefix):
    base = os.environ.get("RUNTIME_DIRECTORY") or (
        "/var/run" if os.getuid() == 0 else os.environ.get("XDG_RUNTIME_DIR", "/tmp"))
    return os.path.join(base, "dpdk", prefix)


def ask(client, prefix, cmds):
    """The replies of the client to @cmds, in order, parsed."""
    out = subprocess.run([PYTHON, client, "-f", prefix], input="\n".join(cmds) + "\n",
                         capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise RuntimeError(f"client failed: {out.stderr}")
    lines = [line for line in out.stdout.split("\n") if line.strip()]
    if len(lines) != len(cmds):
        raise RuntimeError(f"{len(cmds)} commands, {len(lines)} replies: {out.stdout}")
    replies = []
    for cmd, line in zip(cmds, lines):
        reply = json.loads(line)
        key = cmd.split(",")[0]
        if list(reply) != [key]:
            raise RuntimeError(f"{cmd}: reply {line}")
        replies.append(reply[key])
    return replies


class Checker:
    def __init__(self):
        self.bad = 0

    def eq(self, what, got, want):
        if got != want:
            print(f"FAIL {what}: {got!r}, want {want!r}")
            self.bad += 1
        else:
            print(f"ok   {what}: {got!r}")


def phase_info(line):
    words = line.split()
    return int(words[1]), {k: int(v) for k, v in (w.split("=") for w in words[2:])}


CM_COLS = ("id", "state", "ud", "peer", "service_id", "listen_id", "remote_id",
           "local_qpn", "remote_qpn", "retries")


def check_cm(c, phase, cm, v):
    """/dpverbs/cm,dpv0: a dict of columns, one entry per CM id in each. Phase 1 has
    none; phase 2 the listener and the resolution the program printed."""
    if not isinstance(cm, dict):
        c.eq(f"{phase}: cm ids of dpv0 (a dict of columns)", cm, "a dict")
        return
    c.eq(f"{phase}: cm columns", sorted(cm), sorted(CM_COLS + ("ids",)))
    rows = [dict(zip(CM_COLS, vals)) for vals in zip(*(cm.get(k, []) for k in CM_COLS))]
    c.eq(f"{phase}: cm columns of one length", {len(cm.get(k, [])) for k in CM_COLS},
         {len(rows)})
    if phase == 1:
        c.eq(f"{phase}: cm ids of dpv0", (cm.get("ids"), rows), (0, []))
        return
    c.eq(f"{phase}: cm ids of dpv0", cm.get("ids"), 2)
    c.eq(f"{phase}: cm listener", rows[0] if rows else None,
         {"id": v["cm_listen"], "state": "LISTEN", "ud": 0, "peer": "0.0.0.0",
          "service_id": f"0x{0x0106 << 16 | 7600:016x}", "listen_id": 0, "remote_id": 0,
          "local_qpn": 0, "remote_qpn": 0, "retries": 0})
    c.eq(f"{phase}: cm resolution", rows[1] if len(rows) > 1 else None,
         {"id": v["cm_resolve"], "state": "ADDR_QUERY", "ud": 0, "peer": "127.0.40.77",
          "service_id": f"0x{0:016x}", "listen_id": 0, "remote_id": 0, "local_qpn": 0,
          "remote_qpn": 0, "retries": 0})


def churn(c, p, client, prefix, qa, rounds=15):
    line = p.stdout.readline()
    if not line.startswith("phase 3"):
        print(f"the program stopped before phase 3: {line!r}")
        return False
    found = gone = 0
    for _ in range(rounds):
        qps, srqs = ask(client, prefix, ["/dpverbs/qps,dpv0", "/dpverbs/srqs,dpv1"])
        qps, srqs = qps or [], srqs or []
        cmds = [f"/dpverbs/qp,dpv0,{q}" for q in qps + [qa]] + \
               [f"/dpverbs/srq,dpv1,{n}" for n in srqs]
        for cmd, reply in zip(cmds, ask(client, prefix, cmds)):
            num = int(cmd.split(",")[2])
            if reply is None:
                gone += 1
                if num == qa:
                    c.eq(f"churn: {cmd}", reply, "the QP that stays")
                continue
            found += 1
            key = "qpn" if "/qp," in cmd else "srq"
            if reply.get(key) != num or reply.get("type") not in ("RC", "BASIC", "TM",
                                                                  "XRC_INI", "XRC"):
                c.eq(f"churn: {cmd}", reply, f"{key} {num} whole, or null")
    print(f"churn: {found} lookups found the object, {gone} found it gone")
    c.eq("churn: the QP that stays was asked for each round", found >= rounds, True)
    p.stdin.write("stop\n")
    p.stdin.flush()
    return True


def main(argv):
    prog, client = argv[1], argv[2]
    if not os.path.exists(client) or not os.path.exists(PYTHON):
        print(f"skipped: {client} or {PYTHON} missing (Debian package dpdk-dev)")
        return SKIP
    prefix = f"dpvtel{os.getpid()}"
    eal = os.environ.get("DPV_TELEMETRY_MEM", "--no-huge --no-shconf -m 512")
    # DPV_TELEMETRY_PROGRESS: the devices' progress mode and the cores it needs.
    progress = os.environ.get("DPV_TELEMETRY_PROGRESS", "inline")
    cores = "-l 0,1" if progress.startswith("lcore:") else "-l 0"
    env = dict(os.environ,
               DPV_EAL_ARGS=f"{cores} --no-pci {eal} --file-prefix={prefix} "
                            "--log-level=lib.eal:error",
               DPV_RING_PAIRS="1", DPV_PORT_IPV4="127.0.40.1,127.0.40.2",
               DPV_PROGRESS=progress)
    for k in ("DPV_CONFIG", "DPV_CAPTURE", "DPV_FAULTS"):
        env.pop(k, None)
    c = Checker()
    p = subprocess.Popen([prog] + argv[3:4], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                         env=env)
    try:
        snaps, vs = {}, {}
        for want_phase in (1, 2):
            line = p.stdout.readline()
            if not line.startswith("phase "):
                print(f"the program stopped before phase {want_phase}: {line!r}")
                return 1
            phase, v = phase_info(line)
            qa, qb, srq, tm = v["qpn_a"], v["qpn_b"], v["srq"], v["tm_srq"]
            cmds = ["/dpverbs/devices", "/dpverbs/info,dpv0", "/dpverbs/counters,dpv0",
                    "/dpverbs/counters,dpv1", f"/dpverbs/qp,dpv0,{qa}",
                    f"/dpverbs/qp,dpv1,{hex(qb)}", "/dpverbs/qps,dpv0", "/dpverbs/srqs,dpv1",
                    f"/dpverbs/srq,dpv1,{srq}", f"/dpverbs/srq,dpv1,{tm}", "/dpverbs/cm,dpv0",
                    f"/dpverbs/qp,dpv0,{v['xini']}", f"/dpverbs/qp,dpv1,{v['xtgt']}",
                    f"/dpverbs/srq,dpv1,{v['xsrq']}",
                    # nothing of these exists or parses: null, and the device runs on
                    "/dpverbs/counters,dpv9", "/dpverbs/counters", "/dpverbs/qp,dpv0",
                    "/dpverbs/qp,dpv0,4095", "/dpverbs/qp,dpv0,x1", "/dpverbs/srq,dpv0,99999",
                    "/dpverbs/qps,nosuch", "/dpverbs/cm,nosuch", "/dpverbs/cm"]
            r = dict(zip(cmds, ask(client, prefix, cmds)))
            snaps[phase], vs[phase] = r, v
            c.eq(f"{phase}: devices", r["/dpverbs/devices"], ["dpv0", "dpv1"])
            info = r["/dpverbs/info,dpv0"]
            c.eq(f"{phase}: dpv0 ipv4", info and info.get("ipv4"), "127.0.40.1")
            c.eq(f"{phase}: dpv0 progress", info and info.get("progress"),
                 progress.split(":")[0])
            qpa = r[f"/dpverbs/qp,dpv0,{qa}"] or {}
            qpb = r[f"/dpverbs/qp,dpv1,{hex(qb)}"] or {}
            c.eq(f"{phase}: qp a", (qpa.get("qpn"), qpa.get("type"), qpa.get("state"),
                                    qpa.get("dest_qpn"), qpa.get("srq")),
                 (qa, "RC", "RTS", qb, -1))
            c.eq(f"{phase}: qp b", (qpb.get("qpn"), qpb.get("state"), qpb.get("srq")),
                 (qb, "RTS", srq))
            c.eq(f"{phase}: qps of dpv0", sorted(r["/dpverbs/qps,dpv0"] or []),
                 sorted([qa, v["xini"]]))
            c.eq(f"{phase}: srqs of dpv1", sorted(r["/dpverbs/srqs,dpv1"] or []),
                 sorted([srq, tm, v["xsrq"]]))
            # The XRC halves and their SRQ, no traffic: the target has named no SRQ yet.
            xi = r[f"/dpverbs/qp,dpv0,{v['xini']}"] or {}
            xt = r[f"/dpverbs/qp,dpv1,{v['xtgt']}"] or {}
            xs = r[f"/dpverbs/srq,dpv1,{v['xsrq']}"] or {}
            c.eq(f"{phase}: xrc initiator", (xi.get("type"), xi.get("state"),
                                             xi.get("dest_qpn"), xi.get("srq")),
                 ("XRC_INI", "RTS", v["xtgt"], -1))
            c.eq(f"{phase}: xrc target", (xt.get("type"), xt.get("state"),
                                          xt.get("dest_qpn"), xt.get("srq")),
                 ("XRC_TGT", "RTS", v["xini"], -1))
            c.eq(f"{phase}: xrc srq", (xs.get("type"), xs.get("xrc_srqn"), xs.get("qps"),
                                       xs.get("posted")), ("XRC", v["xrc_srqn"], 0, 0))
            s = r[f"/dpverbs/srq,dpv1,{srq}"] or {}
            # Each SEND consumed one receive of the SRQ.
            c.eq(f"{phase}: srq", (s.get("type"), s.get("posted"), s.get("qps"), s.get("error")),
                 ("BASIC", v["recvs"] - v["sends"], 1, 0))
            t = r[f"/dpverbs/srq,dpv1,{tm}"] or {}
            c.eq(f"{phase}: tm srq", (t.get("type"), t.get("tm_adds"), t.get("tm_listed"),
                                      t.get("tm_expected")), ("TM", v["tags"], v["tags"], 0))
            check_cm(c, phase, r["/dpverbs/cm,dpv0"], v)
            for k in cmds[14:]:
                c.eq(f"{phase}: {k}", r[k], None)
            # Every SEND was received: the requester's packets and the responder's
            # receives, on the QPs and summed over the device.
            sent = qpa.get("qp_tx_packets", 0) - qpa.get("qp_retrans_packets", 0)
            c.eq(f"{phase}: qp a first-time packets", sent, v["sends"])
            c.eq(f"{phase}: qp b packets in", qpb.get("qp_rx_packets", 0)
                 - qpb.get("qp_dup_requests", 0), v["sends"])
            ca = r["/dpverbs/counters,dpv0"] or {}
            c.eq(f"{phase}: dpv0 qp sums = its one QP", ca.get("qp_tx_packets"),
                 qpa.get("qp_tx_packets"))
            c.eq(f"{phase}: dpv0 counters are the xstats", "port_tx_frames" in ca
                 and "xport_rx_bad_icrc" in ca and "engine_polls" in ca, True)
            p.stdin.write("go on\n")
            p.stdin.flush()
        if not churn(c, p, client, prefix, vs[2]["qpn_a"]):
            return 1
        # Between the stops exactly the phase-2 SENDs moved the counters.
        d = {k: snaps[2]["/dpverbs/counters,dpv1"][k] - snaps[1]["/dpverbs/counters,dpv1"][k]
             for k in ("qp_rx_packets", "qp_dup_requests", "xport_rx_unknown_qp",
                       "xport_tm_unexpected")}
        c.eq("dpv1 counters moved by phase 2",
             (d["qp_rx_packets"] - d["qp_dup_requests"], d["xport_rx_unknown_qp"],
              d["xport_tm_unexpected"]), (vs[2]["sends"] - vs[1]["sends"], 0, 0))
        p.stdin.close()
        rc = p.wait(timeout=60)
        c.eq("program exit", rc, 0)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        shutil.rmtree(runtime_dir(prefix), ignore_errors=True)
    print(f"{c.bad} wrong")
    return 1 if c.bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
