#!/usr/bin/env python3
"""Labelled captures of real Linux TCP connections, for `xlayer flavor` (issue 18 item 5).

Each capture is one bulk TCP transfer between two network namespaces through a third one that
plays the path, captured with tcpdump at a chosen point, under a known congestion control and
SACK setting:

    xlf-snd (sender)  s0 ═══ m0  xlf-mid (path)  m1 ═══ r0  xlf-rcv (receiver)
                      10.77.0.1                            10.77.0.2

- **The sender's congestion control** (`reno`, `cubic`, `bbr`) is set on its routes
  (`ip route replace ... congctl CC` in the sender namespace) and on its socket
  (`TCP_CONGESTION`, checked by reading it back). The per-namespace sysctl
  `net.ipv4.tcp_congestion_control` is not used: outside the initial namespace it accepts only
  the controls in the host's `tcp_allowed_congestion_control` (EPERM otherwise), which this
  script does not widen. SACK is `net.ipv4.tcp_sack` (per namespace) in both end namespaces
  (SACK needs both SYNs to offer it).
- **The path.** Where the kernel has `sch_netem`, the middle namespace forwards in the kernel
  and `tc netem` on its two interfaces adds the one-way delay (both ways), the random loss
  (data direction) and the bottleneck rate with its drop-tail queue (`netem rate ... limit`).
  Kernels built without netem (as this project's machines are: `CONFIG_NET_SCH_NETEM` is not
  set, and `tc qdisc add ... netem` answers "Specified qdisc kind is unknown") get the same
  path from a user-space relay in the middle namespace (`--path relay`, the default when netem
  is missing): it bridges m0 and m1 with AF_PACKET sockets and applies, to each frame from the
  sender, a Bernoulli loss (seeded), a drop-tail queue of `--queue` packets served at `--rate`
  Mbit/s, then the one-way delay; frames towards the sender get the delay only.
- **Offloads off** (TSO, GSO, GRO on every veth end), so frames are the segments TCP sends,
  and transmit checksumming too, so the frames the relay copies carry complete checksums.
- **The transfer**: the receiver namespace listens, the sender namespace connects and writes
  for `--duration` seconds (`upload`), or the sender namespace listens and the receiver
  connects and reads (`download`: the data sender did the passive open).
- **The capture**: `tcpdump -s SNAPLEN` in the sender namespace (on s0, or on `any`, which
  gives Linux cooked SLL2 frames), the middle namespace (m0: the link from the sender into the
  path) or the receiver namespace (r0).

Each capture's labels go into its file name and into `manifest.json` beside it (a list of
objects: file, cc, expected flavor — Linux's `reno` is NewReno (RFC 6582) — sack, point and the
path). Needs root, `ip netns`, tcpdump and ethtool.

    python validation/linux_captures.py --out /tmp/caps --cc cubic --sack 1 --point sender
    python validation/linux_captures.py --out /tmp/caps --grid        # the validation grid
"""
from __future__ import annotations

import argparse
import heapq
import itertools
import json
import os
import random
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

NS_SND, NS_MID, NS_RCV = "xlf-snd", "xlf-mid", "xlf-rcv"
ADDR_SND, ADDR_RCV = "10.77.0.1", "10.77.0.2"
PORT = 5201
#: The Linux congestion controls and the flavor xlayer should report for each.
EXPECTED = {"reno": "newreno", "cubic": "cubic", "bbr": "bbr"}
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


def sh(*cmd: str, check: bool = True, ns: Optional[str] = None) -> subprocess.CompletedProcess:
    full = (["ip", "netns", "exec", ns] if ns else []) + list(cmd)
    return subprocess.run(full, check=check, capture_output=True, text=True)


