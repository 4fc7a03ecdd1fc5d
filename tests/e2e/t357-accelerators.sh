#!/bin/sh
# tpuform accelerators (issue 19): what each zone offers, from the
# emulator's Cloud TPU API (acceleratorTypes, runtimeVersions) and Compute
# Engine (machineTypes, the TPU ones tpuform knows), as text and -json; an
# API the project cannot list in a zone says why and the other still shows.
. "$(dirname "$0")/lib.sh"
TPF_ROOT=$TOP
. "$TOP/tests/e2e/fakegcp.sh"
setup_dir t357
export TPUFORM_ACCESS_TOKEN=test-token
fakegcp_start --project test-project || exit 1
trap 'fakegcp_stop >/dev/null 2>&1' EXIT

cat >fleet.yaml <<'YAML'
fleet: acc
provider:
  gcp: { project: test-project }
run: "true"
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: tpu-ubuntu2204-base, zones: [us-central1-a], count: 1 }
YAML
ok "accelerators" tpuform accelerators -f fleet.yaml
out=$(cat last.out)
like "names the fleet's zone" "$out" "^Zone us-central1-a$"
like "the Cloud TPU API's accelerator types" "$out" "accelerator types +.*v2-8"
like "and runtime versions" "$out" "runtime versions +.*tpu-ubuntu2204-base"
like "Compute Engine's TPU machine types" "$out" "TPU machine types +ct5p-hightpu-4t, ct6e-standard-1t"
like "every one of them" "$out" "tpu7x-standard-4t"
ok "accelerators -json" tpuform accelerators -f fleet.yaml -json
json=$(cat last.out)
is "one zone" "$(printf '%s' "$json" | jq -r '[.zones[].zone] | join(",")')" us-central1-a
is "v2-8 is among the TPU types" "$(printf '%s' "$json" | jq '.zones[0].tpu.accelerator_types | index("v2-8") != null')" true
is "tpu7x-standard-4t with its 4 chips and image family" \
	"$(printf '%s' "$json" | jq -c '.zones[0].compute.machine_types[] | select(.name == "tpu7x-standard-4t") | [.chips, .image_family]')" \
	'[4,"ubuntu-accel-2404-amd64-tpu-tpu7x"]'
ok "-zone lists that zone only" tpuform accelerators -f fleet.yaml -zone us-east5-a -json
is "the zone asked for" "$(jq -r '[.zones[].zone] | join(",")' last.out)" us-east5-a
ok "a zone Compute Engine does not know: it says why" tpuform accelerators -f fleet.yaml -zone nowhere-1 -json
like "with the API's own message" "$(jq -r '.zones[0].compute.error' last.out)" "HTTP 400.*Unknown zone"
sed 's/gcp: { project: test-project }/local: { root: nodes }/' fleet.yaml >local.yaml
fails "the local provider has nothing to list" 1 tpuform accelerators -f local.yaml
like "and says so" "$(cat last.out)" "does not use the gcp provider"
finish
