#!/usr/bin/env python3
"""Run one job of a shipped CI file on this machine, as its CI would.

Used by tests/e2e/t620-gitops-pipeline.sh to test examples/gitops as shipped:

  ci_runner.py github WORKFLOW JOB CONTEXT.json
      Runs the job's steps in order. `run:` steps (each must be one line) go
      through `bash -e FILE` in the workspace, as GitHub's default shell on
      Linux does, with GITHUB_OUTPUT, GITHUB_STEP_SUMMARY and GITHUB_ENV
      files per step; ${{ }} expressions are evaluated for the names the
      workflow uses (github.*, vars.*, secrets.*, inputs.*, steps.*.outputs.*).
      `uses:` steps are replaced by what they do: actions/checkout = a
      throwaway `git clone` of the origin at GITHUB_SHA; google-github-actions/
      auth = an external_account credential file (the OIDC token from
      ACTIONS_ID_TOKEN_REQUEST_URL, exchanged at STS, then impersonation)
      and GOOGLE_APPLICATION_CREDENTIALS; actions/upload-artifact = a copy
      into the shared artifacts directory (the fake `gh` serves it). The
      first failed step fails the job; later steps are skipped.
  ci_runner.py gitlab GITLAB_CI JOB CONTEXT.json
      Runs default.before_script (minus the apt-get line: the packages are
      here already) and the job's script in one `bash` with `set -eo
      pipefail`, as GitLab's shell executor does; artifacts of the jobs in
      `needs:` are copied in first, the job's own are saved afterwards.

CONTEXT.json: {"origin", "workspace", "artifacts", "run_id", "event", "sha",
"ref", "repository", "pr_head_sha", "inputs", "vars", "secrets", "env",
"sts_url", "iam_url", "id_token_url", "id_token_request_token"}; for gitlab
also "pipeline_source", "branch", "default_branch", "pipeline_id", "id_token".
Prints the job's log; exits 0 when the job succeeded, 1 when it failed.
The runs are recorded in ARTIFACTS/runs.json for the fake gh.
"""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def die(msg):
    print("ci_runner: " + msg, file=sys.stderr)
    sys.exit(2)


def lookup(expr, scope):
    """A dotted name in scope; '' for a missing var, secret or input."""
    if not re.fullmatch(r"[A-Za-z_][\w.-]*", expr):
        die("unsupported expression: ${{ %s }}" % expr)
    cur = scope
    parts = expr.split(".")
    for p in parts:
        if not isinstance(cur, dict):
            die("cannot evaluate ${{ %s }}" % expr)
        if p not in cur:
            if parts[0] in ("vars", "secrets", "inputs") or parts[0] == "steps":
                return ""
            die("unknown name in ${{ %s }}" % expr)
        cur = cur[p]
    return cur


def subst(text, scope):
    return EXPR.sub(lambda m: str(lookup(m.group(1), scope)), text)


def record_run(ctx, status, extra):
    path = os.path.join(ctx["artifacts"], "runs.json")
    runs = json.load(open(path)) if os.path.exists(path) else []
    runs.append(dict(extra, databaseId=ctx["run_id"], status=status))
    with open(path, "w") as f:
        json.dump(runs, f, indent=1)


def checkout(ctx, ws):
    shutil.rmtree(ws, ignore_errors=True)
    subprocess.run(["git", "clone", "-q", ctx["origin"], ws], check=True)
    subprocess.run(["git", "-C", ws, "checkout", "-q", ctx["sha"]], check=True)


def gha_auth(ctx, ws, with_, env):
    """What google-github-actions/auth@v2 writes for WIF + impersonation."""
    provider = with_["workload_identity_provider"]
    sa = with_["service_account"]
    if not provider or not sa:
        die("google-github-actions/auth: workload_identity_provider and service_account are required")
    creds = {
        "type": "external_account",
        "audience": "//iam.googleapis.com/" + provider,
        "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
        "token_url": ctx["sts_url"],
        "service_account_impersonation_url": ctx["iam_url"]
        + "/v1/projects/-/serviceAccounts/%s:generateAccessToken" % sa,
        "credential_source": {
            "url": ctx["id_token_url"] + "&audience=https://iam.googleapis.com/" + provider,
            "headers": {"Authorization": "Bearer " + ctx["id_token_request_token"]},
            "format": {"type": "json", "subject_token_field_name": "value"},
        },
    }
    fd, path = tempfile.mkstemp(prefix="gha-creds-", suffix=".json", dir=ws)
    with os.fdopen(fd, "w") as f:
        json.dump(creds, f)
    for k in ("GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_AUTH_CREDENTIAL_FILE_OVERRIDE",
              "GOOGLE_GHA_CREDS_PATH"):
        env[k] = path
    print("google-github-actions/auth: credentials in %s" % path)


