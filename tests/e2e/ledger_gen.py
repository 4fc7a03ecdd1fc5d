#!/usr/bin/env python3
"""Write a run ledger (docs/ledger.md, version 1) for NODES nodes over DAYS
days, as `tpuform watch` would have written it: each node is created,
runs its job on 2 workers, is preempted every PREEMPT_HOURS hours (node i
first at i % 7 hours) and replaced, has its job fail and restart once a
day, and is deleted at the end. Deterministic (no randomness).

Usage: ledger_gen.py OUT NODES DAYS [PREEMPT_HOURS] [START_EPOCH]"""
import json
import sys
import time


def ts(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%03dZ" % int((t % 1) * 1000)


def main():
    out, nodes, days = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    every = float(sys.argv[4]) * 3600 if len(sys.argv) > 4 else 48 * 3600
    t0 = float(sys.argv[5]) if len(sys.argv) > 5 else 1767225600.0
    end = t0 + days * 86400
    seq = [0]
    lines = []

    def line(t, event, node, gen, **more):
        seq[0] += 1
        o = {"v": 1, "ts": ts(t), "event": event, "cmd": "watch", "writer": "gen:1",
             "seq": seq[0], "node": node, "group": "g%d" % (int(node.rsplit("-", 1)[1]) % 4),
             "zone": "us-central2-b", "api": "tpu", "type": "v4-16", "chip": "v4", "chips": 8,
             "vms": 2, "class": "spot", "generation": gen, "retry": gen}
        o.update(more)
        lines.append((t, seq[0], json.dumps(o, separators=(",", ":"))))

    for i in range(nodes):
        node = "fleet-g%d-%d" % (i % 4, i)
        t, gen = t0 + i, 0
        next_loss = t0 + (i % 7) * 3600 + every
        next_fail = t0 + 86400 + i * 10
        while t < end:
            line(t, "creating", node, gen)
            line(t + 60, "ready", node, gen, action="creating")
            for w in (0, 1):
                line(t + 120, "job_started", node, gen, worker=w)
            t += 120
            while t < end and next_fail < next_loss and next_fail < end:
                line(next_fail, "job_failed", node, gen, worker=0, exit_code=1)
                line(next_fail + 5, "restarting", node, gen)
                line(next_fail + 40, "restarted", node, gen, action="restarting")
                next_fail += 86400
            if next_loss >= end:
                line(end, "deleting", node, gen)
                line(end + 30, "deleted", node, gen)
                break
            line(next_loss, "preempted", node, gen, elapsed=4.5, reason="preempted")
            line(next_loss, "deleting", node, gen, reason="preempted")
            line(next_loss + 20, "deleted", node, gen)
            t, gen = next_loss + 30, gen + 1
            next_loss += every
    lines.sort()
    with open(out, "w", encoding="utf-8") as f:
        for _, _, text in lines:
            f.write(text + "\n")


main()
