#!/bin/sh
# Download the saved plan that the merged pull request's `plan` job
# uploaded (artifact tpuform-plan-<head sha>), so that the main branch
# applies exactly what the review showed. tpuform refuses a plan that has
# gone stale (the state changed, or fleet.yaml differs from the one
# planned), so an old artifact can never be applied by mistake.
#
#   sh ci/fetch-plan.sh OUT     (needs GH_TOKEN and the gh CLI)
set -eu
out=$1
repo=${GITHUB_REPOSITORY:?}
sha=${GITHUB_SHA:?}
# The pull request this commit merged, and its head commit.
head=$(gh api "repos/$repo/commits/$sha/pulls" --jq '.[0].head.sha')
if [ -z "$head" ] || [ "$head" = null ]; then
	echo "fetch-plan: $sha was not merged from a pull request: no reviewed plan to apply" >&2
	exit 1
fi
run=$(gh run list --repo "$repo" --workflow tpuform.yml --commit "$head" --event pull_request \
	--status success --limit 1 --json databaseId --jq '.[0].databaseId')
if [ -z "$run" ] || [ "$run" = null ]; then
	echo "fetch-plan: no successful plan run for the pull request head $head" >&2
	exit 1
fi
dir=$(mktemp -d)
gh run download "$run" --repo "$repo" --name "tpuform-plan-$head" --dir "$dir"
mv "$dir/tpuform.tfplan" "$out"
rmdir "$dir"
echo "fetch-plan: the plan of run $run (pull request head $head) -> $out"
