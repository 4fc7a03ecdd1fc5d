#!/usr/bin/env python3
"""Chip-hours billed, computed straight from a run ledger's timestamps
(docs/ledger.md), independently of tpuform report: each node is billed
from the create that made it READY to its delete, or to the moment a
preemption was seen (the preempted line's time minus its "elapsed").

Usage: ledger_hours.py LEDGER.jsonl...   prints the chip-hours."""
import datetime
import json
import sys


def when(s):
    d = datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ")
    return d.replace(tzinfo=datetime.timezone.utc).timestamp()


def main():
    lines = []
    for path in sys.argv[1:]:
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    lines.append(json.loads(line))
                except ValueError:
                    pass
    lines.sort(key=lambda e: (when(e["ts"]), e.get("writer", ""), e.get("seq", 0)))
    creating, billed_from, total = {}, {}, 0.0
    for e in lines:
        node, kind = e.get("node"), e["event"]
        if not node:
            continue
        if kind == "creating" and node not in billed_from:
            creating[node] = when(e["ts"])
        elif kind == "ready" and node in creating:
            billed_from[node] = creating.pop(node)
        elif kind in ("preempted", "deleted") and node in billed_from:
            end = when(e["ts"]) - (e.get("elapsed", 0) if kind == "preempted" else 0)
            total += (end - billed_from.pop(node)) * e["chips"] / 3600.0
    print("%.9f" % total)


main()
