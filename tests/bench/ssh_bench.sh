#!/bin/sh
# Benchmark: provision 64 TPU workers over SSH on loopback, with tpuform
# and with Ansible doing the same work (copy the per-worker bootstrap
# script and env file, run it), against the same kind of sshd workers
# (tests/e2e/sshd.sh: one OpenSSH daemon per worker, own host key, private
# home). Prints wall times and the ratio; never fails on a time.
#
#   sh tests/bench/ssh_bench.sh [WORKERS] [PARALLELISMS]
#   (default 64 workers, a multiple of 4, and "64 8 10"; issue 13's scale
#   figure: sh tests/bench/ssh_bench.sh 256 64. BENCH_NO_INSTALL=1: do not
#   install ansible-core when it is missing.) tpuform's own CPU is its
#   rusage (GNU time), per worker.
#   smallest (make bench-smoke): BENCH_NO_INSTALL=1 sh tests/bench/ssh_bench.sh 4 4
#
# tpuform: the Cloud TPU API emulator hands out the workers' addresses;
# the fleet is WORKERS/4 v4-32 nodes (4 workers each). Timed: `tpuform apply`
# from nothing to every session running (node creation in the emulator
# takes milliseconds), then a re-provision of every worker (a changed run
# command: refresh, probe of each worker, upload, restart), each at
# -parallelism 64 and 8 to compare concurrency. Ansible (Debian's
# ansible-core; installed with apt-get when missing and root): forks=WORKERS,
# gather_facts off, host keys checked against a known_hosts file, the
# default ssh settings (ControlPersist), tasks file (mkdir), copy (env
# file), copy (script), shell (start); once with pipelining off (the
# default) and once on. Ansible gets the very scripts tpuform rendered.
# Every contender starts on fresh workers with no session running.
#
# Figures (2026-11, Debian 12, 2 cores, 64 workers; other engineers' tests
# shared the machine, so take the spread as noise; OpenSSH 9.2, libssh2
# 1.10, ansible-core 2.14.18; each worker a VM of its own namespaces):
#   tpuform apply, -parallelism=64     2.6-3.5 s, typically 3.0 s
#                                      (re-provision of every worker: 5.3 s)
#   tpuform apply, -parallelism=8      2.7-3.1 s   (re-provision: 5.4 s)
#   tpuform apply, -parallelism=10     3.3 s       (re-provision: 5.6 s)
#   ansible-playbook, forks=64         57-74 s
#   ansible-playbook, pipelining       43-55 s
#   ratio ansible/tpuform              19-24x (pipelining: 15-18x)
# Where the time goes: the machine is CPU-bound on the workers' side.
# tpuform itself used 0.3 s of CPU for 64 workers, the 64 emulated VMs
# (sshd, sftp-server, the bootstrap script, screen) about 5 s; the 64
# bootstrap `start`s alone, run without SSH, take 2.0 s; 64 plain
# `ssh host true` with OpenSSH's client take 3.6 s. So -parallelism 8 and
# 64 are alike, and an event loop multiplexing non-blocking sessions
# would not beat threads here: with one VM per worker (a real pod) the
# worker-side cost runs in parallel. A re-provision also probes every
# worker first (one more connection each), and the bootstrap `restart`
# stops the running job.
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
N=${1:-64}
PARS=${2:-64 8 10} # -parallelism values, one fresh round each
NODES=$((N / 4))
BASE=127.0.50.1
TPUFORM=${TPUFORM_BIN:-$TOP/tpuform} # TPUFORM_BIN: e.g. a perf wrapper
TPF_ROOT=$TOP
. "$TOP/tests/e2e/sshd.sh"
. "$TOP/tests/e2e/fakegcp.sh"
. "$TOP/tests/bench/lib.sh"
export NO_COLOR=1 TPUFORM_ACCESS_TOKEN=test TPUFORM_GCP_POLL_MIN=0.02 TPUFORM_GCP_POLL_MAX=0.1
unset SSH_AUTH_SOCK GOOGLE_APPLICATION_CREDENTIALS
FAKEGCP_PID=
B=$(mktemp -d "${TMPDIR:-/tmp}/tpf-bench.XXXXXX")
# Ansible's ControlPersist masters (ssh -O exit below; the reap is for an
# exit in the middle) and the workers' VMs.
trap 'fakegcp_stop >/dev/null 2>&1; sshd_stop; bench_reap "$B"; cd /; [ -n "${BENCH_KEEP:-}" ] || rm -rf "$B"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