def can_run() -> Optional[str]:
    """None when captures can be made here, else why not."""
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    for tool in ("ip", "tc", "tcpdump", "ethtool"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    probe = "xlf-probe"
    r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if r.returncode != 0:
        return f"ip netns add failed: {r.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    ccs = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    missing = [cc for cc in EXPECTED if cc not in ccs]
    if missing:
        return f"congestion controls missing from the kernel: {missing}"
    return None


def netem_available() -> bool:
    ns = "xlf-probe-netem"
    subprocess.run(["ip", "netns", "add", ns], capture_output=True)
    try:
        sh("ip", "link", "add", "p0", "type", "veth", "peer", "name", "p1", ns=ns)
        r = sh("tc", "qdisc", "add", "dev", "p0", "root", "netem", "delay", "1ms", ns=ns,
               check=False)
        return r.returncode == 0
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def teardown() -> None:
    for ns in (NS_SND, NS_MID, NS_RCV):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def setup(cc: str, sack: bool, mtu: int, path: str, args: argparse.Namespace) -> None:
    teardown()
    for ns in (NS_SND, NS_MID, NS_RCV):
        sh("ip", "netns", "add", ns)
        sh("ip", "link", "set", "lo", "up", ns=ns)
        sh("sysctl", "-q", "net.ipv6.conf.all.disable_ipv6=1", ns=ns)
    sh("ip", "link", "add", "s0", "netns", NS_SND, "type", "veth", "peer", "name", "m0",
       "netns", NS_MID)
    sh("ip", "link", "add", "m1", "netns", NS_MID, "type", "veth", "peer", "name", "r0",
       "netns", NS_RCV)
    for ns, dev in ((NS_SND, "s0"), (NS_MID, "m0"), (NS_MID, "m1"), (NS_RCV, "r0")):
        sh("ip", "link", "set", dev, "mtu", str(mtu), "up", ns=ns)
        sh("ethtool", "-K", dev, "tx", "off", "tso", "off", "gso", "off", "gro", "off", ns=ns,
           check=False)
    if path == "netem":
        # Kernel forwarding through the middle namespace: two subnets, routed.
        sh("ip", "addr", "add", f"{ADDR_SND}/24", "dev", "s0", ns=NS_SND)
        sh("ip", "addr", "add", "10.77.0.254/24", "dev", "m0", ns=NS_MID)
        sh("ip", "addr", "add", "10.77.1.254/24", "dev", "m1", ns=NS_MID)
        sh("ip", "addr", "add", "10.77.1.2/24", "dev", "r0", ns=NS_RCV)
        sh("ip", "route", "add", "default", "via", "10.77.0.254", ns=NS_SND)
        sh("ip", "route", "add", "default", "via", "10.77.1.254", ns=NS_RCV)
        sh("sysctl", "-q", "net.ipv4.ip_forward=1", ns=NS_MID)
        bdp_delay = f"{args.delay_ms}ms"
        # Data direction (towards the receiver): loss, bottleneck rate and queue, delay.
        sh("tc", "qdisc", "add", "dev", "m1", "root", "netem", "delay", bdp_delay,
           "loss", f"{args.loss * 100}%", "rate", f"{args.rate}mbit", "limit",
           str(args.queue), ns=NS_MID)
        sh("tc", "qdisc", "add", "dev", "m0", "root", "netem", "delay", bdp_delay, ns=NS_MID)
    else:
        # One L2 segment bridged by the relay; the middle namespace has no address.
        sh("ip", "addr", "add", f"{ADDR_SND}/24", "dev", "s0", ns=NS_SND)
        sh("ip", "addr", "add", f"{ADDR_RCV}/24", "dev", "r0", ns=NS_RCV)
    for route in sh("ip", "-4", "route", "show", ns=NS_SND).stdout.splitlines():
        sh("ip", "route", "replace", *route.split(), "congctl", cc, ns=NS_SND)
    for ns in (NS_SND, NS_RCV):
        sh("sysctl", "-q", f"net.ipv4.tcp_sack={int(sack)}", ns=ns)
        # Buffers large enough that the congestion window, not the receive window, limits.
        sh("sysctl", "-q", "net.ipv4.tcp_rmem=4096 131072 6291456", ns=ns)
        sh("sysctl", "-q", "net.ipv4.tcp_wmem=4096 131072 6291456", ns=ns)
        sh("sysctl", "-q", "net.ipv4.tcp_no_metrics_save=1", ns=ns)


def receiver_address(path: str) -> str:
    return ADDR_RCV if path == "relay" else "10.77.1.2"


# ----------------------------------------------------------------------------------------------
# The user-space path (relay), run inside the middle namespace.


def relay(rate_mbps: float, delay_s: float, loss: float, queue: int, seed: int,
          stop_after: float) -> None:
    """Bridges m0 (sender side) and m1 (receiver side) until `stop_after` seconds or SIGTERM."""
    rng = random.Random(seed)
    socks = {}
    for dev in ("m0", "m1"):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        s.bind((dev, 0))
        s.setblocking(False)
        socks[dev] = s
    out = {"m0": socks["m1"], "m1": socks["m0"]}
    pending: List = []  # (send_at, n, out_socket, frame)
    serial_end = 0.0  # when the bottleneck finishes serializing what it holds
    in_queue: List[float] = []  # serialization ends of the frames queued at the bottleneck
    counter = itertools.count()
    running = [True]
    signal.signal(signal.SIGTERM, lambda *_: running.__setitem__(0, False))
    deadline = time.monotonic() + stop_after
    bps = rate_mbps * 1e6
    while running[0] and time.monotonic() < deadline:
        now = time.monotonic()
        timeout = max(0.0, pending[0][0] - now) if pending else 0.05
        ready, _, _ = select.select(list(socks.values()), [], [], min(timeout, 0.05))
        now = time.monotonic()
        for s in ready:
            dev = "m0" if s is socks["m0"] else "m1"
            while True:
                try:
                    frame, addr = s.recvfrom(65535)
                except BlockingIOError:
                    break
                if addr[2] == PACKET_OUTGOING:
                    continue
                if dev == "m0":  # towards the receiver: loss, bottleneck, delay
                    if rng.random() < loss:
                        continue
                    while in_queue and in_queue[0] <= now:
                        in_queue.pop(0)
                    if len(in_queue) >= queue:
                        continue  # drop-tail
                    serial_end = max(now, serial_end) + len(frame) * 8 / bps
                    in_queue.append(serial_end)
                    heapq.heappush(pending, (serial_end + delay_s, next(counter), out[dev],
                                             frame))
                else:  # towards the sender: delay only
                    heapq.heappush(pending, (now + delay_s, next(counter), out[dev], frame))
        now = time.monotonic()
        while pending and pending[0][0] <= now:
            _, _, sock, frame = heapq.heappop(pending)
            try:
                sock.send(frame)
            except OSError:
                pass


# ----------------------------------------------------------------------------------------------
# The transfer's two ends.


def sink(host: str, port: int, listen: bool, seconds: float) -> None:
    """Reads until the peer closes (or `seconds` pass)."""
    if listen:
        srv = socket.socket()
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind((host, port))
        srv.listen(1)
        srv.settimeout(seconds)
        conn, _ = srv.accept()
    else:
        conn = socket.create_connection((host, port), timeout=seconds)
    conn.settimeout(seconds)
    try:
        while conn.recv(1 << 16):
            pass
    except OSError:
        pass
    conn.close()


def source(host: str, port: int, listen: bool, seconds: float, cc: str) -> None:
    """Writes for `seconds` under congestion control `cc`, then closes."""
    if listen:
        srv = socket.socket()
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind((host, port))
        srv.listen(1)
        srv.settimeout(30)
        conn, _ = srv.accept()
    else:
        conn = None
        for _ in range(50):
            try:
                conn = socket.create_connection((host, port), timeout=5)
                break
            except OSError:
                time.sleep(0.1)
        if conn is None:
            raise SystemExit(f"cannot connect to {host}:{port}")
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
    got = conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0")
    if got.decode() != cc:
        raise SystemExit(f"the socket runs {got.decode()}, not {cc}")
    chunk = b"x" * (1 << 16)
    end = time.monotonic() + seconds
    conn.settimeout(5)
    try:
        while time.monotonic() < end:
            conn.sendall(chunk)
    except OSError:
        pass
    conn.close()


# ----------------------------------------------------------------------------------------------


def capture_name(cc: str, sack: bool, point: str, args: argparse.Namespace, seed: int) -> str:
    loss = f"{args.loss:g}".replace(".", "p")
    return (f"{cc}-{'sack' if sack else 'nosack'}-{point}-{args.direction}-r{args.rate:g}"
            f"-d{args.delay_ms:g}-l{loss}-q{args.queue}-s{seed}.pcap")


def make_capture(cc: str, sack: bool, point: str, seed: int, args: argparse.Namespace,
                 out: Path, path: str) -> Dict:
    setup(cc, sack, args.mtu, path, args)
    procs: List[subprocess.Popen] = []
    me = [sys.executable, os.path.abspath(__file__)]
    name = capture_name(cc, sack, point, args, seed)
    file = out / name
    try:
        if path == "relay":
            procs.append(subprocess.Popen(
                ["ip", "netns", "exec", NS_MID] + me + [
                    "_relay", str(args.rate), str(args.delay_ms / 1000), str(args.loss),
                    str(args.queue), str(seed), str(args.duration + 30)]))
        ns, dev = {"sender": (NS_SND, "s0"), "sender-any": (NS_SND, "any"),
                   "middle": (NS_MID, "m0"), "receiver": (NS_RCV, "r0")}[point]
        dump = subprocess.Popen(
            ["ip", "netns", "exec", ns, "tcpdump", "-i", dev, "-s", str(args.snaplen), "-U",
             "-w", str(file), "tcp"], stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        procs.append(dump)
        time.sleep(1.0)
        rcv = receiver_address(path)
        if args.direction == "upload":
            far = subprocess.Popen(["ip", "netns", "exec", NS_RCV] + me + [
                "_sink", rcv, str(PORT), "1", str(args.duration + 30)])
            time.sleep(0.5)
            near = subprocess.Popen(["ip", "netns", "exec", NS_SND] + me + [
                "_source", rcv, str(PORT), "0", str(args.duration), cc])
        else:
            near = subprocess.Popen(["ip", "netns", "exec", NS_SND] + me + [
                "_source", "0.0.0.0", str(PORT), "1", str(args.duration), cc])
            time.sleep(0.5)
            far = subprocess.Popen(["ip", "netns", "exec", NS_RCV] + me + [
                "_sink", ADDR_SND if path == "relay" else "10.77.0.1", str(PORT), "0",
                str(args.duration + 30)])
        near.wait(timeout=args.duration + 60)
        far.wait(timeout=60)
        time.sleep(1.0)
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    p.kill()
        teardown()
    return {"file": name, "cc": cc, "expected": EXPECTED[cc], "sack": sack, "point": point,
            "direction": args.direction, "rate_mbps": args.rate, "delay_ms": args.delay_ms,
            "loss": args.loss, "queue": args.queue, "mtu": args.mtu, "seed": seed,
            "duration_s": args.duration, "snaplen": args.snaplen, "path": path}


def write_manifest(out: Path, entries: List[Dict]) -> None:
    manifest = out / "manifest.json"
    old = json.loads(manifest.read_text()) if manifest.exists() else []
    names = {e["file"] for e in entries}
    merged = [e for e in old if e["file"] not in names] + entries
    merged.sort(key=lambda e: e["file"])
    tmp = manifest.with_suffix(".tmp")
    tmp.write_text(json.dumps(merged, indent=1) + "\n")
    tmp.replace(manifest)


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_relay":
        r, d, l, q, seed, stop = argv[1:]
        relay(float(r), float(d), float(l), int(q), int(seed), float(stop))
        return 0
    if argv and argv[0] == "_sink":
        host, port, listen, seconds = argv[1:]
        sink(host, int(port), listen == "1", float(seconds))
        return 0
    if argv and argv[0] == "_source":
        host, port, listen, seconds, cc = argv[1:]
        source(host, int(port), listen == "1", float(seconds), cc)
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path, help="folder for the captures")
    ap.add_argument("--cc", default="cubic", choices=sorted(EXPECTED))
    ap.add_argument("--sack", type=int, default=1, choices=(0, 1))
    ap.add_argument("--point", default="sender",
                    choices=("sender", "sender-any", "middle", "receiver"))
    ap.add_argument("--direction", default="upload", choices=("upload", "download"))
    ap.add_argument("--rate", type=float, default=10.0, help="bottleneck, Mbit/s")
    ap.add_argument("--delay-ms", type=float, default=20.0, help="one-way delay, ms")
    ap.add_argument("--loss", type=float, default=0.0, help="random loss of data frames")
    ap.add_argument("--queue", type=int, default=50, help="bottleneck queue, packets")
    ap.add_argument("--mtu", type=int, default=1500)
    ap.add_argument("--duration", type=float, default=25.0, help="seconds of transfer")
    ap.add_argument("--snaplen", type=int, default=128)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--path", choices=("auto", "netem", "relay"), default="auto")
    ap.add_argument("--grid", action="store_true",
                    help="every cc x SACK x point over the seeds --seed..--seed+--seeds-1")
    ap.add_argument("--seeds", type=int, default=1)
    args = ap.parse_args(argv)
    why = can_run()
    if why:
        print(f"linux_captures: cannot run here: {why}", file=sys.stderr)
        return 2
    path = args.path
    if path == "auto":
        path = "netem" if netem_available() else "relay"
    args.out.mkdir(parents=True, exist_ok=True)
    if args.grid:
        runs = [(cc, sack, point, seed) for seed in range(args.seed, args.seed + args.seeds)
                for cc in sorted(EXPECTED) for sack in (False, True)
                for point in ("sender", "middle", "receiver")]
    else:
        runs = [(args.cc, bool(args.sack), args.point, args.seed)]
    for cc, sack, point, seed in runs:
        entry = make_capture(cc, sack, point, seed, args, args.out, path)
        write_manifest(args.out, [entry])
        size = (args.out / entry["file"]).stat().st_size
        print(f"{entry['file']}: {size} bytes ({path})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
