#!/bin/sh
# TLS verification cannot be turned off (docs/security.md "Security"): tpuform
# speaks https to every Google endpoint and webhook, and plain http only to
# loopback hosts (an emulator, a local receiver). With every knob a user
# might reach for set (TPUFORM_INSECURE, CURL_INSECURE, GIT_SSL_NO_VERIFY,
# a ~/.curlrc saying "insecure", gcloud's auth/disable_ssl_validation),
#   - an https server with a self-signed certificate (openssl s_server) is
#     refused, with an error that says it is a certificate problem, as the
#     TPU API endpoint (fleet file and TPUFORM_TPU_ENDPOINT), as a service
#     account's token_uri, as an external account's STS token_url, as the
#     IAM Credentials endpoint for impersonation, and as a webhook;
#   - plain http to a host that is not loopback is refused for the TPU API,
#     OS Login, STS, token_uri and webhook URLs before anything is sent.
. "$(dirname "$0")/lib.sh"
setup_dir t610
if ! command -v openssl >/dev/null 2>&1; then
	echo "ok 1 # SKIP openssl is not installed"
	echo "1..1"
	exit 0
fi
openssl req -x509 -newkey rsa:2048 -nodes -keyout key.pem -out cert.pem -days 1 \
	-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1
# A free port: s_server fails at once on a taken one, then try another.
spid=""
for try in 1 2 3 4 5 6 7 8; do
	port=$((20000 + ($$ * 7 + try * 997) % 40000))
	openssl s_server -accept "127.0.0.1:$port" -cert cert.pem -key key.pem -www -quiet \
		>s_server.log 2>&1 &
	spid=$!
	sleep 0.3
	kill -0 "$spid" 2>/dev/null && break
	spid=""
done
if [ -z "$spid" ]; then
	echo "not ok 1 - openssl s_server starts"
	echo "1..1"
	exit 1
fi
trap 'kill $spid 2>/dev/null' EXIT
TLS="https://127.0.0.1:$port"
ok "the server answers (curl with its certificate trusted)" curl -sf --cacert cert.pem "$TLS/" -o /dev/null

# Every knob that might be read to turn verification off.
mkdir -p home gcloud
printf 'insecure\n' >home/.curlrc
printf '[auth]\ndisable_ssl_validation = True\n' >gcloud/properties
export HOME="$W/home" CLOUDSDK_CONFIG="$W/gcloud" TPUFORM_INSECURE=1 TPUFORM_SKIP_TLS_VERIFY=1 \
	CURL_INSECURE=1 CURL_SSL_NO_VERIFY=1 GIT_SSL_NO_VERIFY=true PYTHONHTTPSVERIFY=0 \
	NODE_TLS_REJECT_UNAUTHORIZED=0
unset GOOGLE_APPLICATION_CREDENTIALS GCE_METADATA_HOST TPUFORM_TPU_ENDPOINT
export TPUFORM_GCP_RETRY_BASE=0.05 TPUFORM_GCP_POLL_MIN=0.05 TPUFORM_GCP_POLL_MAX=0.2

fleet() { # fleet FILE ENDPOINT-LINE [CREDENTIALS]
	cat >"$1" <<YAML
fleet: tls
provider:
  gcp: { project: p$2${3:+, credentials: $3} }
run: "true"
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 1 }
YAML
}
cert_error() { # the last command's output names the certificate problem
	like "with a certificate error" "$(cat last.out)" 'SSL certificate problem: self.signed certificate'
}

export TPUFORM_ACCESS_TOKEN=test
fleet tpu.yaml ", endpoint: \"$TLS\""
fails "the TPU endpoint with a self-signed certificate is refused" 1 tpuform plan -f tpu.yaml
cert_error
fleet env.yaml ""
TPUFORM_TPU_ENDPOINT=$TLS
export TPUFORM_TPU_ENDPOINT
fails "TPUFORM_TPU_ENDPOINT with a self-signed certificate is refused" 1 tpuform plan -f env.yaml
cert_error
unset TPUFORM_ACCESS_TOKEN

# Credentials whose token endpoints are the self-signed server.
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out sa.pem 2>/dev/null
pk=$(awk '{ printf "%s\\n", $0 }' sa.pem)
cat >sa.json <<JSON
{"type":"service_account","project_id":"p","private_key_id":"k1","private_key":"$pk",
 "client_email":"sa@p.iam.gserviceaccount.com","token_uri":"$TLS/token"}
