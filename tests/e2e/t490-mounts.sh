#!/bin/sh
# Cloud Storage for data and checkpoints (docs/storage.md): `mounts` and
# `checkpoint_dir`.
#  - local provider: gs:// URLs are directories under the provider root;
#    the job reads a file put in the mapped bucket directory (mode: mount,
#    a link; mode: copy, a copy) and writes into TPUFORM_CHECKPOINT_DIR; a
#    changed mount re-provisions the workers and restarts the job.
#  - gcp with sshd workers: a fake gcsfuse and a fake gcloud on the
#    workers' PATH record their arguments; the exact gcsfuse flags, the
#    mount point, the rsync of copy mode, TPUFORM_CHECKPOINT_DIR as the
#    job saw it, and a failed mount's own error.
. "$(dirname "$0")/lib.sh"
setup_dir t490

# ---- local -----------------------------------------------------------------
mkdir -p nodes/gcs/my-data/sets nodes/gcs/my-data/models
echo "hello from the bucket" >nodes/gcs/my-data/sets/hello.txt
echo "weights v1" >nodes/gcs/my-data/models/w.bin
# shellcheck disable=SC2016 # expanded by the job, on the worker
job='echo "ckpt=$TPUFORM_CHECKPOINT_DIR root=$TPUFORM_MOUNT_ROOT" >"$TPUFORM_CHECKPOINT_DIR/env-$TPUFORM_WORKER_ID"; cat "$TPUFORM_MOUNT_ROOT/data/hello.txt" "$TPUFORM_MOUNT_ROOT/models/w.bin" >"$TPUFORM_CHECKPOINT_DIR/seen-$TPUFORM_WORKER_ID"; echo start >>"$TPUFORM_CHECKPOINT_DIR/starts-$TPUFORM_WORKER_ID"; exec sleep 3000'
write_local() {
	cat >fleet.yaml <<YAML
fleet: mt
provider:
  local: { root: nodes, create_delay: 0.1s }
checkpoint_dir: gs://my-ckpt/run1/
mounts:
  - { path: /data, bucket: gs://my-data/sets$1 }
  - { path: /models, bucket: "gs://my-data/models", mode: copy, read_only: true }
run: '$job'
groups:
  - { name: a, accelerator_type: v4-16, runtime_version: tpu-ubuntu2204-base, zones: [z1], count: 1 }
YAML
}
write_local ""
ok "validate" tpuform validate -f fleet.yaml
ok "apply" tpuform apply -f fleet.yaml -auto-approve
home0=nodes/nodes/mt-a-0/workers/0
ok "the job wrote into the checkpoint directory" wait_for 30 test -s nodes/gcs/my-ckpt/run1/seen-1
is "TPUFORM_CHECKPOINT_DIR is the bucket's directory under the provider root" \
	"$(cat nodes/gcs/my-ckpt/run1/env-0)" "ckpt=$W/nodes/gcs/my-ckpt/run1 root=$W/$home0/mnt"
# exec's command sees what the job sees (the bootstrap's env verb).
# shellcheck disable=SC2016 # expanded on the worker, not here
ok "exec" tpuform exec -f fleet.yaml mt-a-0 -worker 0 -- 'echo "ckpt=$TPUFORM_CHECKPOINT_DIR root=$TPUFORM_MOUNT_ROOT"'
like "exec sees TPUFORM_CHECKPOINT_DIR and TPUFORM_MOUNT_ROOT as the job does" "$(cat last.out)" \
	"mt-a-0/w0 \| ckpt=$W/nodes/gcs/my-ckpt/run1 root=$W/$home0/mnt"
is "the job read the mounted and the copied file" "$(cat nodes/gcs/my-ckpt/run1/seen-0)" \
	"hello from the bucket
weights v1"
is "mode: mount is a link to the bucket's directory" "$(readlink "$home0/mnt/data")" "$W/nodes/gcs/my-data/sets"
ok "mode: copy is a copy" test -f "$home0/mnt/models/w.bin" -a ! -L "$home0/mnt/models"
is "read_only: copied files are not writable by anyone" "$(stat -c %A "$home0/mnt/models/w.bin" | cut -c3,6,9)" "---"
ok "plan: no changes" tpuform plan -f fleet.yaml -detailed-exitcode
write_local /v2
fails "a changed mount is a change" 2 tpuform plan -f fleet.yaml -detailed-exitcode
like "the plan says the job will be restarted" "$(cat "$W/last.out")" \
	"bootstrap script changed: re-provision workers \(the running job will be restarted\)"
mkdir -p nodes/gcs/my-data/sets/v2
echo "hello v2" >nodes/gcs/my-data/sets/v2/hello.txt
ok "apply the new mount" tpuform apply -f fleet.yaml -auto-approve
# shellcheck disable=SC2016 # expanded by that sh
ok "the job started again" wait_for 30 sh -c '[ "$(wc -l <nodes/gcs/my-ckpt/run1/starts-0)" -ge 2 ]'
ok "and read the new prefix" wait_for 30 grep -q "hello v2" nodes/gcs/my-ckpt/run1/seen-0
ok "destroy" tpuform destroy -f fleet.yaml -auto-approve
ok "checkpoints outlive the nodes" test -s nodes/gcs/my-ckpt/run1/seen-0

# ---- gcp with sshd workers -------------------------------------------------
if [ "$(id -u)" != 0 ] || [ ! -x /usr/sbin/sshd ]; then
	echo "# SKIP gcp part: sshd workers need root and /usr/sbin/sshd"
	finish
fi
cleanup_screens
. "$TOP/tests/e2e/gcp_workers.sh"
gcp_workers_start 2 127.0.190.1 --op-seconds 0.1
cp "$SSHD_KEY" "$W/key"
chmod 600 "$W/key"
mkdir -p "$W/fakebin" "$W/gcs/my-data/sets" "$W/gcs/my-data/models"
echo "hello over fuse" >"$W/gcs/my-data/sets/hello.txt"
echo "weights by rsync" >"$W/gcs/my-data/models/w.bin"
# gcsfuse FLAGS... BUCKET MOUNT_POINT: records its arguments in the
# worker's home, then plays the mount with a bind mount of the bucket's
# --only-dir (in the worker VM's own mount namespace: tests/e2e/sshd.sh),
# which the bootstrap's unmount really unmounts; bucket "no-such-bucket"
# fails as gcsfuse does.
cat >"$W/fakebin/gcsfuse" <<EOF
#!/bin/sh
printf '%s\n' "\$*" >>"\$HOME/gcsfuse.args"
only=
while [ \$# -gt 2 ]; do
	[ "\$1" = --only-dir ] && only=\$2
	shift
done
if [ "\$1" = no-such-bucket ]; then
	echo "Error while mounting gcsfuse: bucket \"no-such-bucket\" does not exist" >&2
	exit 1
fi
[ -d "\$2" ] || { echo "mount point \$2 is missing" >&2; exit 1; }
mount --bind "$W/gcs/\$1/\$only" "\$2"
EOF
# gcloud storage rsync --recursive gs://B/P DIR
cat >"$W/fakebin/gcloud" <<EOF
#!/bin/sh
printf '%s\n' "\$*" >>"\$HOME/gcloud.args"
[ "\$1 \$2 \$3" = "storage rsync --recursive" ] || exit 2
src=\${4#gs://}
cp -R "$W/gcs/\$src/." "\$5/"
EOF
chmod +x "$W/fakebin/gcsfuse" "$W/fakebin/gcloud"
all="  - { path: /root/all, bucket: gs://my-data }"
# shellcheck disable=SC2016 # awk's field, not the shell's
mounted() { sshd_in "$1" awk '{ print $2 }' /proc/mounts | grep '^/root/' | sort | tr '\n' ' '; }
write_gcp() {
	cat >gcp.yaml <<YAML
fleet: mg
state: { path: gcp.state.json }
provider:
  gcp: { project: test-project, endpoint: "$FAKEGCP_URL" }
ssh: { user: root, private_key: "$W/key", port: $SSHD_PORT }
checkpoint_dir: gs://my-ckpt/run1
env: { PATH: "$W/fakebin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" }
mounts:
  - { path: /root/data, bucket: gs://$1/sets, read_only: true }
  - { path: /root/models, bucket: gs://my-data/models, mode: copy }
$2
run: 'echo "ckpt=\$TPUFORM_CHECKPOINT_DIR root=[\$TPUFORM_MOUNT_ROOT]" >~/job.env; cat /root/data/hello.txt /root/models/w.bin >~/job.seen; exec sleep 3000'
groups:
  - { name: a, accelerator_type: v4-16, runtime_version: tpu-ubuntu2204-base, zones: [z1], count: 1 }
YAML
}
write_gcp my-data "$all"
ok "gcp: apply" tpuform apply -f gcp.yaml -auto-approve
h0=$(sshd_home 0)
h1=$(sshd_home 1)
ok "gcp: the job ran on both workers" wait_for 30 test -s "$h1/job.seen" -a -s "$h0/job.seen"
is "gcp: gcsfuse's exact flags, bucket and mount point, in the fleet file's order" "$(cat "$h0/gcsfuse.args")" \
	"--implicit-dirs --uid 0 --gid 0 --file-mode 664 --dir-mode 775 --only-dir sets -o ro my-data /root/data
--implicit-dirs --uid 0 --gid 0 --file-mode 664 --dir-mode 775 my-data /root/all"
is "gcp: worker 1 mounted too" "$(wc -l <"$h1/gcsfuse.args" | tr -d ' ')" 2
is "gcp: copy mode is gcloud storage rsync of the prefix" "$(cat "$h0/gcloud.args")" \
	"storage rsync --recursive gs://my-data/models /root/models"
is "gcp: the job saw TPUFORM_CHECKPOINT_DIR as the gs:// URL" "$(cat "$h0/job.env")" \
	"ckpt=gs://my-ckpt/run1 root=[]"
is "gcp: and read the mounted and the copied file" "$(cat "$h0/job.seen")" "hello over fuse
weights by rsync"
like "gcp: the worker's log names each mount" "$(cat "$h0/tpuform/logs/mount.log")" \
	'^\$ gcsfuse --implicit-dirs .* my-data /root/all$'
ok "gcp: gcsfuse on PATH: nothing installed" test ! -e "$h0/tpuform/logs/gcsfuse-install.log"
ok "gcp: plan: no changes" tpuform plan -f gcp.yaml -detailed-exitcode
is "gcp: both FUSE mounts are there on each worker" "$(mounted 0)|$(mounted 1)" \
	"/root/all /root/data |/root/all /root/data "

# A mount that fails fails the start, with gcsfuse's own message.
write_gcp no-such-bucket "$all"
fails "gcp: apply with a bucket gcsfuse cannot mount fails" 1 tpuform apply -f gcp.yaml -auto-approve
out=$(cat "$W/last.out")
like "gcp: the failure names the mount" "$out" "mounting gs://no-such-bucket/sets at /root/data failed \(exit status 1\)"
like "gcp: with gcsfuse's own error" "$out" 'bucket "no-such-bucket" does not exist'
write_gcp my-data "$all"
is "gcp: a failed start leaves no mount behind" "$(mounted 0)" ""
ok "gcp: apply with the mount fixed" tpuform apply -f gcp.yaml -auto-approve
is "gcp: mounted again" "$(mounted 0)" "/root/all /root/data "
write_gcp my-data ""
ok "gcp: apply without the /root/all mount" tpuform apply -f gcp.yaml -auto-approve
is "gcp: the mount the fleet file no longer names is unmounted" "$(mounted 0)|$(mounted 1)" \
	"/root/data |/root/data "
# install_gcsfuse: false on a worker without gcsfuse: no install (it would
# change this machine's apt sources), a clear failure instead.
sed -e "s|$W/fakebin:||" -e 's/^checkpoint_dir:/install_gcsfuse: false\ncheckpoint_dir:/' gcp.yaml >nofuse.yaml
mv nofuse.yaml gcp.yaml
fails "gcp: no gcsfuse and install_gcsfuse: false fails the start" 1 tpuform apply -f gcp.yaml -auto-approve
like "gcp: saying so" "$(cat "$W/last.out")" "'gcsfuse' not found on the worker and install_gcsfuse is false"
ok "gcp: and installed nothing" test ! -e "$h0/tpuform/logs/gcsfuse-install.log"
ok "gcp: destroy" tpuform destroy -f gcp.yaml -auto-approve
finish
