# shellcheck shell=sh
# Samples every process's command line on this machine, for the security
# tests (t6xx-security*.sh): a secret must never be in any argv, which every
# local user can read in /proc/PID/cmdline (proc(5)).
#
#   argv_sample_start FILE   start sampling into FILE (background)
#   argv_sample_stop         stop; sets ARGV_SAMPLES to the rounds taken
#
# Each round appends "#sample" and then every argument of every process, one
# a line (NULs as newlines), as one `cat` of /proc/[0-9]*/cmdline saw them.
# The sampler itself holds no secret in its own argv; grep FILE afterwards,
# not while sampling (grep's own argv would hold the pattern).
argv_sample_start() {
	_as_file=$1
	: >"$_as_file"
	rm -f "$_as_file.stop"
	(
		while [ ! -e "$_as_file.stop" ]; do
			echo "#sample"
			cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' '\n'
			sleep 0.02
		done
	) >>"$_as_file" 2>/dev/null &
	_as_pid=$!
}

argv_sample_stop() {
	: >"$_as_file.stop"
	wait "$_as_pid" 2>/dev/null
	rm -f "$_as_file.stop"
	# shellcheck disable=SC2034 # read by the test that sources this file
	ARGV_SAMPLES=$(grep -c '^#sample$' "$_as_file")
}
