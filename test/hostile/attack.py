#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The attacker of test_hostile.c: forged frames sent at device dpv0 from another
network namespace, one phase at a time.

  attack.py PHASE DIR

PHASE is arp, requests, responses, access or flood. DIR holds what the test tells the
attacker ("info": one "key value" line each; the QP numbers and PSNs an attacker on the
segment would have learned by watching it) and what the attacker tells the test
("result": "key value" lines, the frames sent by kind; "flooded": the ARP flood is over).
During the flood the test writes dpv0's received-frame count into DIR/rx, so that the
attacker sends no faster than the device takes frames (a packet socket drops what its
ring cannot hold, and the test counts every frame).

The frames are built here with struct and zlib; scapy's RoCE layer, an implementation
that is not ours, checks the ICRC function first, and builds the ARP frames.
"""
import os
import random
import socket
import struct
import sys
import time
import zlib

from scapy.contrib.roce import BTH
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import ARP, Ether

ROCE_PORT = 4791
ETH_P_ALL = 0x0003
SOL_PACKET, PACKET_IGNORE_OUTGOING = 263, 23
PSN_MASK = 0xFFFFFF

# BTH opcodes (IBTA Table 38), RC unless said otherwise.
SEND_FIRST, SEND_MIDDLE, SEND_LAST, SEND_ONLY = 0x00, 0x01, 0x02, 0x04
WRITE_FIRST, WRITE_ONLY = 0x06, 0x0A
READ_REQ, READ_RESP_FIRST, READ_RESP_ONLY, ACK = 0x0C, 0x0D, 0x10, 0x11
UD_SEND_ONLY = 0x64


def mac_bytes(text):
    return bytes(int(x, 16) for x in text.split(":"))


def ip_bytes(text):
    return socket.inet_aton(text)


def icrc(frame_wo_icrc):
    """RoCEv2 ICRC (IBTA A17.4.1): CRC32 over 64 one bits (the LRH's place), then the
    IPv4 header with TOS, TTL and checksum all ones, the UDP header with its checksum
    all ones, the BTH with its FECN/BECN/reserved byte all ones, and the rest."""
    ip = bytearray(frame_wo_icrc[14:])
    ihl = (ip[0] & 0x0F) * 4
    if len(ip) < ihl + 8 + 12:
        return b"\0\0\0\0"  # no room for the headers: there is nothing to cover
    ip[1] = 0xFF
    ip[8] = 0xFF
    ip[10:12] = b"\xff\xff"
    ip[ihl + 6:ihl + 8] = b"\xff\xff"
    ip[ihl + 8 + 4] = 0xFF
    return struct.pack("<I", zlib.crc32(b"\xff" * 8 + bytes(ip)) & 0xFFFFFFFF)


def ip_checksum(hdr):
    s = sum(struct.unpack("!%dH" % (len(hdr) // 2), hdr))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return struct.pack("!H", ~s & 0xFFFF)


class Wire:
    def __init__(self, iface):
        env = os.environ
        self.mac_a = mac_bytes(env["DPV_HOSTILE_MAC_A"])
        self.mac_b = mac_bytes(env["DPV_HOSTILE_MAC_B"])
        self.ip_a, self.ip_b = env["DPV_PORT_IPV4"].split(",")
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        self.sock.bind((iface, 0))
        # Our own frames are not worth reading back (PACKET_IGNORE_OUTGOING, Linux 4.20).
        self.sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
        self.sent = 0

    def roce(self, opcode, dqpn, psn, ext=b"", payload=b"", src_ip=None, src_mac=None,
             ackreq=True, pkey=0xFFFF):
        """A RoCEv2 frame to dpv0, from dpv1 unless told otherwise, with a right ICRC."""
        src_ip = src_ip or self.ip_b
        src_mac = src_mac or self.mac_b
        pad = -len(payload) % 4
        bth = struct.pack("!BBHII", opcode, pad << 4, pkey, dqpn & PSN_MASK,
                          (0x80000000 if ackreq else 0) | (psn & PSN_MASK))
        body = bth + ext + payload + b"\0" * pad
        udp = struct.pack("!HHHH", 0xC000 | random.getrandbits(14), ROCE_PORT,
                          8 + len(body) + 4, 0)
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp) + len(body) + 4, 0, 0x4000,
                         64, 17, 0, ip_bytes(src_ip), ip_bytes(self.ip_a))
        ip = ip[:10] + ip_checksum(ip) + ip[12:]
        frame = self.mac_a + src_mac + b"\x08\x00" + ip + udp + body
        return frame + icrc(frame)

    def send(self, frame):
        self.sock.send(frame)
        self.sent += 1


def reth(va, rkey, length):
    return struct.pack("!QII", va, rkey, length)


def aeth(syndrome, msn):
    return struct.pack("!I", syndrome << 24 | (msn & PSN_MASK))


def check_icrc_against_scapy(w):
    """Our ICRC must be scapy's: otherwise every 'valid' frame here is only garbage."""
    for opcode, ext, payload in ((SEND_ONLY, b"", b"hello"), (ACK, aeth(0, 5), b""),
                                 (WRITE_ONLY, reth(0x1000, 0x1234, 7), b"1234567")):
        ours = w.roce(opcode, 0x123, 77, ext, payload)
        pkt = Ether(ours)
        pkt[BTH].icrc = None
        pkt[IP].chksum = None
        theirs = bytes(Ether(bytes(pkt)))
        if theirs[-4:] != ours[-4:]:
            sys.exit("attack.py: our ICRC %s is not scapy's %s" % (ours[-4:].hex(),
                                                                 theirs[-4:].hex()))


def read_info(d):
    info = {}
    with open(os.path.join(d, "info")) as f:
        for line in f:
            k, v = line.split(None, 1)
            info[k] = v.strip()
    return info


def num(info, key):
    return int(info[key], 0)


def write_result(d, result):
    with open(os.path.join(d, "result.tmp"), "w") as f:
        for k, v in result.items():
            f.write("%s %d\n" % (k, v))
    os.rename(os.path.join(d, "result.tmp"), os.path.join(d, "result"))


def rand_mac():
    return bytes([random.getrandbits(8) & 0xFE | 0x02] + [random.getrandbits(8) for _ in range(5)])


def rand_ip(net):
    return "%s.%d.%d" % (net, random.randint(0, 255), random.randint(1, 254))


# ---- ARP: a flood of strangers, then a new peer that dpv0 must still reach ----

def arp_frame(op, src_mac, sip, tip, dst_mac=b"\xff" * 6, hwlen=6):
    pkt = Ether(dst=dst_mac, src=src_mac) / ARP(op=op, hwsrc=src_mac, psrc=sip, pdst=tip,
                                                hwdst=b"\0" * 6 if op == 1 else dst_mac,
                                                hwlen=hwlen)
    return bytes(pkt)


def phase_arp(w, d, info):
    n = {k: num(info, k) for k in ("n_requests", "n_replies", "n_gratuitous", "n_other",
                                   "n_invalid")}
    res = dict.fromkeys(n, 0)
    seen = set()
    # Each kind in bursts below the packet ring's 4,096 frames, with a pause between.
    for i in range(n["n_requests"]):
        sip = rand_ip("10.203")
        while sip in seen:
            sip = rand_ip("10.203")
        seen.add(sip)
        w.send(arp_frame(1, rand_mac(), sip, w.ip_a))
        res["n_requests"] += 1
        if i % 1000 == 999:
            time.sleep(0.05)
    for _ in range(n["n_replies"]):
        w.send(arp_frame(2, rand_mac(), rand_ip("10.204"), w.ip_a, dst_mac=w.mac_a))
        res["n_replies"] += 1
    time.sleep(0.05)
    for _ in range(n["n_gratuitous"]):
        ip = rand_ip("10.205")
        w.send(arp_frame(1, rand_mac(), ip, ip))
        res["n_gratuitous"] += 1
    for _ in range(n["n_other"]):
        w.send(arp_frame(1, rand_mac(), rand_ip("10.206"), rand_ip("10.207")))
        res["n_other"] += 1
    time.sleep(0.05)
    for i in range(n["n_invalid"]):
        kind = i % 4
        if kind == 0:    # claims dpv0's own address
            f = arp_frame(2, rand_mac(), w.ip_a, w.ip_a, dst_mac=w.mac_a)
        elif kind == 1:  # a group MAC as sender
            f = arp_frame(1, b"\x01\x00\x5e\x00\x00\x01", rand_ip("10.208"), w.ip_a)
        elif kind == 2:  # hardware address length 8
            f = arp_frame(1, rand_mac(), rand_ip("10.208"), w.ip_a)
            f = f[:18] + b"\x08" + f[19:]
        else:            # cut short
            f = arp_frame(1, rand_mac(), rand_ip("10.208"), w.ip_a)[:30]
        w.send(f)
        res["n_invalid"] += 1
    write_result(d, res)
    # What dpv0 sent during the flood (its ARP replies) is of no interest: read it away,
    # so that its request for the new peer finds room in the socket's buffer.
    w.sock.setblocking(False)
    try:
        while True:
            w.sock.recv(2048)
    except BlockingIOError:
        pass
    w.sock.setblocking(True)
    open(os.path.join(d, "flooded"), "w").close()

    # The new peer: answer dpv0's request for it, then see the frame dpv0 sends it.
    peer_ip, peer_mac = info["peer_ip"], mac_bytes(info["peer_mac"])
    w.sock.settimeout(1.0)
    deadline = time.monotonic() + 30
    answered = False
    while time.monotonic() < deadline:
        try:
            f = w.sock.recv(2048)
        except socket.timeout:
            continue
        if len(f) < 42 or f[6:12] != w.mac_a:
            continue
        if f[12:14] == b"\x08\x06" and f[20:22] == b"\x00\x01" and f[38:42] == ip_bytes(peer_ip):
            w.send(arp_frame(2, peer_mac, peer_ip, w.ip_a, dst_mac=w.mac_a))
            answered = True
        elif (answered and f[12:14] == b"\x08\x00" and f[0:6] == peer_mac and
              f[30:34] == ip_bytes(peer_ip) and f[36:38] == struct.pack("!H", ROCE_PORT)):
            res["peer_reached"] = 1
            write_result(d, res)
            return 0
    print("attack.py: dpv0 never %s" % ("sent to the new peer" if answered else
                                        "asked for the new peer"), file=sys.stderr)
    return 1


# ---- requests: from a stranger, and from dpv1's address outside the PSN window ----

def phase_requests(w, d, info):
    qpn, epsn = num(info, "qpn"), num(info, "epsn")
    n = num(info, "n")
    res = {"foreign_src": 0, "ahead": 0, "behind_write": 0, "behind_read": 0}
    stranger_ip, stranger_mac = "10.202.0.99", rand_mac()
    for _ in range(n):
        w.send(w.roce(SEND_ONLY, qpn, epsn, payload=b"forged" * 10, src_ip=stranger_ip,
                      src_mac=stranger_mac))
        res["foreign_src"] += 1
    for _ in range(n):
        psn = epsn + random.randint(1, (1 << 23) - 1)
        w.send(w.roce(SEND_ONLY, qpn, psn, payload=b"ahead" * 10))
        res["ahead"] += 1
    for _ in range(n):
        psn = epsn - random.randint(1, 1 << 23)
        w.send(w.roce(WRITE_ONLY, qpn, psn, reth(random.getrandbits(64), random.getrandbits(32),
                                                   40), b"\xee" * 40))
        res["behind_write"] += 1
    for _ in range(n // 3):
        psn = epsn - random.randint(1, 1 << 23)
        w.send(w.roce(READ_REQ, qpn, psn, reth(random.getrandbits(64), random.getrandbits(32),
                                                 4096)))
        res["behind_read"] += 1
    write_result(d, res)
    return 0


# ---- responses: ACKs, NAKs and READ responses for PSNs dpv0 never sent ----

def phase_responses(w, d, info):
    qpn, next_psn = num(info, "qpn"), num(info, "next_psn")
    n = num(info, "n")
    res = {"acks": 0, "naks": 0, "read_responses": 0, "foreign_src": 0}

    def far():
        # Anywhere but the one PSN dpv0 sent last (next_psn - 1), which is acknowledged.
        return next_psn + random.randint(0, (1 << 24) - 2)

    for _ in range(n):
        w.send(w.roce(ACK, qpn, far(), aeth(0x1F, random.getrandbits(24)), ackreq=False))
        res["acks"] += 1
    for i in range(n):
        syndrome = (0x60, 0x61, 0x62, 0x63, 0x20 | random.getrandbits(5))[i % 5]
        w.send(w.roce(ACK, qpn, far(), aeth(syndrome, random.getrandbits(24)), ackreq=False))
        res["naks"] += 1
    for i in range(n):
        op = READ_RESP_ONLY if i % 2 else READ_RESP_FIRST
        w.send(w.roce(op, qpn, far(), aeth(0x1F, 0), b"\xee" * 256, ackreq=False))
        res["read_responses"] += 1
    stranger_ip, stranger_mac = "10.202.0.98", rand_mac()
    for _ in range(n):
        w.send(w.roce(ACK, qpn, next_psn - 1, aeth(0x62, 0), src_ip=stranger_ip,
                      src_mac=stranger_mac, ackreq=False))
        res["foreign_src"] += 1
    write_result(d, res)
    return 0


# ---- access: in the window, from dpv1's address, outside what the keys allow ----

def phase_access(w, d, info):
    res = {"sent": 0}
    for i in range(num(info, "cases")):
        kind, qpn, psn, rkey, va, length = info["case%d" % i].split()
        qpn, psn, rkey, va, length = (int(x, 0) for x in (qpn, psn, rkey, va, length))
        if kind == "write":
            f = w.roce(WRITE_ONLY, qpn, psn, reth(va, rkey, length), b"\xee" * length)
        elif kind == "read":
            f = w.roce(READ_REQ, qpn, psn, reth(va, rkey, length))
        elif kind == "send_middle":
            f = w.roce(SEND_MIDDLE, qpn, psn, payload=b"\xee" * 256)
        else:
            sys.exit("attack.py: case kind %s" % kind)
        w.send(f)
        res["sent"] += 1
    write_result(d, res)
    return 0


# ---- flood: malformed frames of every kind, paced by what dpv0 has taken ----

def mutate(w, templates, i):
    """Frame @p i of the flood: a template broken in one of a dozen ways."""
    t = bytearray(random.choice(templates))
    kind = i % 12
    if kind == 0:    # cut short anywhere, old ICRC
        return bytes(t[:random.randint(14, len(t) - 1)])
    if kind == 1:    # bytes flipped past Ethernet, ICRC made right again
        for _ in range(random.randint(1, 4)):
            t[random.randint(14, len(t) - 5)] ^= 1 << random.getrandbits(3)
        return bytes(t[:-4]) + icrc(bytes(t[:-4]))
    if kind == 2:    # bytes flipped anywhere, ICRC left wrong
        for _ in range(random.randint(1, 8)):
            t[random.randint(0, len(t) - 1)] ^= random.getrandbits(8) | 1
        return bytes(t)
    if kind == 3:    # any BTH opcode, version, pad count, with a right ICRC
        t[42] = random.getrandbits(8)
        t[43] = random.getrandbits(8)
        return bytes(t[:-4]) + icrc(bytes(t[:-4]))
    if kind == 4:    # extension headers of extreme values
        for off in range(54, min(len(t) - 4, 70)):
            t[off] = random.choice((0x00, 0xFF, 0x7F, 0x80))
        return bytes(t[:-4]) + icrc(bytes(t[:-4]))
    if kind == 5:    # IPv4 length fields that lie
        struct.pack_into("!H", t, 16, random.choice((0, 20, 28, 40, len(t), 0xFFFF)))
        t[24:26] = ip_checksum(bytes(t[14:24] + b"\0\0" + t[26:34]))
        return bytes(t)
    if kind == 6:    # UDP length that lies
        struct.pack_into("!H", t, 38, random.choice((0, 7, 8, 20, len(t), 0xFFFF)))
        return bytes(t[:-4]) + icrc(bytes(t[:-4]))
    if kind == 7:    # IPv4 fragments, options, another version
        which = random.getrandbits(2)
        if which == 0:
            struct.pack_into("!H", t, 20, 0x2000 | random.getrandbits(13))
        elif which == 1:
            t[14] = 0x40 | random.randint(6, 15)
        else:
            t[14] = random.choice((0x65, 0x05, 0xF5))
        t[24:26] = b"\0\0"
        ihl = max(20, (t[14] & 0x0F) * 4)
        t[24:26] = ip_checksum(bytes(t[14:14 + min(ihl, 60)]).ljust(ihl, b"\0")[:ihl])
        return bytes(t)
    if kind == 8:    # a payload of random bytes and random length, right ICRC
        hdr = bytes(t[:54])
        body = os.urandom(random.randint(0, 1400))
        f = bytearray(hdr + body)
        struct.pack_into("!H", f, 16, len(f) - 14 + 4)
        struct.pack_into("!H", f, 38, len(f) - 34 + 4)
        f[24:26] = b"\0\0"
        f[24:26] = ip_checksum(bytes(f[14:34]))
        return bytes(f) + icrc(bytes(f))
    if kind == 9:    # random bytes behind dpv0's MAC, as IPv4, ARP, VLAN or anything
        et = random.choice((b"\x08\x00", b"\x08\x06", b"\x81\x00", b"\x86\xdd", os.urandom(2)))
        # At least a VLAN tag's 4 bytes: the kernel drops a shorter tagged frame before
        # any packet socket sees it, and then it never reaches dpv0.
        return w.mac_a + rand_mac() + et + os.urandom(random.randint(4, 1500 - 14))
    if kind == 10:   # to another UDP port, or not UDP
        if random.getrandbits(1):
            struct.pack_into("!H", t, 36, random.getrandbits(16))
        else:
            t[23] = random.choice((1, 6, 47, 255))
            t[24:26] = b"\0\0"
            t[24:26] = ip_checksum(bytes(t[14:34]))
        return bytes(t)
    # kind 11: a valid frame to a QP number nobody has, or a stranger's to a live QP
    return bytes(t)


def phase_flood(w, d, info):
    n = num(info, "n")
    qpns = [int(x, 0) for x in info["qpns"].split(",")]
    guarded = int(info["guarded_qpn"], 0)
    qkey = num(info, "qkey")
    templates = []
    for _ in range(256):
        qpn = random.choice(qpns)
        psn = random.getrandbits(24)
        op = random.choice((SEND_FIRST, SEND_MIDDLE, SEND_LAST, SEND_ONLY, WRITE_FIRST,
                            WRITE_ONLY, READ_REQ, READ_RESP_FIRST, READ_RESP_ONLY, ACK,
                            UD_SEND_ONLY))
        if op in (WRITE_FIRST, WRITE_ONLY, READ_REQ):
            ext = reth(random.getrandbits(64), random.getrandbits(32), random.getrandbits(16))
        elif op in (ACK, READ_RESP_FIRST, READ_RESP_ONLY):
            ext = aeth(random.getrandbits(8), random.getrandbits(24))
        elif op == UD_SEND_ONLY:
            ext = struct.pack("!II", qkey, random.getrandbits(24))
        else:
            ext = b""
        payload = b"" if op in (READ_REQ, ACK) else os.urandom(random.randint(0, 1024))
        templates.append(w.roce(op, qpn, psn, ext, payload))
    # The QP kept alive, only ever from a stranger's address.
    for _ in range(16):
        templates.append(w.roce(SEND_ONLY, guarded, random.getrandbits(24), payload=b"\xee" * 64,
                                src_ip="10.202.0.97", src_mac=rand_mac()))
        templates.append(w.roce(SEND_ONLY, 0x800000 | random.getrandbits(23), 0, payload=b"x"))
    rx_path = os.path.join(d, "rx")
    base = None
    i = 0
    lost = 0
    still = None
    while i < n:
        try:
            with open(rx_path) as f:
                got = int(f.read() or "0")
        except (OSError, ValueError):
            got = None
        if got is None:
            time.sleep(0.001)
            continue
        if base is None:
            base = got
        # At most 2,048 frames beyond what dpv0 has taken (its packet ring holds 4,096).
        # Some malformed frames never reach it: the kernel's packet ring or DPDK's
        # af_packet driver drops them (dpdk-testpmd, given this flood, misses as many).
        # When dpv0 has taken nothing more for 50 ms, the frames still missing are such
        # frames: counted as lost, and the window moves on.
        ahead = i - lost - (got - base)
        if ahead >= 2048:
            if still is None or still[0] != got:
                still = (got, time.monotonic())
            elif time.monotonic() - still[1] > 0.05:
                lost += ahead
                still = None
            time.sleep(0.0005)
            continue
        still = None
        for _ in range(256):
            if i == n:
                break
            f = mutate(w, templates, i)
            w.send(f[:1514])
            i += 1
        # The kernel queues what a veth sends for the receiving side's softirq, and drops
        # beyond net.core.netdev_max_backlog (1,000): let it run between bursts.
        time.sleep(0.001)
    # The last frames: wait until dpv0 has taken them, or for 50 ms of nothing more.
    while True:
        time.sleep(0.05)
        with open(rx_path) as f:
            now = int(f.read() or "0")
        if now == got:
            break
        got = now
    lost = max(0, i - (got - base))
    write_result(d, {"sent": w.sent, "lost": lost})
    return 0


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: attack.py arp|requests|responses|access|flood DIR")
    phase, d = sys.argv[1], sys.argv[2]
    random.seed(int(os.environ.get("DPV_HOSTILE_SEED", "1")))
    w = Wire(os.environ.get("DPV_HOSTILE_IFACE", "xa"))
    check_icrc_against_scapy(w)
    info = read_info(d)
    phases = {"arp": phase_arp, "requests": phase_requests, "responses": phase_responses,
              "access": phase_access, "flood": phase_flood}
    if phase not in phases:
        sys.exit("attack.py: no phase %s" % phase)
    return phases[phase](w, d, info)


if __name__ == "__main__":
    sys.exit(main())
