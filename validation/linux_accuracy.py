#!/usr/bin/env python3
"""Confusion matrix of ``xlayer flavor`` over labelled Linux captures (a folder written by
``validation/linux_captures.py``, with its ``manifest.json``): rows are the sender's congestion
control and SACK setting, columns the detector's flavor for the capture's bulk connection (the
one that carried more than 100 kB). Prints Markdown.

    python validation/linux_accuracy.py /tmp/caps            # one folder
    python validation/linux_accuracy.py tests/data/captures --misses
"""
from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path

import xlayer

COLUMNS = ("reno", "newreno", "westwood", "cubic", "bbr", "unknown")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--misses", action="store_true", help="list the captures classified wrong")
    args = ap.parse_args()
    confusion = collections.Counter()
    totals = collections.Counter()
    misses = []
    for folder in args.folders:
        for e in json.loads((folder / "manifest.json").read_text()):
            df = xlayer.flavor(folder / e["file"], details=True)
            bulk = df[df.data_bytes > 100_000]
            got = bulk.iloc[0].flavor if len(bulk) else "unknown"
            row = f"{e['cc']}{'+sack' if e['sack'] else ''} (expect {e['expected']})"
            confusion[(row, got)] += 1
            totals[row] += 1
            if got != e["expected"]:
                misses.append(f"{e['file']}: {got}")
    rows = sorted(totals, key=lambda r: ("reno" in r and 0 or "cubic" in r and 1 or 2, r))
    print("| Linux sender | " + " | ".join(COLUMNS) + " | correct |")
    print("|" + "---|" * (len(COLUMNS) + 2))
    right = 0
    for r in rows:
        expect = r.split("expect ")[1].rstrip(")")
        right += confusion[(r, expect)]
        cells = " | ".join(str(confusion[(r, c)]) for c in COLUMNS)
        print(f"| {r} | {cells} | {confusion[(r, expect)]}/{totals[r]} |")
    print(f"\n{right} of {sum(totals.values())} correct "
          f"({right / max(1, sum(totals.values())):.0%}).")
    if args.misses:
        print("\n" + "\n".join(misses))


if __name__ == "__main__":
    main()
