#!/usr/bin/env python3
"""802.11b DCF saturation throughput of n stations: xlayer, ns-3 3.44 and Bianchi's model.

    python validation/ns3/compare_saturation.py                  # run both, print the table
    python validation/ns3/compare_saturation.py --save-reference # ... and rewrite the reference
    python validation/ns3/compare_saturation.py --json           # the comparison as JSON

The scenario: node 0 at the origin, n saturated senders evenly on a 10 m circle around it, all
in range of each other; "range" propagation (every frame arrives at full power, so colliding
frames are equally strong and none survives); 802.11b, data at 11 Mbit/s, ACKs at 1 Mbit/s,
long preamble, CW 31...1023, 7 attempts, no RTS/CTS; 1500-byte UDP payloads; throughput over
[1 s, 11 s]. xlayer runs :func:`scenario` in this process; ns-3 runs ``saturation.cc`` (built
by ``build.sh``), for each n and each ``--runs`` RngRun, in two PHY set-ups:

- ``pd_off``: without ns-3's preamble detection model. Like xlayer's default PHY, the receiver locks
  onto the first frame above its sensitivity; a collision is then a frame received in error,
  after which the bystanders defer EIFS (802.11-2016 §10.3.2.3.7). This is the comparison the
  test (``tests/test_ns3_saturation.py``) holds xlayer to.
- ``pd_on``: ns-3's default ``ThresholdPreambleDetectionModel`` (4 dB, -82 dBm). Two equally
  strong frames starting together are each 0 dB below the other, so neither preamble is
  detected: no PHY-RXSTART, no frame in error, and the bystanders defer only DIFS after the
  collision. Collisions cost less and ns-3's throughput is higher the more there are.
  xlayer runs the same set-up with ``radio.preamble_detection = true`` (the same thresholds),
  and the test holds it to these runs as well.

Bianchi's model (IEEE JSAC 18(3), 2000) is computed with the same timing constants, with the
collision time Tc = DATA + EIFS (what xlayer and ns-3 without preamble detection do) and, for
comparison, Tc = DATA + DIFS (what ns-3 with preamble detection does).

``--save-reference`` writes ``reference/saturation.json``: per n, every ns-3 run of both set-ups
(throughput, attempts, acknowledged frames, retry-limit drops, how node 0 saw the collisions).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, NoReturn, Optional

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
BUILD_SH = HERE / "build.sh"
BINARY = HERE / "build" / "saturation"
REFERENCE = HERE / "reference" / "saturation.json"

NS = (1, 2, 5, 10, 15, 20, 30, 40, 50)
DURATION_S = 11.0
WARMUP_S = 1.0
PAYLOAD_BYTES = 1500
RADIUS_M = 10.0

# 802.11b timing (802.11-2016 Clauses 15-16), long preamble.
SLOT, SIFS = 20e-6, 10e-6
DIFS = SIFS + 2 * SLOT


def fail(msg: str, code: int = 1) -> NoReturn:
    print(f"compare_saturation: error: {msg}", file=sys.stderr)
    sys.exit(code)


def scenario(n: int, duration_s: float = DURATION_S, seed: int = 1,
             preamble_detection: bool = False) -> Dict[str, Any]:
    """The xlayer scenario for n senders (a dict for ``xlayer.run``); ``preamble_detection``
    sets ``radio.preamble_detection`` (ns-3's default thresholds, 4 dB and -82 dBm)."""
    positions = [[0.0, 0.0]] + [
        [RADIUS_M * math.cos(2 * math.pi * i / n), RADIUS_M * math.sin(2 * math.pi * i / n)]
        for i in range(n)
    ]
    return {
        "name": f"saturation-{n}",
        "seed": seed,
        "duration_s": duration_s,
        "warmup_s": WARMUP_S,
        "radio": {
            "standard": "802.11b",
            "data_rate_mbps": 11.0,
            "basic_rate_mbps": 1.0,   # ACKs at 1 Mbit/s
            "preamble": "long",
            "propagation": "range",   # full power within range: equal-power collisions
            "tx_range_m": 250.0,
            "rts_cts": False,
            "preamble_detection": preamble_detection,
        },
        "mac": {"queue_packets": 50},
        "topology": {"kind": "explicit", "positions": positions},
        "flows": [
            {"src": i, "dst": 0, "rate_bps": "saturate", "payload_bytes": PAYLOAD_BYTES}
            for i in range(1, n + 1)
        ],
    }


def dsss_airtime(psdu_bytes: int, mbps: float) -> float:
    """Long-preamble DSSS airtime: 192 us PLCP + PSDU time rounded up to microseconds."""
    return 192e-6 + math.ceil(psdu_bytes * 8 / mbps) * 1e-6


def bianchi(n: int, payload: int = PAYLOAD_BYTES, collision_ifs: str = "eifs",
            rts: bool = False) -> float:
    """Bianchi's saturation throughput (payload bit/s) with W = 32, m = 5, basic access or
    RTS/CTS (``rts``; RTS and CTS at 1 Mbit/s). Also the reference of tests/test_validation.py.

    ``collision_ifs``: what follows the collided frames, "eifs" (SIFS + ACK at 1 Mbit/s + DIFS,
    802.11-2016 §10.3.2.3.7) or "difs"."""
    w, m = 32, 5

    def tau_of_p(p: float) -> float:
        # eq. (7) in the form without the 1 - 2p pole: (1 - (2p)^m) / (1 - 2p) = sum (2p)^i
        return 2 / (1 + w + p * w * sum((2 * p) ** i for i in range(m)))

    lo, hi = 1e-9, 1 - 1e-9
    for _ in range(200):
        mid = (lo + hi) / 2
        p = 1 - (1 - mid) ** (n - 1)
        lo, hi = (lo, mid) if mid > tau_of_p(p) else (mid, hi)
    tau = (lo + hi) / 2
    p_tr = 1 - (1 - tau) ** n
    p_s = n * tau * (1 - tau) ** (n - 1) / p_tr
    data = dsss_airtime(payload + 64, 11.0)  # + UDP 8, IPv4 20, LLC/SNAP 8, MAC 24, FCS 4
    ack = dsss_airtime(14, 1.0)
    after_collision = SIFS + ack + DIFS if collision_ifs == "eifs" else DIFS
    if rts:
        rts_t, cts_t = dsss_airtime(20, 1.0), dsss_airtime(14, 1.0)
        ts = rts_t + SIFS + cts_t + SIFS + data + SIFS + ack + DIFS
        tc = rts_t + after_collision
    else:
        ts = data + SIFS + ack + DIFS
        tc = data + after_collision
    return p_s * p_tr * payload * 8 / ((1 - p_tr) * SLOT + p_tr * p_s * ts + p_tr * (1 - p_s) * tc)


def run_xlayer(n: int, seed: int = 1, duration_s: float = DURATION_S,
               preamble_detection: bool = False) -> Dict[str, float]:
    import xlayer

    res = xlayer.run(scenario(n, duration_s, seed, preamble_detection))
    nodes = res.nodes
    tx = float(nodes["mac_tx"].sum())
    return {
        "aggregate_throughput_bps": float(res.summary["aggregate_throughput_bps"]),
        "failed_fraction": float(nodes["mac_retries"].sum()) / tx if tx else 0.0,
    }


def build_ns3() -> None:
    proc = subprocess.run(["bash", str(BUILD_SH), "saturation"], stdout=sys.stderr, stderr=sys.stderr)
    if proc.returncode != 0 or not BINARY.exists():
        fail(f"building the ns-3 program failed (bash {BUILD_SH} exited {proc.returncode})")


def run_ns3(n: int, run: int, preamble_detection: bool) -> Dict[str, Any]:
    args = [str(BINARY), f"--n={n}", f"--run={run}", f"--duration={DURATION_S}",
            f"--warmup={WARMUP_S}", f"--preambleDetection={'true' if preamble_detection else 'false'}"]
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        fail(f"{' '.join(args)} exited {proc.returncode}")
    return json.loads([line for line in proc.stdout.splitlines() if line.strip()][-1])


def summarise(run: Dict[str, Any]) -> Dict[str, Any]:
    keys = ("run", "aggregate_throughput_bps", "data_tx", "acked", "retry_drops", "rx_ok",
            "rx_error", "rx_drops", "data_mode", "ack_mode", "preamble", "wall_s")
    return {k: run[k] for k in keys}


def mean_bps(runs: List[Dict[str, Any]]) -> float:
    return statistics.fmean(r["aggregate_throughput_bps"] for r in runs)


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="*", default=list(NS), help="station counts")
    ap.add_argument("--runs", type=int, default=3, help="ns-3 RngRun values 1..RUNS per n")
    ap.add_argument("--reference", action="store_true",
                    help="take ns-3's numbers from reference/saturation.json instead of running it")
    ap.add_argument("--save-reference", action="store_true", help="rewrite reference/saturation.json")
    ap.add_argument("--json", action="store_true", help="print the comparison as JSON")
    args = ap.parse_args(argv)

    if args.reference:
        ref = json.loads(REFERENCE.read_text())
        ns3 = {int(k): v for k, v in ref["n"].items()}
    else:
        build_ns3()
        ns3 = {}
        for n in args.n:
            ns3[n] = {}
            for key, pd in (("pd_off", False), ("pd_on", True)):
                t0 = time.perf_counter()
                ns3[n][key] = [summarise(run_ns3(n, r, pd)) for r in range(1, args.runs + 1)]
                print(f"ns-3 n={n} {key}: {mean_bps(ns3[n][key]) / 1e6:.3f} Mbit/s "
                      f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
        if args.save_reference:
            version = (HERE / "build" / "ns3-version.txt").read_text().strip()
            REFERENCE.write_text(json.dumps({
                "simulator": "ns-3", "ns3_version": version, "program": "validation/ns3/saturation.cc",
                "duration_s": DURATION_S, "warmup_s": WARMUP_S, "payload_bytes": PAYLOAD_BYTES,
                "n": {str(n): ns3[n] for n in sorted(ns3)},
            }, indent=1) + "\n")
            print(f"wrote {REFERENCE.relative_to(REPO)}", file=sys.stderr)

    rows = []
    for n in sorted(args.n):
        if n not in ns3:
            fail(f"no ns-3 numbers for n = {n}")
        xl = run_xlayer(n)
        xl_pd = run_xlayer(n, preamble_detection=True)
        off, on = ns3[n]["pd_off"], ns3[n]["pd_on"]
        rows.append({
            "n": n,
            "xlayer_bps": xl["aggregate_throughput_bps"],
            "ns3_pd_off_bps": mean_bps(off),
            "ns3_pd_off_spread_bps": (max(r["aggregate_throughput_bps"] for r in off)
                                      - min(r["aggregate_throughput_bps"] for r in off)),
            "xlayer_pd_bps": xl_pd["aggregate_throughput_bps"],
            "ns3_pd_on_bps": mean_bps(on),
            "ns3_pd_on_spread_bps": (max(r["aggregate_throughput_bps"] for r in on)
                                     - min(r["aggregate_throughput_bps"] for r in on)),
            "bianchi_eifs_bps": bianchi(n, collision_ifs="eifs"),
            "bianchi_difs_bps": bianchi(n, collision_ifs="difs"),
            "xlayer_failed_fraction": xl["failed_fraction"],
            "ns3_pd_off_failed_fraction": statistics.fmean(1 - r["acked"] / r["data_tx"] for r in off),
            "xlayer_pd_failed_fraction": xl_pd["failed_fraction"],
            "ns3_pd_on_failed_fraction": statistics.fmean(1 - r["acked"] / r["data_tx"] for r in on),
        })
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"{'':>3} {'preamble detection off':^31} | {'preamble detection on':^31} |")
    print(f"{'n':>3} {'xlayer':>8} {'ns-3':>8} {'spread':>7} {'ratio':>6} | "
          f"{'xlayer':>8} {'ns-3':>8} {'spread':>7} {'ratio':>6} | "
          f"{'Bianchi':>8} {'B. DIFS':>8} | failed off: xl  ns-3  on: xl  ns-3")
    for r in rows:
        print(f"{r['n']:>3} {r['xlayer_bps'] / 1e6:8.3f} {r['ns3_pd_off_bps'] / 1e6:8.3f} "
              f"{r['ns3_pd_off_spread_bps'] / 1e6:7.3f} {r['xlayer_bps'] / r['ns3_pd_off_bps']:6.3f} | "
              f"{r['xlayer_pd_bps'] / 1e6:8.3f} {r['ns3_pd_on_bps'] / 1e6:8.3f} "
              f"{r['ns3_pd_on_spread_bps'] / 1e6:7.3f} {r['xlayer_pd_bps'] / r['ns3_pd_on_bps']:6.3f} | "
              f"{r['bianchi_eifs_bps'] / 1e6:8.3f} {r['bianchi_difs_bps'] / 1e6:8.3f} | "
              f"{r['xlayer_failed_fraction']:15.3f} {r['ns3_pd_off_failed_fraction']:5.3f} "
              f"{r['xlayer_pd_failed_fraction']:7.3f} {r['ns3_pd_on_failed_fraction']:5.3f}")
    print("Mbit/s. ns-3: mean of the runs (spread: max - min). Preamble detection off: xlayer's "
          "default, ns-3 with DisablePreambleDetectionModel; on: xlayer's radio.preamble_detection, "
          "ns-3's default ThresholdPreambleDetectionModel (both 4 dB, -82 dBm). Bianchi: "
          "Tc = DATA + EIFS; B. DIFS: Tc = DATA + DIFS. failed: fraction of attempts not "
          "acknowledged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
