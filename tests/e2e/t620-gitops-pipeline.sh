#!/bin/sh
# The shipped GitOps pipeline (examples/gitops, docs/gitops.md "GitOps") run as
# shipped against the emulators: the GitHub Actions workflow's steps in
# order (tests/e2e/ci_runner.py: `run:` lines through bash -e, `uses:`
# replaced by what they do: a throwaway clone per runner, the keyless
# credential file of google-github-actions/auth against the emulator's
# STS and IAM, artifacts in a shared directory served by a fake `gh`), and
# the GitLab CI file's jobs. The fleet is examples/gitops/fleet.yaml with
# only the ssh user and port and the source repository's URL changed; its
# project and bucket are served by tests/fakegcp, its nodes' workers are
# sshd VMs (tests/e2e/sshd.sh) whose image has python and pip (shims).
# Covers: a pull request's plan (summary, artifact, exit code 2), main
# applying exactly that saved plan, two pipelines at once (the second waits
# -lock-timeout, then fails with the lock info), a saved plan made stale by
# another apply refused, an out-of-band delete found by the nightly drift
# job (exit 2 fails it), force-unlock (the workflow's unlock job) after a
# runner was SIGKILLed holding the lock, then the pipeline going on; and
# GitLab's merge request plan and default-branch plan + apply.
# shellcheck disable=SC2317 # gha, glab, ...: run through ok and fails
. "$(dirname "$0")/lib.sh"
. "$TOP/tests/e2e/gcp_workers.sh"
setup_dir t620
# Debian's python3 with python3-yaml (.ci/run installs it), else any python3.
PY=/usr/bin/python3
"$PY" -c 'import yaml' 2>/dev/null || PY=python3
if ! "$PY" -c 'import yaml' 2>/dev/null; then
	echo "1..0 # SKIP needs python3 with PyYAML (reads the CI files)"
	exit 0
fi
EX=$TOP/examples/gitops
WF=$EX/.github/workflows/tpuform.yml
PROVIDER=projects/123456789012/locations/global/workloadIdentityPools/ci/providers/github
SA=deployer@my-team-project.iam.gserviceaccount.com
OIDC=eyJhbGciOiJSUzI1NiJ9.OIDC-SUBJECT-TOKEN-t620.c2lnbmF0dXJl
REQ=GITHUB-REQUEST-TOKEN-t620
gcp_workers_start 10 127.0.62.1 --project my-team-project --op-seconds 3 --auth token \
	--wif-audience "//iam.googleapis.com/$PROVIDER" --wif-subject-token "$OIDC" \
	--oidc-request-token "$REQ" --impersonate-sa "$SA" --impersonate-caller sts \
	--bucket my-team-tpuform-state
unset TPUFORM_ACCESS_TOKEN # keyless only: what the workflow sets up

# ---- the worker image: python and pip on PATH (a TPU VM image has them) --------
mkdir -p image
# shellcheck disable=SC2016 # "$@" is for the shim, not here
printf '#!/bin/sh\nexec /usr/bin/python3 "$@"\n' >image/python
printf '#!/bin/sh\necho "pip: the image has every requirement"\n' >image/pip
chmod +x image/python image/pip
i=0
while [ $i -lt 10 ]; do
	sshd_in $i mount --bind "$W/image" /usr/local/bin
	i=$((i + 1))
done

# ---- the training code and the fleet's repository (origin) --------------------
git init -q -b main llm-src
(
	cd llm-src && mkdir configs && : >requirements.txt && echo "lr: 0.1" >configs/base.yaml &&
		printf 'import sys, time\nprint("training", sys.argv[1:], flush=True)\ntime.sleep(3600)\n' >train.py &&
		git add . && git -c user.name=t -c user.email=t@example.invalid commit -qm code &&
		git tag v1.4.2 && git clone -q --bare . ../llm-train.git
)
sed -e "s|https://github.com/my-team/llm-train.git|$W/llm-train.git|" -e 's|user: tpuform|user: root|' \
	-e '/^  private_key:/a\
  port: '"$SSHD_PORT" "$EX/fleet.yaml" >fleet.test.yaml
is "the fleet under test is the example but for the ssh user and port and the source URL" \
	"$(diff "$EX/fleet.yaml" fleet.test.yaml | grep -c '^[<>]')" 5
git init -q -b main dev
git -C dev config user.name dev
git -C dev config user.email dev@example.invalid
(cd "$EX" && tar cf - --exclude=./fleet.yaml .) | tar xf - -C dev
git -C dev add -A
git -C dev commit -qm "the pipeline"
git clone -q --bare dev origin.git
git -C dev remote add origin "$W/origin.git"
git -C dev fetch -q origin

