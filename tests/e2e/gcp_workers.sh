# shellcheck shell=sh
# The setting of the gcp end-to-end tests: the Cloud TPU API emulator
# (fakegcp.sh) handing out the addresses of real sshd workers (sshd.sh).
# Source after lib.sh and setup_dir, then:
#
#   gcp_workers_start N BASE_IP [fakegcp options...]
#       Starts N sshd workers from BASE_IP and the emulator, whose nodes'
#       networkEndpoints point at them. The workers' authorized_keys start
#       empty: the emulator's guest agent (--worker-dir) fills them from the
#       nodes' ssh-keys metadata (or OS Login), so a key tpuform did not send
#       is a key the worker refuses. Their host keys are the guest attributes. On a machine that cannot run sshd
#       workers (not root, no sshd, no unshare) it prints a TAP skip and
#       exits 0; if either fails to start, a failed check and exits 1.
#       Everything stops on exit, plus GCP_WORKERS_CLEANUP (commands) if set.
#       The client is pointed at the emulator with a ready token; quick
#       polling and retries; TPUFORM_SSH_RETRY defaults to 2.
#       GCP_WORKERS_METADATA=1: each worker's sessions get
#       TPUFORM_METADATA_URL, its own metadata server in the emulator
#       (tests/fakegcp/fg_guest_md.c), from ~/.ssh/environment (sshd.sh
#       permits that one variable); the bootstrap watches it for notices.
#   gcp_worker_notice IP KEY VALUE
#       Sets KEY (instance/preempted, instance/maintenance-event) on the
#       metadata server of the worker at IP.
TPF_ROOT=$TOP
. "$TOP/tests/e2e/fakegcp.sh"
. "$TOP/tests/e2e/sshd.sh"

gcp_workers_start() {
	_gw_n=$1
	_gw_base=$2
	shift 2
	trap 'fakegcp_stop >/dev/null 2>&1; sshd_stop; '"${GCP_WORKERS_CLEANUP:-:}" EXIT
	unset GOOGLE_APPLICATION_CREDENTIALS CLOUDSDK_CONFIG GCE_METADATA_HOST SSH_AUTH_SOCK
	export TPUFORM_ACCESS_TOKEN="${TPUFORM_ACCESS_TOKEN:-test}"
	export TPUFORM_GCP_POLL_MIN=0.05 TPUFORM_GCP_POLL_MAX=0.2 TPUFORM_GCP_RETRY_BASE=0.05
	export TPUFORM_SSH_RETRY="${TPUFORM_SSH_RETRY:-2}"
	SSHD_NO_KEYS=1
	sshd_start "$W/workers" "$_gw_n" "$_gw_base"
	_gw_rc=$?
	if [ "$_gw_rc" -eq 2 ]; then
		echo "# SKIP: this machine cannot run the sshd workers (needs root, sshd, unshare)"
		echo "1..0"
		exit 0
	fi
	if [ "$_gw_rc" -ne 0 ]; then
		echo "not ok 1 - sshd workers start"
		echo "1..1"
		exit 1
	fi
	sshd_watch $$
	if ! fakegcp_start --worker-ip-base "$_gw_base" --worker-port "$SSHD_PORT" \
		--worker-dir "$SSHD_DIR" "$@"; then
		echo "not ok 1 - the emulator starts"
		echo "1..1"
		exit 1
	fi
	[ "${GCP_WORKERS_METADATA:-}" = 1 ] || return 0
	_gw_i=0
	while [ "$_gw_i" -lt "$_gw_n" ]; do
		echo "TPUFORM_METADATA_URL=$FAKEGCP_URL/__worker/$(sshd_addr "$_gw_i")/computeMetadata/v1" \
			>"$SSHD_DIR/w$_gw_i/home/.ssh/environment"
		_gw_i=$((_gw_i + 1))
	done
}

gcp_worker_notice() {
	curl -s -f -X POST "$FAKEGCP_URL/__admin/guest-metadata?worker=$1&key=$2&value=$3" >/dev/null
}
