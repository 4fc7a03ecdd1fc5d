#!/bin/sh
# serial: watch rounds of a fraction of a second, timed detection
# tpuform watch -metrics-addr (docs/watch.md "Metrics"): the Prometheus text
# exposition format, scraped while `watch -rounds N` runs and parsed with
# Debian's python3-prometheus-client (tests/e2e/metrics_check.py). Also:
# only explicit IP addresses are served, and the server goes with watch.
. "$(dirname "$0")/lib.sh"
setup_dir t520
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
if [ -z "$PY" ] || ! "$PY" -c 'import prometheus_client.parser' 2>/dev/null; then
	echo "ok 1 # SKIP python3-prometheus-client is not installed (apt-get install python3-prometheus-client)"
	echo "1..1"
	exit 0
fi
cat >fleet.yaml <<'YAML'
fleet: wm
provider:
  local: { root: nodes, create_delay: 0.2s }
quota:
  - { zone: z9, accelerator_type: v2-8, on_demand: 0 }
run: exec sleep 300
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 2, preemptible: true }
  - { name: b, accelerator_type: v2-8, runtime_version: rt, zones: [z9], count: 1 }
YAML
"$TPUFORM" watch -f fleet.yaml -interval 0.3s -session-check 0.5s -rounds 100 \
	-metrics-addr 127.0.0.1:0 >watch.out 2>&1 &
wpid=$!
wait_for 10 grep -q "serving metrics on http://127.0.0.1:[0-9]*/metrics" watch.out
url=$(sed -n 's|.*serving metrics on \(http://[^ ]*\).*|\1|p' watch.out | head -n 1)
like "watch says where it serves the metrics" "$url" '^http://127\.0\.0\.1:[1-9][0-9]*/metrics$'
wait_for 15 grep -q "alive 2/2" watch.out
"$TPUFORM" local preempt -f fleet.yaml wm-a-1 >/dev/null
scrape() { "$PY" "$TOP/tests/e2e/metrics_check.py" "$url" >scrape.txt; }
wait_for 20 sh -c "\"$PY\" \"$TOP/tests/e2e/metrics_check.py\" \"$url\" | grep -q '^tpuform_replacements_total{}	1\$'"
wait_for 10 sh -c "\"$PY\" \"$TOP/tests/e2e/metrics_check.py\" \"$url\" | grep -q 'state=alive}	2\$'"
wait_for 10 sh -c "\"$PY\" \"$TOP/tests/e2e/metrics_check.py\" \"$url\" | grep -q 'session=alive}	2\$'"
scrape
ok "the text parses with prometheus_client's parser" test $? -eq 0
val() { awk -F '\t' -v k="$1" '$1 == k { print $2 }' scrape.txt; }
is "content type: the text format, version 0.0.4" "$(val content-type)" "text/plain; version=0.0.4; charset=utf-8"
is "nodes is a gauge" "$(val type:tpuform_nodes)" gauge
is "group a: 2 alive" "$(val 'tpuform_nodes{group=a,state=alive}')" 2
is "group b: 1 waiting for quota" "$(val 'tpuform_nodes{group=b,state=waiting}')" 1
is "group a: 0 dead again" "$(val 'tpuform_nodes{group=a,state=dead}')" 0
is "workers by session: 2 alive" "$(val 'tpuform_workers{session=alive}')" 2
is "preemptions is a counter" "$(val type:tpuform_preemptions)" counter
is "one preemption, by reason" "$(val 'tpuform_preemptions_total{reason=preempted}')" 1
is "one replacement" "$(val 'tpuform_replacements_total{}')" 1
is "detection latency is a histogram" "$(val type:tpuform_detection_latency_seconds)" histogram
is "with one observation" "$(val 'tpuform_detection_latency_seconds_count{}')" 1
is "counted in the +Inf bucket" "$(val 'tpuform_detection_latency_seconds_bucket{le=+Inf}')" 1
like "the latency is a few seconds at most" "$(val 'tpuform_detection_latency_seconds_sum{}')" '^[0-4](\.[0-9]*)?$'
is "the fleet's name is in tpuform_info" "$(val 'tpuform_info{fleet=wm,version=0.1.0}')" 1
rounds=$(val 'tpuform_rounds_total{}')
ok "rounds are counted ($rounds)" test "${rounds:-0}" -ge 3
last=$(val 'tpuform_last_round_timestamp_seconds{}')
now=$(date +%s)
ok "the last round ended within 10 s of now ($last, $now)" \
	test "$(( now - ${last%.*} ))" -le 10
is "the local provider makes no API requests" "$(grep -c '^tpuform_api_requests_total' scrape.txt)" 0
is "notifications: none configured, none sent" "$(val 'tpuform_notifications_total{result=sent}')" 0

kill -TERM $wpid
wait $wpid
is "watch exits 0" "$?" 0
ok "and stops serving" sh -c "! \"$PY\" \"$TOP/tests/e2e/metrics_check.py\" \"$url\" 2>/dev/null"

fails "an address without a host is refused" 1 tpuform watch -f fleet.yaml -rounds 1 -metrics-addr :9100
like "saying why" "$(cat last.out)" "has no host: metrics are never served on every interface"
fails "a host name is refused (names are not resolved)" 1 \
	tpuform watch -f fleet.yaml -rounds 1 -metrics-addr example.com:9100
like "naming it" "$(cat last.out)" "'example.com' is not an IP address"
fails "a bad port is refused" 1 tpuform watch -f fleet.yaml -rounds 1 -metrics-addr 127.0.0.1:99999
"$PY" -c 'import socket,time,sys
s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(1)
open("busy.port","w").write(str(s.getsockname()[1])); sys.stdout.flush(); time.sleep(30)' &
bpid=$!
wait_for 5 test -s busy.port
fails "a port in use is an error" 1 tpuform watch -f fleet.yaml -rounds 1 \
	-metrics-addr "127.0.0.1:$(cat busy.port)"
like "with the reason" "$(cat last.out)" "Address already in use"
kill $bpid 2>/dev/null
ok "localhost is served (on 127.0.0.1)" sh -c \
	"\"$TPUFORM\" watch -f fleet.yaml -rounds 1 -metrics-addr localhost:0 | grep -q 'serving metrics on http://127.0.0.1:'"

ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
finish
