"""Checks on the payloads tests/e2e/webhook_listener.py received.

    python3 webhook_check.py DIR SECRET

Prints one "name<TAB>value" line per fact the test compares, so the shell
test (t510-watch-notify.sh) asserts each with `is`:
  order      the (event node) sequence for node wn-a-1
  count:E:N  how many E events arrived for node N
  first_attempts  how often the first delivered document was posted
  first_delivered how often it was delivered
  secret     how many posted documents (attempts) contain SECRET
  fields     "ok", or the first payload missing a field or with a bad time
  field:E:K  the value of field K of the first E event
"""
import json
import re
import sys

out, secret = sys.argv[1], sys.argv[2]


def load(name):
    with open(f"{out}/{name}") as f:
        return [line.rstrip("\n") for line in f if line.strip()]


attempts, delivered = load("attempts.jsonl"), load("events.jsonl")
events = [json.loads(line) for line in delivered]
print("order\t" + " ".join(e["event"] for e in events if e.get("node") == "wn-a-1"))
for e in sorted({(e["event"], e.get("node") or "-") for e in events}):
    n = sum(1 for x in events if (x["event"], x.get("node") or "-") == e)
    print(f"count:{e[0]}:{e[1]}\t{n}")
print(f"first_attempts\t{attempts.count(delivered[0]) if delivered else 0}")
print(f"first_delivered\t{delivered.count(delivered[0]) if delivered else 0}")
print(f"secret\t{sum(1 for a in attempts if secret in a)}")
bad = "ok"
keys = {"text", "fleet", "event", "node", "worker", "time", "message", "reason",
        "exit_code", "last_log"}
for e in events:
    if set(e) != keys or not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", e["time"]) \
            or e["fleet"] != "wn" or not e["text"].startswith("tpuform wn: "):
        bad = json.dumps(e)
        break
print(f"fields\t{bad}")
firsts = {}
for e in events:
    firsts.setdefault(e["event"], e)
for ev, e in sorted(firsts.items()):
    for k in ("node", "worker", "exit_code", "last_log", "reason"):
        print(f"field:{ev}:{k}\t{e.get(k)}")