# ---- runners --------------------------------------------------------------------
mkdir -p bin art
ln -s "$TPUFORM" bin/tpuform
ln -s "$TOP/tests/e2e/fake_gh.py" bin/gh
echo '{}' >art/pulls.json
export PATH="$W/bin:$PATH" FAKE_GH_DIR="$W/art"
RUN=0
LOCK_TIMEOUT=30s
# gha JOB EVENT SHA REF [PR_HEAD_SHA] [INPUTS_JSON]: one run of one job of the
# workflow on a fresh runner; its log is runs/N.log ($LOG), its exit code the job's.
gha_prepare() {
	RUN=$((RUN + 1))
	r=$W/runners/$RUN
	mkdir -p "$r/home" runs
	inputs=${6:-}
	[ -n "$inputs" ] || inputs='{}'
	CTX=$r/ctx.json
	LOG=$W/runs/$RUN.log
	jq -n --arg ws "$r/ws" --arg art "$W/art" --argjson id "$RUN" --arg ev "$2" --arg sha "$3" \
		--arg ref "$4" --arg head "${5:-}" --argjson inputs "$inputs" --arg url "$FAKEGCP_URL" \
		--arg req "$REQ" --arg prov "$PROVIDER" --arg sa "$SA" --rawfile key "$SSHD_KEY" \
		--arg lt "$LOCK_TIMEOUT" --arg origin "$W/origin.git" \
		'{origin: $origin, workspace: $ws, artifacts: $art, run_id: $id, event: $ev, sha: $sha,
		  ref: $ref, repository: "my-team/fleet", pr_head_sha: $head, inputs: $inputs,
		  vars: {WIF_PROVIDER: $prov, DEPLOY_SA: $sa},
		  secrets: {WANDB_API_KEY: "wandb-t620", TPUFORM_SSH_KEY: $key},
		  env: {TPUFORM_LOCK_TIMEOUT: $lt},
		  sts_url: ($url + "/v1/token"), iam_url: $url,
		  id_token_url: ($url + "/oidc/idtoken?api-version=2.0"), id_token_request_token: $req}' \
		>"$CTX"
}
gha() {
	gha_prepare "$@"
	HOME=$r/home "$PY" "$TOP/tests/e2e/ci_runner.py" github "$WF" "$1" "$CTX" >"$LOG" 2>&1
}
# pr N: push the branch pr-N as it is in dev and make GitHub's test merge
# into main (refs/pull/N/merge); sets HEAD_SHA and MERGE_SHA.
pr() {
	git -C dev push -q -f origin "pr-$1"
	HEAD_SHA=$(git -C dev rev-parse "pr-$1")
	git -C dev fetch -q origin
	git -C dev checkout -q --detach origin/main
	git -C dev merge -q --no-ff -m "Merge $HEAD_SHA into main" "pr-$1"
	MERGE_SHA=$(git -C dev rev-parse HEAD)
	git -C dev push -q origin "HEAD:refs/pull/$1/merge"
}
# merge N: merge pull request N into main; sets MAIN_SHA.
merge() {
	git -C dev fetch -q origin
	git -C dev checkout -q -B main origin/main
	git -C dev merge -q --no-ff -m "Merge pull request #$1" "pr-$1"
	git -C dev push -q origin main
	MAIN_SHA=$(git -C dev rev-parse HEAD)
	jq --arg m "$MAIN_SHA" --arg h "$(git -C dev rev-parse "pr-$1")" '.[$m] = $h' art/pulls.json >art/p.json
	mv art/p.json art/pulls.json
}
# branch N EXPR: new branch pr-N from main whose fleet.yaml is changed by sed EXPR.
branch() {
	git -C dev fetch -q origin
	git -C dev checkout -q -B "pr-$1" origin/main
	sed -i "$2" dev/fleet.yaml
	git -C dev commit -qam "pull request $1"
}
output() { jq -r ".plan.exitcode // empty" "art/runs/$1/outputs.json"; }
nodes() { curl -s "$FAKEGCP_URL/__admin/nodes" | jq -r '.[] | (.name | split("/")) as $p | "\($p[5]):\(.state)"' | sort | tr '\n' ' '; }
nready() { curl -s "$FAKEGCP_URL/__admin/nodes" | jq '[.[] | select(.state == "READY")] | length'; }
# The state's objects (the run ledger's, docs/ledger.md, are not the state's).
objects() { curl -s "$FAKEGCP_URL/__admin/storage" | jq -r '.buckets[0].objects[].name' | grep -v '\.ledger/' | sort | tr '\n' ' '; }
lock_held() { objects | grep -q 'team-llm.tflock'; }
GEN_JQ='.buckets[0].objects[] | select(.name == "fleets/team-llm.tfstate") | .generation'
state_gen() { curl -s "$FAKEGCP_URL/__admin/storage" | jq -r "$GEN_JQ"; }
reqs() { curl -s "$FAKEGCP_URL/__admin/requests"; }