now() { date +%s.%N; }
secs() { echo "$1 $2" | awk '{ printf "%.2f", $2 - $1 }'; }

# Fresh workers: every contender starts with no session and no files.
fresh_workers() {
	sshd_stop
	rm -rf "$B/w"
	sshd_start "$B/w" "$N" "$BASE" >/dev/null
	case $? in
	0) ;;
	2) echo "ssh_bench: needs root, sshd and unshare: skipped"; exit 0 ;;
	*) echo "ssh_bench: FAILED: cannot start $N sshd workers" >&2; exit 1 ;;
	esac
	sshd_watch $$
}

tpuform_round() { # PARALLELISM
	fresh_workers
	fakegcp_stop >/dev/null 2>&1
	fakegcp_start --worker-ip-base "$BASE" --worker-port "$SSHD_PORT" --worker-dir "$SSHD_DIR" --op-seconds 0 || exit 1
	rm -rf "$B/t" && mkdir -p "$B/t"
	cat >"$B/t/fleet.yaml" <<YAML
fleet: bench
provider:
  gcp: { project: test-project, endpoint: "http://127.0.0.1:$FAKEGCP_PORT" }
ssh: { user: root, private_key: "$SSHD_KEY", port: $SSHD_PORT }
env: { MODEL: bench }
secrets: { TOKEN: "\${BENCH_TOKEN}" }
run: exec sleep 600
groups:
  - { name: a, accelerator_type: v4-32, runtime_version: tpu-ubuntu2204-base, zones: [z1], count: $NODES }
YAML
	export BENCH_TOKEN=s3cret
	t0=$(now)
	/usr/bin/time -q -f '%U %S' -o "$B/t/cpu" \
		"$TPUFORM" apply -f "$B/t/fleet.yaml" -auto-approve -parallelism="$1" >"$B/t/apply.out" 2>&1
	rc=$?
	t1=$(now)
	# tpuform's own CPU (getrusage of the process, as GNU time reports it)
	T_MS=$(awk -v n="$N" '{ printf "%.1f", 1000 * ($1 + $2) / n }' "$B/t/cpu")
	T_CPU=$(awk -v n="$N" '{ printf "%.2f s CPU = %.1f ms per worker", $1 + $2, 1000 * ($1 + $2) / n }' "$B/t/cpu")
	changed=$(grep -c '^changed: ' "$B/t/apply.out")
	if [ "$rc" -ne 0 ] || [ "$changed" -ne "$N" ]; then
		echo "ssh_bench: tpuform apply failed (exit $rc, $changed of $N workers changed):" >&2
		tail -n 20 "$B/t/apply.out" >&2
		exit 1
	fi
	sed -i 's/exec sleep 600/exec sleep 601/' "$B/t/fleet.yaml"
	t2=$(now)
	"$TPUFORM" apply -f "$B/t/fleet.yaml" -auto-approve -parallelism="$1" >"$B/t/apply2.out" 2>&1
	rc=$?
	t3=$(now)
	changed=$(grep -c '^changed: ' "$B/t/apply2.out")
	if [ "$rc" -ne 0 ] || [ "$changed" -ne "$N" ]; then
		echo "ssh_bench: tpuform re-provision failed (exit $rc, $changed of $N changed)" >&2
		tail -n 20 "$B/t/apply2.out" >&2
		exit 1
	fi
	T_FIRST=$(secs "$t0" "$t1")
	T_AGAIN=$(secs "$t2" "$t3")
}

# What Ansible will upload: the scripts tpuform rendered (first run's
# content; same size and work).
keep_scripts() {
	rm -rf "$B/files" && mkdir -p "$B/files"
	i=0
	while [ "$i" -lt "$N" ]; do
		cp "$SSHD_DIR/w$i/home/tpuform/bootstrap.sh" "$B/files/w$i.sh"
		cp "$SSHD_DIR/w$i/home/tpuform/secrets.env" "$B/files/w$i.env"
		i=$((i + 1))
	done
}

