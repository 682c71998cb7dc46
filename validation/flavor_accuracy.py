#!/usr/bin/env python3
"""Accuracy of the passive TCP flavor detector (`[stack.flavor_link]`, `transport::flavor`):
a confusion matrix over simulated connections of every flavor, with and without SACK, across
loss rates and round trips, the time to a decision, and the window estimate's error against the
sender's true congestion window (issue 18 item 2).

Each connection is a long-lived TCP download from a server (node 0) through a router (node 1,
the observation point, which sees the data and the ACKs) to a client (node 2): a 100 Mbit/s wire
and a 2 Mbit/s bottleneck with a 100-packet queue, each carrying a quarter of the round trip
each way, the bottleneck losing data packets at random after the router (the flavor-aware link
layer's Fig. 1 path; the access point's scenarios, on which the detector's thresholds were
chosen, are not used here). Prints Markdown tables.

    python validation/flavor_accuracy.py                     # 60 s per run, seeds 1-2
    python validation/flavor_accuracy.py --duration 120 --seeds 3
"""
from __future__ import annotations

import argparse
import collections
import math

import xlayer

FLAVORS = (("reno", False), ("newreno", False), ("westwood", False),
           ("reno", True), ("newreno", True), ("westwood", True))
LOSSES = (0.003, 0.01, 0.03)
RTTS = (0.05, 0.1, 0.2)


def label(flavor: str, sack: bool) -> str:
    return flavor + ("+sack" if sack else "")


def scenario(cc: str, sack: bool, loss: float, rtt: float, duration: float, seed: int) -> dict:
    return {
        "name": "flavor-accuracy", "seed": seed, "duration_s": duration,
        "topology": {"kind": "chain", "count": 3, "spacing_m": 1e6},
        "wired": [
            {"a": 0, "b": 1, "rate_bps": 100e6, "delay_s": rtt / 4, "queue_packets": 1000},
            {"a": 1, "b": 2, "rate_bps": 2e6, "delay_s": rtt / 4, "queue_packets": 100,
             "loss": loss, "reverse_loss": 0.0},
        ],
        "flows": [{"src": 0, "dst": 2, "transport": "tcp", "cc": cc, "sack": sack,
                   "payload_bytes": 1000}],
        "stack": {"flavor_link": {"nodes": [1], "optimize": False}},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--only", metavar="CC", help="only this flavor (reno, newreno, westwood)")
    ap.add_argument("--misses", action="store_true",
                    help="print each run whose decision is not the sender's flavor")
    args = ap.parse_args()
    confusion = collections.Counter()
    decide_s = collections.defaultdict(list)
    errors = collections.defaultdict(list)
    totals = collections.Counter()
    flavors = [(c, s) for c, s in FLAVORS if args.only in (None, c)]
    for cc, sack in flavors:
        for loss in LOSSES:
            for rtt in RTTS:
                for seed in range(1, args.seeds + 1):
                    r = xlayer.run(scenario(cc, sack, loss, rtt, args.duration, seed))
                    row = r.flows.iloc[0]
                    truth = label(cc, sack)
                    got = row["flavor_detected"] or "unknown"
                    got = label(got, bool(row["flavor_sack"])) if got != "unknown" else got
                    confusion[(truth, got)] += 1
                    if args.misses and got != truth:
                        print(f"miss: {truth} loss={loss} rtt={rtt} seed={seed}: {got}")
                    totals[truth] += 1
                    if not math.isnan(row["flavor_decided_s"]):
                        decide_s[truth].append(row["flavor_decided_s"])
                    if not math.isnan(row["flavor_window_error"]):
                        errors[truth].append(row["flavor_window_error"])
    truths = [label(c, s) for c, s in flavors]
    # Linux's classes, which a simulated sender should never be taken for.
    columns = [label(c, s) for c, s in FLAVORS] + ["cubic", "cubic+sack", "bbr", "bbr+sack",
                                                   "unknown"]
    n = args.seeds * len(LOSSES) * len(RTTS)
    print(f"Rows: the sender's flavor ({n} connections each: losses {LOSSES}, round trips "
          f"{RTTS} s, {args.seeds} seeds, {args.duration:g} s); columns: the detector's decision "
          "at the end of the run.\n")
    print("| sender | " + " | ".join(columns) + " | correct |")
    print("|" + "---|" * (len(columns) + 2))
    correct_all = 0
    for t in truths:
        cells = [str(confusion[(t, c)]) for c in columns]
        correct_all += confusion[(t, t)]
        print(f"| {t} | " + " | ".join(cells) + f" | {confusion[(t, t)] / totals[t]:.0%} |")
    print(f"\nOverall {correct_all / sum(totals.values()):.0%} correct.\n")
    print("| sender | median time of the last decision (s) | window estimate's mean error |")
    print("|---|---|---|")
    for t in truths:
        d = sorted(decide_s[t])
        e = errors[t]
        med = d[len(d) // 2] if d else float("nan")
        err = sum(e) / len(e) if e else float("nan")
        print(f"| {t} | {med:.1f} | {err:.0%} |")


if __name__ == "__main__":
    main()