# ---- pull request 1: add the fleet ----------------------------------------------------
git -C dev checkout -q -b pr-1
cp fleet.test.yaml dev/fleet.yaml
git -C dev add fleet.yaml
git -C dev commit -qm "the fleet"
pr 1
H1=$HEAD_SHA
ok "PR 1: the plan job succeeds" gha plan pull_request "$MERGE_SHA" refs/pull/1/merge "$H1"
P1=$RUN
is "its plan step recorded exit code 2 (changes) in GITHUB_OUTPUT" "$(output $P1)" 2
S=$(cat "art/runs/$P1/summary.md")
like "the job summary has the verdict" "$S" "^Changes: merging applies exactly this plan\."
like "and the plan" "$S" "^Plan: 4 to add, 0 to change, 0 to destroy\."
like "with the commit v1.4.2 pins" "$S" "commit += \"$(git -C llm-src rev-parse "v1.4.2^{commit}")\""
ok "the saved plan is the artifact tpuform-plan-<head sha>" test -s "art/runs/$P1/tpuform-plan-$H1/tpuform.tfplan"
ok "keyless: the job's OIDC token was exchanged at STS" \
	test "$(reqs | jq '[.[] | select(.path == "/v1/token" and .status == 200)] | length')" -ge 1
unlike "no secret or token in the log" "$(cat "$LOG")" "wandb-t620|$OIDC|$REQ|ya29\\.|PRIVATE KEY"
is "the plan created nothing" "$(nodes)" ""
is "and left no lock; the state is only in the bucket" "$(objects)" ""
ok "no state file on the runner" test -z "$(find runners -name '*.tfstate' -o -name 'tpuform.state.json*')"

merge 1
ok "main: the apply job succeeds" gha apply push "$MAIN_SHA" refs/heads/main
like "it fetched the plan of the pull request's run" "$(cat "$LOG")" \
	"fetch-plan: the plan of run $P1 \(pull request head $H1\)"
ok "and applied exactly that file" cmp "runners/$RUN/ws/tpuform.tfplan" "art/runs/$P1/tpuform-plan-$H1/tpuform.tfplan"
like "Apply complete" "$(cat "$LOG")" "Apply complete! Resources: 4 added, 0 changed, 0 destroyed\."
is "four READY nodes" "$(nready)" 4
is "the state is in the bucket" "$(objects)" "fleets/team-llm.tfstate "
ok "nightly: no drift, the job succeeds" gha drift schedule "$MAIN_SHA" refs/heads/main
like "plan: no changes" "$(cat "$LOG")" "No changes\."

# ---- two pipelines at once, and a saved plan made stale ----------------------------
branch 2 's/count: 4/count: 5/'
pr 2
ok "PR 2 (count 5): plan" gha plan pull_request "$MERGE_SHA" refs/pull/2/merge "$HEAD_SHA"
merge 2
M2=$MAIN_SHA
branch 3 's/count: 5/count: 6/'
pr 3
H3=$HEAD_SHA
ok "PR 3 (count 6), on top of PR 2 before main applied it: plan" \
	gha plan pull_request "$MERGE_SHA" refs/pull/3/merge "$H3"
