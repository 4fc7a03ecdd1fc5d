#!/bin/sh
# tpuform version, and the man pages generated from the command table
# (cmd/man.c through dist/gen.sh): every page renders without a warning
# (groff -ww, mandoc -T lint), and each command's and subcommand's options
# in its page are exactly those of its -help, with the same text, defaults
# and ranges. Every environment variable the sources read is documented
# in tpuform(1).
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"
setup_dir t700

# --- version ------------------------------------------------------------
out=$(tpuform version)
like "version: the release" "$out" "^tpuform v[0-9]+\.[0-9]+\.[0-9]+$"
if [ -e "$TOP/.git" ] && command -v git >/dev/null 2>&1; then
	head=$(git -C "$TOP" rev-parse --short=12 HEAD)
	# The binary may be older than HEAD (built, then committed): any commit of
	# the history is right, an unknown one is not.
	commit=$(printf '%s\n' "$out" | sed -n 's/^commit \([0-9a-f]*\)\(-dirty\)\{0,1\},.*/\1/p')
	ok "version: the commit ($commit) is one of this repository's (HEAD $head)" \
		git -C "$TOP" cat-file -e "${commit:-none}^{commit}"
fi
like "version: the build date" "$out" "built [0-9]{4}-[0-9]{2}-[0-9]{2}T"
json=$(tpuform version -json)
ok "version -json is JSON" sh -c "printf '%s' '$json' | python3 -m json.tool"
for lib in libcurl libssh2 libgit2 libyaml jansson OpenSSL; do
	like "version -json: $lib's version" "$json" "\"$lib\": \"[0-9]+\.[0-9]+"
done
if command -v pkg-config >/dev/null 2>&1 && pkg-config --exists libcurl jansson; then
	like "version: libcurl as the system has it" "$out" "libcurl +$(pkg-config --modversion libcurl)$"
	like "version: jansson as the system has it" "$out" "jansson +$(pkg-config --modversion jansson)$"
fi

# --- man pages ----------------------------------------------------------
ok "dist/gen.sh writes the pages" sh "$TOP/dist/gen.sh" "$TPUFORM" gen
tops=$(tpuform help -commands | cut -f1 | grep -v ' ')
for c in $tops; do
	[ -s "gen/man1/tpuform-$c.1" ] || echo "missing" >>missing.txt
done
is "one page per top-level command" "$(cat missing.txt 2>/dev/null)" ""
is "and tpuform(1)" "$(test -s gen/man1/tpuform.1 && echo yes)" yes

if command -v groff >/dev/null 2>&1; then
	warn=$(for p in gen/man1/*.1; do groff -ww -man -Tutf8 -z "$p" 2>&1; done)
	is "groff -ww -man: no warnings" "$warn" ""
else
	_n=$((_n + 1)); echo "ok $_n # SKIP groff is not installed"
fi
if command -v mandoc >/dev/null 2>&1; then
	warn=$(for p in gen/man1/*.1; do mandoc -T lint -W warning "$p" 2>&1; done)
	is "mandoc -T lint: no warnings" "$warn" ""
else
	_n=$((_n + 1)); echo "ok $_n # SKIP mandoc is not installed"
fi

# The options of a man page section as "FLAG | TEXT" lines: each .TP
# entry's first line is the flag, the lines up to the next request its text.
# $2: the .SS heading of a subcommand, or "" for the page's OPTIONS.
man_flags() {
	awk -v sub_="$2" '
	function clean(s) {
		gsub(/\\f[BIR]/, "", s); gsub(/\\-/, "-", s); gsub(/\\e/, "\\", s); gsub(/\\&/, "", s)
		return s
	}
	function flush() { if (flag != "") print flag " | " text; flag = ""; text = "" }
	/^\.SH OPTIONS/ { on = (sub_ == ""); next }
	/^\.SS / { flush(); h = clean($0); sub(/^\.SS "/, "", h); sub(/"$/, "", h); on = (sub_ != "" && h == sub_); next }
	/^\.SH / { flush(); on = 0; next }
	!on { next }
	/^\.TP/ { flush(); want = 1; next }
	/^\./ { flush(); next }
	want { flag = clean($0); want = 0; next }
	flag != "" { text = text (text == "" ? "" : " ") clean($0) }
	END { flush() }' "$1"
}
help_flags() {
	# shellcheck disable=SC2086 # $1 is "state rm": two words
	tpuform $1 -help | awk '
	/^Options:/ { on = 1; next }
	/^$/ { on = 0 }
	on && /^  -/ {
		sub(/^  /, ""); n = split($0, w, " "); name = w[1]; i = 2
		if (name ~ /,$/) { name = name " " w[2]; i = 3 }
		text = $0; sub(/^[^ ]+(, [^ ]+)? +/, "", text)
		print name " | " text
	}'
}
tpuform help -commands | while IFS='	' read -r path _ _ kind; do
	[ "$kind" = group ] && continue
	top=${path%% *}
	sub=""
	[ "$top" = "$path" ] || sub=$path
	man_flags "gen/man1/tpuform-$top.1" "$sub" >man.txt
	help_flags "$path" >help.txt
	[ -s help.txt ] || echo "no flags read from '$path -help'" >>diff.txt
	diff help.txt man.txt >/dev/null || { echo "== $path"; diff help.txt man.txt; } >>diff.txt
done
is "every command's options in its man page are its -help's" "$(cat diff.txt 2>/dev/null)" ""
like "  (they include defaults and ranges)" "$(man_flags gen/man1/tpuform-plan.1 "")" \
	"^-parallelism=N \| concurrent node operations and worker probes \(1 to 256; default 10\)$"

# Every variable the product reads from its environment is in tpuform(1).
vars=$(cd "$TOP" && grep -rhoE '(getenv|tpf_env_[a-z]+|tpf_gcp_service_endpoint|env_list_has)\("[A-Z][A-Z0-9_]+"' \
	util model google config state source templates providers plan engine cmd --include='*.c' |
	sed 's/.*("//; s/"$//' | sort -u)
undocumented=""
for v in $vars; do
	grep -q "^\.B $v\$" gen/man1/tpuform.1 || undocumented="$undocumented $v"
done
is "every environment variable read is in tpuform(1) ENVIRONMENT" "$undocumented" ""
like "  (there are some)" "$vars" "TPUFORM_SSH_PROGRAM"
finish
