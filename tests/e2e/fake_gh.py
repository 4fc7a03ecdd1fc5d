#!/usr/bin/env python3
"""A stand-in for the GitHub CLI `gh`, for tests/e2e/t620-gitops-pipeline.sh:
the three calls examples/gitops/ci/fetch-plan.sh makes, answered from the
directory FAKE_GH_DIR that tests/e2e/ci_runner.py fills:

  gh api repos/R/commits/SHA/pulls --jq EXPR   FAKE_GH_DIR/pulls.json
                                               ({merge sha: head sha})
  gh run list --repo R --workflow W --commit SHA --event E --status S
         --limit N --json databaseId --jq EXPR  FAKE_GH_DIR/runs.json, newest first
  gh run download RUN --repo R --name NAME --dir DIR
                                               FAKE_GH_DIR/runs/RUN/NAME/*

Like gh, it wants GH_TOKEN, and --jq filters through jq. Anything else
exits 2, so a changed script shows up here rather than on GitHub.
"""
import json
import os
import shutil
import subprocess
import sys


def fail(msg, code=1):
    print(msg, file=sys.stderr)
    sys.exit(code)


def opts(args):
    out, pos, i = {}, [], 0
    while i < len(args):
        if args[i].startswith("--"):
            out[args[i][2:]] = args[i + 1]
            i += 2
        else:
            pos.append(args[i])
            i += 1
    return out, pos


def emit(value, o):
    text = json.dumps(value)
    if "jq" in o:
        text = subprocess.run(["jq", "-r", o["jq"]], input=text, capture_output=True,
                              text=True, check=True).stdout
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def main():
    d = os.environ.get("FAKE_GH_DIR") or fail("fake gh: FAKE_GH_DIR is not set", 2)
    if not os.environ.get("GH_TOKEN"):
        fail("gh: To use GitHub CLI in a GitHub Actions workflow, set the GH_TOKEN environment variable.", 4)
    a = sys.argv[1:]
    if a[:1] == ["api"]:
        o, pos = opts(a[1:])
        parts = pos[0].split("/")
        if len(parts) != 6 or parts[0] != "repos" or parts[3] != "commits" or parts[5] != "pulls":
            fail("fake gh: unexpected api path %s" % pos[0], 2)
        pulls = json.load(open(os.path.join(d, "pulls.json")))
        head = pulls.get(parts[4])
        emit([{"head": {"sha": head}}] if head else [], o)
    elif a[:2] == ["run", "list"]:
        o, _ = opts(a[2:])
        runs = json.load(open(os.path.join(d, "runs.json")))
        sel = [r for r in reversed(runs)
               if r["headSha"] == o["commit"] and r["event"] == o["event"]
               and r["status"] == o["status"]][: int(o["limit"])]
        emit([{k: r[k] for k in o["json"].split(",")} for r in sel], o)
    elif a[:2] == ["run", "download"]:
        o, pos = opts(a[2:])
        src = os.path.join(d, "runs", pos[0], o["name"])
        if not os.path.isdir(src):
            fail("no artifact matches any of the names or patterns provided")
        os.makedirs(o["dir"], exist_ok=True)
        for f in os.listdir(src):
            shutil.copy(os.path.join(src, f), o["dir"])
    else:
        fail("fake gh: unexpected call: gh %s" % " ".join(a), 2)


if __name__ == "__main__":
    main()
