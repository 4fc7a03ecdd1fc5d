#!/bin/sh
# The layering check: every #include "..." in product code must point down
# (or stay within its own folder). docs/ARCHITECTURE.md explains the layers.
#
#   sh tests/layering.sh [ROOT]      (ROOT: the tree to check, default .)
#
# Prints one line per upward or sideways include, then a TAP-style summary
# line; exits 1 when there is any. Run by `make check` and `make lint`.
#
# Layers, lowest first. A file may include headers of a lower layer, or of
# its own folder. Folders that share a rank are peers and must not include
# each other.
#   0 util
#   1 model google        (google: the Google API client plumbing: HTTP, auth, errors, retries)
#   2 config state source templates
#   3 providers            (provider.h, transport.h: the interfaces)
#   4 providers/ssh        (the SSH transport, used by the gcp provider)
#   5 providers/local providers/gcp
#     providers/gcp/tpu providers/gcp/compute  (the gcp provider's two API
#                          back-ends: Cloud TPU, Compute Engine)
#   6 plan                 (pure: no providers, no source, no I/O)
#   6 providers/registry   (the table of providers: names every provider's open)
#   7 engine             (its root: the event table, the state store, saved plans, checkpoints)
#   8 engine/ledger      (the run ledger's writer, its report, prices, budgets' spend)
#   9 engine/telemetry engine/workers
#                        (webhooks and metrics; the job on workers, kept logs)
#  10 engine/apply       (the executor)
#  11 engine/pipeline    (fleet -> lock -> state -> provider -> refresh -> plan -> apply)
#  12 engine/chores engine/show
#  13 engine/watch
#  14 cmd
# Also:
#   - plan must not include providers/ or source/ at all (it is pure);
#   - *_internal.h and *_priv.h headers are private to their folder;
#   - a back-end folder (providers/gcp/tpu, providers/gcp/compute) and its
#     provider folder (providers/gcp) may include each other's headers, and
#     a back-end its provider's private ones (the client's); the two
#     back-ends must not include each other;
#   - tests/fakegcp (the emulator) may include only util/ and itself.
set -u
root=${1:-.}
cd "$root" || exit 2

rank() {
	case $1 in
	util) echo 0 ;;
	model | google) echo 1 ;;
	config | state | source | templates) echo 2 ;;
	providers) echo 3 ;;
	providers/ssh) echo 4 ;;
	providers/local | providers/gcp | providers/gcp/tpu | providers/gcp/compute) echo 5 ;;
	plan | providers/registry) echo 6 ;;
	engine) echo 7 ;;
	engine/ledger) echo 8 ;;
	engine/telemetry | engine/workers) echo 9 ;;
	engine/apply) echo 10 ;;
	engine/pipeline) echo 11 ;;
	engine/chores | engine/show) echo 12 ;;
	engine/watch) echo 13 ;;
	cmd) echo 14 ;;
	*) echo "" ;;
	esac
}

# The folder a path belongs to, as the layer table names it.
folder() {
	case $1 in
	tests/fakegcp/*) echo tests/fakegcp ;;
	providers/gcp/*/*) echo "$1" | cut -d/ -f1-3 ;;
	providers/*/* | engine/*/*) echo "$1" | cut -d/ -f1-2 ;;
	*/*) echo "$1" | cut -d/ -f1 ;;
	*) echo . ;;
	esac
}

bad=0
checked=0
files=$(find util model google config state source templates providers plan engine cmd tests/fakegcp \
	-name '*.[ch]' 2>/dev/null | sort)
for f in $files; do
	from=$(folder "$f")
	# grep -n: "LINE:#include "path"" for every quoted include.
	grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" | while IFS=: read -r line rest; do
		inc=$(printf '%s\n' "$rest" | sed 's/^[^"]*"\([^"]*\)".*/\1/')
		case $inc in */*) ;; *) continue ;; esac
		to=$(folder "$inc")
		[ "$to" = "$from" ] && continue
		case $from:$to in
		providers/gcp:providers/gcp/* | providers/gcp/*:providers/gcp) continue ;;
		providers/gcp/*:providers/gcp/*)
			echo "$f:$line: includes \"$inc\": sideways between the gcp provider's back-ends"
			continue
			;;
		esac
		why=""
		case $inc in
		*_internal.h | *_priv.h) why="private header of $to" ;;
		esac
		if [ -z "$why" ] && [ "$from" = tests/fakegcp ]; then
			[ "$to" = util ] || why="the emulator may include only util/"
		fi
		if [ -z "$why" ] && [ "$from" = plan ]; then
			case $to in providers | providers/* | source | engine | engine/* | cmd) why="plan is pure: no $to" ;; esac
		fi
		if [ -z "$why" ] && [ "$from" != tests/fakegcp ]; then
			rf=$(rank "$from")
			rt=$(rank "$to")
			if [ -z "$rf" ] || [ -z "$rt" ]; then
				why="folder outside the layer table"
			elif [ "$rt" -gt "$rf" ]; then
				why="points up ($from is layer $rf, $to is layer $rt)"
			elif [ "$rt" -eq "$rf" ]; then
				why="sideways between peers ($from and $to are both layer $rf)"
			fi
		fi
		[ -n "$why" ] && echo "$f:$line: includes \"$inc\": $why"
	done
	checked=$((checked + 1))
done >"${TMPDIR:-/tmp}/tpf-layering.$$"
bad=$(wc -l <"${TMPDIR:-/tmp}/tpf-layering.$$")
cat "${TMPDIR:-/tmp}/tpf-layering.$$"
rm -f "${TMPDIR:-/tmp}/tpf-layering.$$"
if [ "$bad" -gt 0 ]; then
	echo "layering: $bad include(s) break the layers (see docs/ARCHITECTURE.md)"
	exit 1
fi
echo "layering: $(echo "$files" | wc -w) files, every include points down"
exit 0
