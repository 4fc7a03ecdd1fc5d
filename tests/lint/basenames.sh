#!/bin/sh
# A basename names one file: no two product sources or headers (foo.c,
# foo.h) in different folders share a name (docs/ARCHITECTURE.md, section
# 5). Two files engine/budget.c and plan/budget.c (as there were once)
# make every "budget.c" in a message, a stack trace, a grep or a review
# ambiguous, and one is easily edited for the other. Product files are every *.c and *.h outside tests/
# and hidden folders, at any depth, found rather than listed.
#
# Prints "basenames: NAME is in A and B" for each repeat and exits 1 when
# there is one that is not allowed below; else a summary line and 0.
set -u
cd "$(dirname "$0")/../.." || exit 2
# Known collisions, each allowed for two files only: none. The last ones
# were renamed in issue 27 (engine/ledger/budget_spend.c beside
# plan/budget.c, engine/ledger/ledger_writer.c beside
# state/ledger_store.c, providers/gcp/compute/compute_engine.h beside
# model/compute.h).
known_repeats=""
echo "basenames: known repeats, allowed in two folders: ${known_repeats:-none}"
files=$(find . \( -path ./tests -o -name '.?*' \) -prune -o -type f \( -name '*.c' -o -name '*.h' \) \
	-print | sed 's|^\./||' | sort)
[ -n "$files" ] || { echo "basenames: no product sources found"; exit 2; }
printf '%s\n' "$files" | awk -v known=" $known_repeats " '
	{ n = split($0, part, "/"); base = part[n]; count[base]++
	  paths[base] = paths[base] (count[base] > 1 ? " and " : "") $0 }
	END {
		bad = 0; total = 0
		for (b in count) {
			total += count[b]
			if (count[b] < 2)
				continue
			if (count[b] == 2 && index(known, " " b " "))
				continue
			printf "basenames: %s is in %s: rename all but one\n", b, paths[b]
			bad++
		}
		if (bad)
			exit 1
		printf "basenames: %d product sources and headers, no other name repeats\n", total
	}'