ansible_round() { # PIPELINING(True|False)
	fresh_workers
	A=$B/a
	rm -rf "$A" && mkdir -p "$A/cp"
	sshd_known_hosts "$A/known_hosts"
	{
		echo "[workers]"
		i=0
		while [ "$i" -lt "$N" ]; do
			echo "w$i ansible_host=$(sshd_addr "$i") ansible_port=$SSHD_PORT"
			i=$((i + 1))
		done
		echo "[workers:vars]"
		echo "ansible_user=root"
		echo "ansible_ssh_private_key_file=$SSHD_KEY"
		echo "ansible_python_interpreter=/usr/bin/python3"
	} >"$A/inventory"
	cat >"$A/ansible.cfg" <<CFG
[defaults]
forks = $N
host_key_checking = True
retry_files_enabled = False
interpreter_python = /usr/bin/python3
local_tmp = $A/tmp
[ssh_connection]
ssh_args = -C -o ControlMaster=auto -o ControlPersist=60s -o UserKnownHostsFile=$A/known_hosts
control_path_dir = $A/cp
pipelining = $1
CFG
	cat >"$A/play.yml" <<PLAY
- hosts: workers
  gather_facts: false
  tasks:
    - name: tpuform directory
      file: { path: /root/tpuform, state: directory, mode: "0700" }
    - name: env file
      copy: { src: "$B/files/{{ inventory_hostname }}.env", dest: /root/tpuform/secrets.env, mode: "0600" }
    - name: bootstrap script
      copy: { src: "$B/files/{{ inventory_hostname }}.sh", dest: /root/tpuform/bootstrap.sh, mode: "0700" }
    - name: start the session
      shell: sh tpuform/bootstrap.sh start
      args: { chdir: /root }
      register: r
      failed_when: "'TPUFORM result=started' not in r.stdout"
PLAY
	t0=$(now)
	ANSIBLE_CONFIG=$A/ansible.cfg HOME=$A ansible-playbook -i "$A/inventory" "$A/play.yml" >"$A/out" 2>&1
	rc=$?
	t1=$(now)
	if [ "$rc" -ne 0 ]; then
		echo "ssh_bench: ansible-playbook failed (exit $rc):" >&2
		tail -n 30 "$A/out" >&2
		exit 1
	fi
	started=$(cat "$SSHD_DIR"/w*/home/tpuform/run/script.sha256 2>/dev/null | wc -l)
	[ "$started" -eq "$N" ] || { echo "ssh_bench: ansible started $started of $N sessions" >&2; exit 1; }
	T_ANSIBLE=$(secs "$t0" "$t1")
	# ControlPersist masters stay behind for 60 s: stop them now.
	for s in "$A"/cp/*; do
		[ -S "$s" ] && ssh -o ControlPath="$s" -O exit x >/dev/null 2>&1
	done
}

if ! command -v ansible-playbook >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && [ "${BENCH_NO_INSTALL:-}" != 1 ]; then
		echo "ssh_bench: installing Debian's ansible-core" >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ansible-core >/dev/null 2>&1
	fi
fi
[ -x "$TPUFORM" ] || { echo "ssh_bench: build ./tpuform first (make)" >&2; exit 1; }

echo "# ssh_bench: $N workers ($NODES v4-32 nodes) on loopback, $(nproc) cores"
TP64=
for par in $PARS; do
	tpuform_round "$par"
	if [ -z "$TP64" ]; then
		keep_scripts
		TP64=$T_FIRST
	fi
	echo "tpuform apply, -parallelism=$par: ${T_FIRST} s wall, tpuform ${T_CPU}   (re-provision of every worker: ${T_AGAIN} s)   [aim: <= 5 ms CPU per worker: $(bench_aim "$T_MS" '<=' 5)]"
done

if command -v ansible-playbook >/dev/null 2>&1; then
	ansible_round False
	AN=$T_ANSIBLE
	echo "ansible-playbook, forks=$N:              ${AN} s   ($(ansible-playbook --version | head -n 1))"
	ansible_round True
	echo "ansible-playbook, forks=$N, pipelining:  ${T_ANSIBLE} s"
	echo "$AN $T_ANSIBLE $TP64" | awk '{ printf "ratio ansible/tpuform: %.1fx (pipelining: %.1fx)\n", $1 / $3, $2 / $3 }'
else
	echo "ansible-playbook: not installed (apt-get install ansible-core); no comparison"
fi