JSON
chmod 600 sa.json
fleet sa.yaml "" sa.json
fails "a token_uri with a self-signed certificate is refused" 1 tpuform plan -f sa.yaml
cert_error
printf 'subject-token' >subject.txt
cat >ext.json <<JSON
{"type":"external_account","audience":"//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/q",
 "subject_token_type":"urn:ietf:params:oauth:token-type:jwt","token_url":"$TLS/v1/token",
 "credential_source":{"file":"$W/subject.txt"}}
JSON
chmod 600 ext.json
fleet ext.yaml "" ext.json
fails "an STS token_url with a self-signed certificate is refused" 1 tpuform plan -f ext.yaml
cert_error
export TPUFORM_ACCESS_TOKEN=test TPUFORM_IMPERSONATE_SERVICE_ACCOUNT=sa@p.iam.gserviceaccount.com
export TPUFORM_IAMCREDENTIALS_ENDPOINT="$TLS" TPUFORM_TPU_ENDPOINT=http://127.0.0.1:9
fails "an IAM Credentials endpoint with a self-signed certificate is refused" 1 tpuform plan -f env.yaml
cert_error
unset TPUFORM_ACCESS_TOKEN TPUFORM_IMPERSONATE_SERVICE_ACCOUNT TPUFORM_IAMCREDENTIALS_ENDPOINT

# Plain http to hosts that are not loopback: refused before sending.
export TPUFORM_ACCESS_TOKEN=test
TPUFORM_TPU_ENDPOINT=http://192.0.2.1
fails "TPUFORM_TPU_ENDPOINT over http to a non-loopback host is refused" 1 tpuform plan -f env.yaml
like "naming the rule" "$(cat last.out)" "http is allowed only to loopback hosts"
TPUFORM_TPU_ENDPOINT=http://127.0.0.1:9
sed 's|"token_uri":"[^"]*"|"token_uri":"http://oauth2.googleapis.com/token"|' sa.json >sa-http.json
chmod 600 sa-http.json
fleet sa-http.yaml "" sa-http.json
unset TPUFORM_ACCESS_TOKEN
fails "a token_uri over http to a non-loopback host is refused" 1 tpuform plan -f sa-http.yaml
like "naming the rule" "$(cat last.out)" "http is allowed only to loopback hosts"
sed "s|$TLS/v1/token|http://sts.googleapis.com/v1/token|" ext.json >ext-http.json
chmod 600 ext-http.json
fleet ext-http.yaml "" ext-http.json
fails "an STS token_url over http to a non-loopback host is refused" 1 tpuform plan -f ext-http.yaml
like "saying tokens must not travel in clear text" "$(cat last.out)" "clear text"

# Webhooks: http only to loopback; https verified.
cat >hook.yaml <<YAML
fleet: hk
provider:
  local: { root: nodes, create_delay: 0.1s }
state: { path: hook.state.json }
notify: { webhook: "http://192.0.2.1/hook" }
groups:
  - { name: a, accelerator_type: v2-8, runtime_version: rt, zones: [z1], count: 1 }
run: echo done
YAML
fails "a webhook over http to a non-loopback host is refused" 1 tpuform validate -f hook.yaml
like "naming the host" "$(cat last.out)" "got an http URL to '192.0.2.1'"
sed "s|http://192.0.2.1/hook|$TLS/hook|" hook.yaml >hook-tls.yaml
TPUFORM_NOTIFY_BACKOFF=0.2s "$TPUFORM" watch -f hook-tls.yaml -interval 0.3s -session-check 0.3s >watch.out 2>&1 &
wpid=$!
wait_for 30 grep -q '^.*notify:' watch.out
kill -TERM $wpid
wait $wpid
like "a webhook with a self-signed certificate is given up: a certificate error" \
	"$(grep 'notify:' watch.out)" 'SSL certificate problem: self.signed certificate'
"$TPUFORM" destroy -f hook-tls.yaml -auto-approve >/dev/null 2>&1

# No product code sets a verification option at all (libcurl verifies by
# default; libgit2 does unless a certificate_check callback says otherwise).
cd "$TOP" || exit 1
knobs=$(grep -rnE 'CURLOPT_(PROXY_)?SSL_VERIFY(PEER|HOST|STATUS)|CURLOPT_SSL_OPTIONS|certificate_check|GIT_OPT_SET_SSL_CERT' \
	--include='*.c' --include='*.h' util model google config state source plan providers engine cmd templates)
is "no code touches TLS verification settings" "$knobs" ""
finish