like "it plans 2 to add" "$(cat "art/runs/$RUN/summary.md")" "Plan: 2 to add"
M3PR=$MERGE_SHA
# Main's apply of PR 2 runs on a runner of its own (a process group: setsid).
# Once it holds the lock it is stopped (SIGSTOP) until PR 3's plan is done:
# an apply as slow as real TPU creates are, whatever the machine's load.
gha_prepare apply push "$M2" refs/heads/main
HOME=$r/home setsid "$PY" "$TOP/tests/e2e/ci_runner.py" github "$WF" apply "$CTX" >"$LOG" 2>&1 &
APPLY2=$!
A2=$RUN
wait_for 60 lock_held
kill -STOP "-$APPLY2"
LOCK_TIMEOUT=2s
t0=$(date +%s)
fails "PR 3's plan re-run meanwhile fails on the lock" 1 gha plan pull_request "$M3PR" refs/pull/3/merge "$H3"
took=$(($(date +%s) - t0))
L=$(cat "$LOG")
like "after waiting: Acquiring state lock" "$L" "Acquiring state lock. This may take a few moments"
ok "for the -lock-timeout (2s; the job took ${took}s)" test "$took" -ge 2
like "with Terraform's error" "$L" "Error acquiring the state lock"
like "the lock's ID" "$L" "ID: +[0-9a-f-]{36}"
like "its operation (main's apply)" "$L" "Operation: +OperationTypeApply"
like "and who holds it" "$L" "Who: +[^ ]+@[^ ]+"
is "the failed plan recorded exit code 1" "$(output $RUN)" 1
ok "and uploaded no plan" test ! -e "art/runs/$RUN/tpuform-plan-$H3"
LOCK_TIMEOUT=30s
kill -CONT "-$APPLY2"
wait $APPLY2
is "main's apply of PR 2 went on and succeeded" "$?" 0
like "1 added" "$(cat "runs/$A2.log")" "Apply complete! Resources: 1 added"
merge 3
M3=$MAIN_SHA
fails "main: applying PR 3's plan, made before PR 2's apply, is refused" 1 gha apply push "$M3" refs/heads/main
like "the saved plan is stale" "$(cat "$LOG")" "Saved plan is stale"
is "nothing was created" "$(nready)" 5
ok "PR 3's plan job is run again" gha plan pull_request "$M3" refs/pull/3/merge "$H3"
like "now 1 to add" "$(cat "art/runs/$RUN/summary.md")" "Plan: 1 to add"
ok "main's apply job run again applies the new plan" gha apply push "$M3" refs/heads/main
like "1 added" "$(cat "$LOG")" "Apply complete! Resources: 1 added"
is "six READY nodes" "$(nready)" 6

# ---- drift: a node deleted out of band ------------------------------------------------
zone=$(curl -s "$FAKEGCP_URL/__admin/nodes" | jq -r '.[] | select(.name | endswith("/team-llm-sweep-0")) | .name | split("/")[3]')
curl -s -o /dev/null -X POST "$FAKEGCP_URL/__admin/nodes/$zone/team-llm-sweep-0:delete"
fails "nightly: the drift job fails" 1 gha drift schedule "$M3" refs/heads/main
like "its plan exited 2" "$(cat "$LOG")" "exit code 2"
like "and shows the node to create again" "$(cat "$LOG")" "team-llm-sweep-0.* will be created"

# ---- a runner SIGKILLed holding the lock; force-unlock; the pipeline goes on -------
branch 4 's/^# A team.s fleet.*/&  (re-created team-llm-sweep-0 after a drift)/'
pr 4
H4=$HEAD_SHA
ok "PR 4 (heal the drift): plan" gha plan pull_request "$MERGE_SHA" refs/pull/4/merge "$H4"
merge 4
M4=$MAIN_SHA
gha_prepare apply push "$M4" refs/heads/main
gen0=$(state_gen)
# The victim runner: a process group of its own (setsid), so that SIGKILL
# takes the runner, its step's shell and tpuform at once, as a lost VM would.
# It dies after saving the state with the create pending (before the
# request), while its create is in flight.
HOME=$r/home setsid "$PY" "$TOP/tests/e2e/ci_runner.py" github "$WF" apply "$CTX" >"$LOG" 2>&1 &
victim=$!
wait_for 60 sh -c "[ \"\$(curl -s '$FAKEGCP_URL/__admin/storage' | jq -r '$GEN_JQ')\" != '$gen0' ]"
ok "main's apply of PR 4 holds the lock, its create in flight" lock_held
kill -KILL "-$victim"
wait $victim 2>/dev/null
ok "after the SIGKILL the lock object stays" lock_held
LOCK_TIMEOUT=2s
fails "main's apply job run again fails on the lock" 1 gha apply push "$M4" refs/heads/main
LOCK_TIMEOUT=30s
id=$(sed -n 's/^[│ ]*ID: *\([0-9a-f-]*\)$/\1/p' "$LOG" | head -n 1)
like "its Lock Info gives the dead runner's lock ID" "$id" "^[0-9a-f-]{36}$"
like "held by an apply" "$(cat "$LOG")" "Operation: +OperationTypeApply"
fails "the unlock job refuses another ID" 1 gha unlock workflow_dispatch "$M4" refs/heads/main "" \
	'{"force_unlock": "11111111-2222-4333-8444-555555555555"}'
