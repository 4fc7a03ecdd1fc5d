#!/bin/sh
# Markdown for a job summary (GitHub's $GITHUB_STEP_SUMMARY, or a GitLab
# merge-request note) from a saved plan's text and `plan
# -detailed-exitcode`'s status.
#
#   sh ci/plan-summary.sh PLAN_TEXT EXITCODE
set -eu
text=$1
rc=$2
case $rc in
0) verdict="No changes: the fleet matches fleet.yaml." ;;
2) verdict="Changes: merging applies exactly this plan." ;;
3) verdict="No changes, but the fleet is not as declared (see below)." ;;
*) verdict="The plan failed (exit $rc)." ;;
esac
printf '### tpuform plan\n\n%s\n\n```\n' "$verdict"
# Plans can be long; a job summary holds 1 MiB. Keep the end, where the
# totals are.
tail -c 900000 "$text"
printf '```\n'