def upload(ctx, ws, with_):
    dest = os.path.join(ctx["artifacts"], "runs", str(ctx["run_id"]), with_["name"])
    src = os.path.join(ws, with_["path"])
    if not os.path.exists(src):
        print("actions/upload-artifact: no files at %s" % with_["path"])
        return with_.get("if-no-files-found", "warn") != "error"
    os.makedirs(dest, exist_ok=True)
    shutil.copy(src, dest)
    print("actions/upload-artifact: %s -> %s" % (with_["path"], with_["name"]))
    return True


def run_line(line, ws, env, tmp, name):
    if "\n" in line.strip():
        die("step %r: run: is not one line" % name)
    script = os.path.join(tmp, "step.sh")
    with open(script, "w") as f:
        f.write(line + "\n")
    return subprocess.run(["bash", "-e", script], cwd=ws, env=env).returncode


def read_kv(path):
    out = {}
    if os.path.exists(path):
        for ln in open(path).read().splitlines():
            if "=" in ln:
                k, v = ln.split("=", 1)
                out[k] = v
    return out


def github_scope(ctx):
    gh = {"token": "ghs_fake_token_%s" % ctx["run_id"], "ref": ctx["ref"], "sha": ctx["sha"],
          "event_name": ctx["event"], "repository": ctx["repository"],
          "event": {"pull_request": {"head": {"sha": ctx.get("pr_head_sha", "")}}}}
    return {"github": gh, "vars": ctx.get("vars", {}), "secrets": ctx.get("secrets", {}),
            "inputs": ctx.get("inputs", {}), "steps": {}}


def job_if_allows(cond, event):
    return ("github.event_name == '%s'" % event) in cond