like "naming the ID held" "$(cat "$LOG")" "does not match existing lock ID \"$id\""
ok "Run workflow with force_unlock=ID: the unlock job" gha unlock workflow_dispatch "$M4" refs/heads/main "" \
	"{\"force_unlock\": \"$id\"}"
like "in Terraform's words" "$(cat "$LOG")" "state has been successfully unlocked"
is "the lock object is gone" "$(objects | grep -c tflock)" 0
fails "the killed apply had saved its state: the old saved plan is stale now" 1 \
	gha apply push "$M4" refs/heads/main
like "refused, not applied twice" "$(cat "$LOG")" "Saved plan is stale"
ok "PR 4's plan job run again" gha plan pull_request "$M4" refs/pull/4/merge "$H4"
ok "main's apply job run again: the pipeline goes on" gha apply push "$M4" refs/heads/main
like "Apply complete" "$(cat "$LOG")" "Apply complete!"
ok "nightly: no drift left" gha drift schedule "$M4" refs/heads/main
is "six READY nodes" "$(nready)" 6
is "only the state and its backup in the bucket" "$(objects)" "fleets/team-llm.tfstate fleets/team-llm.tfstate.backup "

# ---- GitLab CI: a merge request's plan, the default branch's plan and apply ---------
# glab JOB SOURCE SHA BRANCH PIPELINE: one job of .gitlab-ci.yml; log in $LOG.
glab() {
	RUN=$((RUN + 1))
	r=$W/runners/$RUN
	mkdir -p "$r/home" runs
	jq -n --arg ws "$r/ws" --arg art "$W/art" --argjson id "$RUN" --arg src "$2" --arg sha "$3" \
		--arg br "$4" --arg pl "$5" --arg url "$FAKEGCP_URL" --arg prov "$PROVIDER" --arg sa "$SA" \
		--rawfile key "$SSHD_KEY" --arg tok "$OIDC" --arg origin "$W/origin.git" \
		'{origin: $origin, workspace: $ws, artifacts: $art, run_id: $id, pipeline_source: $src,
		  sha: $sha, branch: $br, default_branch: "main", pipeline_id: $pl, id_token: $tok,
		  env: {WIF_PROVIDER: $prov, DEPLOY_SA: $sa, WANDB_API_KEY: "wandb-t620",
		        TPUFORM_SSH_KEY: $key, TPUFORM_LOCK_TIMEOUT: "30s",
		        STS_TOKEN_URL: ($url + "/v1/token"), IAM_CREDENTIALS_URL: $url}}' >"$r/ctx.json"
	LOG=$W/runs/$RUN.log
	HOME=$r/home "$PY" "$TOP/tests/e2e/ci_runner.py" gitlab "$EX/.gitlab-ci.yml" "$1" "$r/ctx.json" >"$LOG" 2>&1
}
branch 5 's/count: 6/count: 5/'
git -C dev push -q -f origin pr-5
MR=$(git -C dev rev-parse pr-5)
ok "GitLab merge request: validate" glab validate merge_request_event "$MR" "" mr5
ok "GitLab merge request: plan" glab plan merge_request_event "$MR" "" mr5
is "plan.exitcode (an artifact): 2" "$(cat art/gitlab/mr5/plan/plan.exitcode)" 2
like "plan-summary.md has the plan" "$(cat art/gitlab/mr5/plan/plan-summary.md)" "Plan: 0 to add, 0 to change, 1 to destroy"
ok "the saved plan is an artifact" test -s art/gitlab/mr5/plan/tpuform.tfplan
is "keyless: ci/gitlab-wif.sh wrote an external_account credential file" \
	"$(jq -r .type "runners/$RUN/.tpuform-wif-$RUN/credentials.json")" external_account
is "the merge request changed nothing" "$(nready)" 6
merge 5
ok "GitLab default branch: validate" glab validate push "$MAIN_SHA" main main5
ok "GitLab default branch: plan" glab plan push "$MAIN_SHA" main main5
ok "GitLab default branch: apply (needs: plan)" glab apply push "$MAIN_SHA" main main5
like "it applied the plan job's saved plan" "$(cat "$LOG")" "Apply complete! Resources: 0 added, 0 changed, 1 destroyed\."
is "five READY nodes" "$(nready)" 5
ok "GitLab schedule: no drift" glab drift schedule "$MAIN_SHA" main sched5
finish
