#!/usr/bin/env python3
"""Goodput of one saturated flow against distance, for each per-flow FEC code rate and link
retry limit (the flavor-aware link layer's channel, issue 17 item 7).

The channel is that of ``scenarios/flavor-ap-1.toml`` (seed document 003 §V): 802.11a at
5.4 GHz, free-space loss, Rayleigh fading and 4 dB log-normal shadowing drawn per packet, the
BER error model. One saturating UDP flow of 1460-byte payloads (the document's MSS) crosses one
hop of the given distance; ``flows[0].code_rate`` sets its code (BPSK at 12 R Mbit/s) and
``flows[0].retry_limit`` its link-layer attempts. Prints a Markdown table of goodput in Mbit/s.

    python validation/fec_goodput.py                  # 10 s per run, seed 1
    python validation/fec_goodput.py --duration 30 --seed 2
"""
from __future__ import annotations

import argparse

import xlayer

CODES = ("1/3", "1/2", "2/3", "1")
RETRIES = (1, 2, 4)
DISTANCES = (100, 300, 500, 700, 850)


def scenario(distance: float, code: str, retries: int, duration: float, seed: int) -> dict:
    return {
        "name": "fec-goodput",
        "seed": seed,
        "duration_s": duration,
        "radio": {
            "standard": "802.11a",
            "data_rate_mbps": 6.0,
            "frequency_mhz": 5400.0,
            "propagation": "free_space",
            "fading": "rayleigh",
            "shadowing_sigma_db": 4.0,
            "error_model": "ber",
        },
        "topology": {"kind": "chain", "count": 2, "spacing_m": distance},
        "flows": [{
            "src": 0, "dst": 1, "rate_bps": "saturate", "payload_bytes": 1460,
            "code_rate": code, "retry_limit": retries,
        }],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=10.0, help="simulated seconds per run")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    head = "| code rate | attempts | " + " | ".join(f"{d} m" for d in DISTANCES) + " |"
    print(head)
    print("|" + "---|" * (2 + len(DISTANCES)))
    for code in CODES:
        for retries in RETRIES:
            cells = []
            for d in DISTANCES:
                r = xlayer.run(scenario(d, code, retries, args.duration, args.seed))
                cells.append(f"{r.flows['throughput_bps'].iloc[0] / 1e6:.2f}")
            print(f"| {code} | {retries} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