def github(wf_path, job_name, ctx):
    wf = yaml.safe_load(open(wf_path))
    job = wf["jobs"][job_name]
    if not job_if_allows(job.get("if", ""), ctx["event"]):
        die("job %s does not run on %s (if: %s)" % (job_name, ctx["event"], job.get("if")))
    scope = github_scope(ctx)
    ws = ctx["workspace"]
    tmp = tempfile.mkdtemp(prefix="runner-", dir=os.path.dirname(ws))
    env = dict(os.environ)
    env.update(ctx.get("env", {}))
    env.update({"CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_SHA": ctx["sha"],
                "GITHUB_REF": ctx["ref"], "GITHUB_REPOSITORY": ctx["repository"],
                "GITHUB_EVENT_NAME": ctx["event"], "GITHUB_WORKSPACE": ws,
                "GITHUB_RUN_ID": str(ctx["run_id"]), "RUNNER_TEMP": tmp,
                "ACTIONS_ID_TOKEN_REQUEST_URL": ctx["id_token_url"],
                "ACTIONS_ID_TOKEN_REQUEST_TOKEN": ctx["id_token_request_token"]})
    for k, v in list(wf.get("env", {}).items()) + list(job.get("env", {}).items()):
        if k not in ctx.get("env", {}):  # the test's overrides win
            env[k] = subst(str(v), scope)
    summary = os.path.join(ctx["artifacts"], "runs", str(ctx["run_id"]), "summary.md")
    os.makedirs(os.path.dirname(summary), exist_ok=True)
    ok = True
    for i, step in enumerate(job["steps"]):
        name = step.get("name") or step.get("uses") or "step %d" % i
        print("::group::%s" % name, flush=True)
        t0 = time.time()
        uses = step.get("uses", "")
        with_ = {k: subst(str(v), scope) for k, v in step.get("with", {}).items()}
        if uses.startswith("actions/checkout@"):
            checkout(ctx, ws)
        elif uses.startswith("google-github-actions/auth@"):
            gha_auth(ctx, ws, with_, env)
        elif uses.startswith("actions/upload-artifact@"):
            ok = upload(ctx, ws, with_)
        elif uses:
            die("no stand-in for uses: %s" % uses)
        else:
            senv = dict(env)
            for k, v in step.get("env", {}).items():
                senv[k] = subst(str(v), scope)
            files = {k: os.path.join(tmp, k.lower()) for k in
                     ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_ENV")}
            for k, p in files.items():
                open(p, "w").close()
                senv[k] = p
            rc = run_line(subst(step["run"], scope), ws, senv, tmp, name)
            if "id" in step:
                scope["steps"][step["id"]] = {"outputs": read_kv(files["GITHUB_OUTPUT"])}
            env.update(read_kv(files["GITHUB_ENV"]))
            with open(summary, "a") as f:
                f.write(open(files["GITHUB_STEP_SUMMARY"]).read())
            if rc != 0:
                print("::error::Process completed with exit code %d." % rc)
                ok = False
        print("::endgroup:: (%.1fs)" % (time.time() - t0), flush=True)
        if not ok:
            break
    outputs = {k: v["outputs"] for k, v in scope["steps"].items()}
    with open(os.path.join(os.path.dirname(summary), "outputs.json"), "w") as f:
        json.dump(outputs, f)
    record_run(ctx, "success" if ok else "failure",
               {"event": ctx["event"], "headSha": ctx.get("pr_head_sha") or ctx["sha"],
                "job": job_name})
    shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok else 1


def gitlab(path, job_name, ctx):
    ci = yaml.safe_load(open(path))
    job = ci[job_name]
    rules = " ".join(r.get("if", "") for r in job.get("rules", []))
    if ('$CI_PIPELINE_SOURCE == "%s"' % ctx["pipeline_source"]) not in rules:
        die("job %s does not run for %s (rules: %s)" % (job_name, ctx["pipeline_source"], rules))
    ws = ctx["workspace"]
    checkout(ctx, ws)
    art = os.path.join(ctx["artifacts"], "gitlab", str(ctx["pipeline_id"]))
    for need in job.get("needs", []):
        src = os.path.join(art, need)
        for f in os.listdir(src) if os.path.isdir(src) else []:
            shutil.copy(os.path.join(src, f), ws)
    env = dict(os.environ)
    env.update({k: str(v) for k, v in ci.get("variables", {}).items()})
    env.update(ctx.get("env", {}))
    env.update({"CI": "true", "GITLAB_CI": "true", "CI_PIPELINE_SOURCE": ctx["pipeline_source"],
                "CI_COMMIT_SHA": ctx["sha"], "CI_DEFAULT_BRANCH": ctx["default_branch"],
                "CI_JOB_ID": str(ctx["run_id"]), "CI_BUILDS_DIR": os.path.dirname(ws),
                "CI_PROJECT_DIR": ws, "GCP_ID_TOKEN": ctx["id_token"]})
    if ctx.get("branch"):
        env["CI_COMMIT_BRANCH"] = ctx["branch"]
    before = [ln for ln in ci["default"]["before_script"] if not ln.startswith("apt-get")]
    lines = before + job["script"]
    body = "set -eo pipefail\n" + "".join(
        "printf '%%s\\n' %s\n%s\n" % (shlex.quote("$ " + ln), ln) for ln in lines)
    with tempfile.NamedTemporaryFile("w", suffix=".sh", delete=False) as f:
        f.write(body)
    rc = subprocess.run(["bash", f.name], cwd=ws, env=env).returncode
    os.unlink(f.name)
    if rc == 0 and "artifacts" in job:
        dest = os.path.join(art, job_name)
        os.makedirs(dest, exist_ok=True)
        for p in job["artifacts"]["paths"]:
            shutil.copy(os.path.join(ws, p), dest)
    print("Job %s" % ("succeeded" if rc == 0 else "failed: exit code %d" % rc))
    return 0 if rc == 0 else 1


def main():
    if len(sys.argv) != 5 or sys.argv[1] not in ("github", "gitlab"):
        die("usage: ci_runner.py github|gitlab FILE JOB CONTEXT.json")
    ctx = json.load(open(sys.argv[4]))
    fn = github if sys.argv[1] == "github" else gitlab
    sys.exit(fn(sys.argv[2], sys.argv[3], ctx))


if __name__ == "__main__":
    main()
