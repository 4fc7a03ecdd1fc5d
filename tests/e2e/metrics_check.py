"""Scrape a `tpuform watch -metrics-addr` endpoint and parse it with
Debian's python3-prometheus-client parser, for t520-watch-metrics.sh.

    python3 metrics_check.py URL [SAMPLE...]

Exits 3 when the module is missing (the test then skips), 2 when the text
does not parse. Otherwise prints "content-type<TAB>VALUE", one
"type:FAMILY<TAB>TYPE" line per family, and one "SAMPLE<TAB>VALUE" line per
sample, the sample written as name{label=value,...} with labels sorted, so
the shell test can look values up.
"""
import sys
import urllib.request

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    sys.exit(3)

with urllib.request.urlopen(sys.argv[1], timeout=10) as r:
    ctype = r.headers.get("Content-Type")
    text = r.read().decode("utf-8")
print(f"content-type\t{ctype}")
try:
    families = list(text_string_to_metric_families(text))
except ValueError as e:
    print(f"parse error: {e}", file=sys.stderr)
    sys.exit(2)
for fam in families:
    print(f"type:{fam.name}\t{fam.type}")
    for s in fam.samples:
        labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
        value = int(s.value) if float(s.value).is_integer() else s.value
        print(f"{s.name}{{{labels}}}\t{value}")
