#!/bin/sh
# One number grammar and one duration grammar everywhere (issue 26 item 10;
# util/number.h, util/timeutil.h): exponents are numbers in every numeric
# key and flag, days are a duration unit in the fleet file as in report
# -since, a date that does not exist and a duration past 36500d are errors,
# and report -group names a group that exists. Reads and validates only: no
# node, no loopback block.
. "$(dirname "$0")/lib.sh"
setup_dir t677
cat >fleet.yaml <<'YAML'
fleet: t677
provider:
  local: { root: nodes, create_delay: 1e-1 }
budget: { chip_hours: 1e3, per: week }
run: exec sleep 300
restart_backoff: 1d
stall_timeout: 1d12h
max_restarts: 1e1
groups:
  - { name: train, accelerator_type: v4-16, runtime_version: rt, zones: [z1], count: 2e0 }
  - { name: eval, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 1 }
YAML
ok "validate: 1e3 chip-hours, 1d and 1d12h, count 2e0, max_restarts 1e1" tpuform validate -f fleet.yaml
like "3 nodes" "$(cat last.out)" "2 groups, 3 nodes"
ok "plan -parallelism=1e1: a flag's number is the same grammar" tpuform plan -f fleet.yaml -parallelism=1e1
sed 's/count: 2e0/count: 2.5/' fleet.yaml >half.yaml
fails "count: 2.5 is no whole number" 1 tpuform validate -f half.yaml
like "said so" "$(cat last.out)" "'count' must be a whole number >= 0, got '2.5'"
sed 's/count: 2e0/count: 0x2/' fleet.yaml >hex.yaml
fails "count: 0x2 is no number" 1 tpuform validate -f hex.yaml
sed 's/restart_backoff: 1d/restart_backoff: 36501d/' fleet.yaml >long.yaml
fails "a duration past 36500d is refused" 1 tpuform validate -f long.yaml
like "naming the limit" "$(cat last.out)" "'restart_backoff' must be a duration such as .*7d.*at most 36500d, got '36501d'"

cat >compute.yaml <<'YAML'
fleet: t677c
provider:
  gcp: { project: p }
run: exec sleep 300
groups:
  - { name: long, machine_type: ct6e-standard-1t, zones: [us-central1-a], count: 1, max_run_duration: 8d }
YAML
ok "max_run_duration: 8d is a duration (a group may run up to a year)" tpuform validate -f compute.yaml
cat >flex.yaml <<'YAML'
fleet: t677f
provider:
  gcp: { project: p }
run: exec sleep 300
groups:
  - name: flex
    machine_type: ct6e-standard-1t
    zones: [us-central1-a]
    count: 1
    flex_start: { max_run_duration: 8d, wait: 1m }
YAML
fails "flex-start's 8d is out of its range" 1 tpuform validate -f flex.yaml
like "a range error, not a grammar one" "$(cat last.out)" "'max_run_duration' must be from 600s to 604800s, got '8d'"

# ---- report -since and -group ------------------------------------------------
ok "report -since 7d" tpuform report -f fleet.yaml -since 7d
ok "report -since 1d12h: days in a compound duration" tpuform report -f fleet.yaml -since 1d12h
ok "report -since 1e3s" tpuform report -f fleet.yaml -since 1e3s
ok "report -since a time that exists" tpuform report -f fleet.yaml -since 2026-02-28T00:00:00Z
fails "report -since February 30th" 1 tpuform report -f fleet.yaml -since 2026-02-30T00:00:00Z
like "is an invalid time, not March 2nd" "$(cat last.out)" 'invalid value "2026-02-30T00:00:00Z" for -since'
fails "report -since 999999999999999999999999h" 1 tpuform report -f fleet.yaml -since 999999999999999999999999h
like "is too long" "$(cat last.out)" "longer than 36500d, the longest duration tpuform takes"
fails "report -group nope" 1 tpuform report -f fleet.yaml -group nope
like "no such group" "$(cat last.out)" "no group 'nope' in the fleet file fleet.yaml"
like "listing the groups" "$(cat last.out)" "the groups of fleet 't677': 'train', 'eval'"
ok "report -group train" tpuform report -f fleet.yaml -group train
finish
