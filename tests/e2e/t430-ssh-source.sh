#!/bin/sh
# The source over SSH: transfer clone (the worker fetches the repo itself)
# and transfer bundle (tpuform uploads a git bundle), the latter for a
# repo the workers cannot reach: here one under this machine's /tmp, which
# every emulated worker has a private copy of.
# shellcheck disable=SC2016 # $vars in single quotes are for the job and the EXIT trap
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/gcp_workers.sh"
setup_dir t430
hidden=$(mktemp -d /tmp/tpuform-t430.XXXXXX)
export TPUFORM_SSH_RETRY=1
GCP_WORKERS_CLEANUP='rm -rf "$hidden"'
gcp_workers_start 4 127.0.43.1 --op-seconds 0.1

# A repo the workers can see ($W is not hidden from them) ...
make_repo
# ... and one they cannot: /tmp is private on every worker.
mkdir -p "$hidden/repo"
(
	cd "$hidden/repo" && git init -q -b main . &&
		git config user.email t@example.invalid && git config user.name test &&
		printf '#!/bin/sh\necho "hidden v1 on $TPUFORM_WORKER_ID"\n' >job.sh &&
		git add job.sh && git commit -qm one
) || exit 1
# Workers get a private /tmp only when the test directory is elsewhere;
# wherever this runs, cover the hidden directory in every worker's own
# mount namespace, so tpuform sees the repo and the workers do not.
i=0
while [ "$i" -lt "$SSHD_N" ]; do
	sshd_in "$i" mount -t tmpfs tpuform-hidden "$hidden"
	i=$((i + 1))
done
ok "the hidden repo is not visible on a worker" sshd_in 0 sh -c "! test -e '$hidden/repo'"
ok "but it is visible to tpuform" test -d "$hidden/repo/.git"

fleet() { # NAME REPO TRANSFER
	mkdir -p "$W/$1"
	cat >"$W/$1/fleet.yaml" <<YAML
fleet: $1
provider:
  gcp: { project: test-project, endpoint: "http://127.0.0.1:$FAKEGCP_PORT" }
ssh: { user: root, private_key: "$SSHD_KEY", port: $SSHD_PORT }
source: { repo: "$2", ref: main, transfer: $3 }
run: |
  { sh job.sh; echo "commit=\$TPUFORM_COMMIT head=\$(git rev-parse HEAD)"; } >> ~/job-\$TPUFORM_FLEET.out
  exec sleep 300
groups:
  - { name: a, accelerator_type: v4-16, runtime_version: tpu-ubuntu2204-base, zones: [z1], count: 1 }
YAML
}
# the harness worker of NAME's worker W
widx() {
	sshd_index "$(jq -r ".nodes[0].workers[$2].address" "$W/$1/tpuform.state.json")"
}

# clone: the worker fetches the repo itself
fleet sc "$W/repo" clone
ok "clone: apply" tpuform apply -f "$W/sc/fleet.yaml" -auto-approve
c1=$(git -C "$W/repo" rev-parse HEAD)
for w in 0 1; do
	i=$(widx sc $w)
	ok "clone: worker $w ran the job" wait_for 5 grep -q "commit=" "$W/workers/w$i/home/job-sc.out"
	like "clone: worker $w checked out the pinned commit" "$(cat "$W/workers/w$i/home/job-sc.out")" "^commit=$c1 head=$c1$"
	like "clone: from the repo" "$(cat "$W/workers/w$i/home/job-sc.out")" "^job on sc-a-0/$w of 2 retry=0 commit=$c1$"
	ok "clone: no bundle was sent" test ! -e "$W/workers/w$i/home/tpuform/source.bundle"
done
ok "clone: destroy" tpuform destroy -f "$W/sc/fleet.yaml" -auto-approve

# clone from where the workers cannot reach: the source step fails
fleet sb "$hidden/repo" clone
fails "clone of an unreachable repo: apply exits 1" 1 tpuform apply -f "$W/sb/fleet.yaml" -auto-approve
like "clone: naming the worker and the step" "$(cat last.out)" "bootstrap failed on worker 'sb-a-0/w[01]' at step 'source' \(exit status 1\): cannot check out commit"
pins=$("$TPUFORM" state show -f "$W/sb/fleet.yaml" sb-a-0 | grep -c '"host_key": "SHA256:')
is "the failed workers' host keys are pinned all the same (trust on first use)" "$pins" 2
like "clone: and the recap" "$(cat last.out)" "sb-a-0/w1 +: ok=0 +changed=0 +unreachable=0 +failed=1"

# bundle: tpuform ships the commit
fleet sb "$hidden/repo" bundle
ok "bundle: apply" tpuform apply -f "$W/sb/fleet.yaml" -auto-approve
h1=$(git -C "$hidden/repo" rev-parse HEAD)
for w in 0 1; do
	i=$(widx sb $w)
	ok "bundle: worker $w ran the job" wait_for 5 grep -q "commit=" "$W/workers/w$i/home/job-sb.out"
	like "bundle: worker $w runs the hidden repo's job" "$(cat "$W/workers/w$i/home/job-sb.out")" "^hidden v1 on $w$"
	like "bundle: at the pinned commit" "$(cat "$W/workers/w$i/home/job-sb.out")" "^commit=$h1 head=$h1$"
	is "bundle: the bundle is 0600" "$(stat -c %a "$W/workers/w$i/home/tpuform/source.bundle")" 600
done

# a new commit: re-provisioned from a new bundle
(cd "$hidden/repo" && sed -i 's/v1/v2/' job.sh && git commit -qam two) || exit 1
h2=$(git -C "$hidden/repo" rev-parse HEAD)
like "bundle: plan sees the new commit" "$(tpuform plan -f "$W/sb/fleet.yaml" 2>&1)" "# sb-a-0 will be updated in-place"
ok "bundle: apply the new commit" tpuform apply -f "$W/sb/fleet.yaml" -auto-approve
for w in 0 1; do
	i=$(widx sb $w)
	ok "bundle: worker $w runs v2" wait_for 5 grep -q "^hidden v2 on $w$" "$W/workers/w$i/home/job-sb.out"
	like "bundle: worker $w at the new commit" "$(tail -n 1 "$W/workers/w$i/home/job-sb.out")" "^commit=$h2 head=$h2$"
done
ok "bundle: plan is clean" tpuform plan -f "$W/sb/fleet.yaml" -detailed-exitcode
ok "bundle: destroy" tpuform destroy -f "$W/sb/fleet.yaml" -auto-approve
finish
