#!/bin/sh
# The emulator's Cloud Storage JSON API (tests/fakegcp/README.md, "Cloud
# Storage"), checked three ways:
#   1. curl: the edges a state backend depends on (401, 404, the four
#      preconditions with 412 conditionNotMet, generations as rising strings,
#      alt=media with x-goog-generation, list by prefix with paging, queued
#      429/503 faults in the request log, the body cap);
#   2. gcloud storage cp/ls/cat/rm (a real client) against it;
#   3. terraform 1.11 with backend "gcs": init, apply, a concurrent apply
#      refused on the lock (the lock object is created with
#      ifGenerationMatch=0), state list, force-unlock, destroy.
# gcloud and terraform are skipped (# SKIP) when not installed.
#
# Needs: curl, jq, cmp. Prints TAP.
# shellcheck disable=SC2016 # $vars in single quotes are for eval and jq

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TPF_ROOT=${TPF_ROOT:-$ROOT}
. "$ROOT/tests/e2e/fakegcp.sh"

echo "TAP version 13"
n=0
failed=0
T=$(mktemp -d "${TMPDIR:-/tmp}/t370.XXXXXX")
BG=
trap '[ -n "$BG" ] && kill "$BG" 2>/dev/null; fakegcp_stop >/dev/null 2>&1; rm -rf "$T"' EXIT

for tool in curl jq cmp; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "not ok 1 - $tool is installed (apt-get install $tool)"
		echo "1..1"
		exit 1
	fi
done

pass() { n=$((n + 1)); echo "ok $n - $1"; }
fail() {
	n=$((n + 1)); failed=$((failed + 1))
	echo "not ok $n - $1"
	[ -s "$T/body" ] && sed 's/^/#   /' "$T/body" | head -20
	[ -s "$T/out" ] && sed 's/^/#   | /' "$T/out" | tail -20
	return 0
}
skip() { n=$((n + 1)); echo "ok $n # SKIP $1"; }
check() { _d=$1; shift; if "$@"; then pass "$_d"; else fail "$_d"; fi; }
jqt() { jq -e "$@" "$T/body" >/dev/null 2>&1; }
# logt FILTER: true if FILTER holds on the request log (an array of entries).
logt() { jq -se "$1" "$T/requests.jsonl" >/dev/null 2>&1; }
# req METHOD PATH [curl args...]: body to $T/body, headers to $T/headers; prints the status.
req() {
	_m=$1; _p=$2; shift 2
	curl -s -o "$T/body" -D "$T/headers" -w '%{http_code}' -X "$_m" -H "Authorization: Bearer $TOK" \
		"$@" "$FAKEGCP_URL$_p"
}
hdr() { tr -d '\r' <"$T/headers" | awk -v h="$1" 'tolower($1) == tolower(h) ":" { print $2 }'; }
# put NAME DATA [QUERY]: media upload into bucket bk1; prints the status.
put() { req POST "/upload/storage/v1/b/bk1/o?uploadType=media&name=$1${3:+&$3}" --data-binary "$2"; }
is412() { [ "$1" = 412 ] && jqt '.error.code == 412 and .error.errors[0].reason == "conditionNotMet" and .error.errors[0].domain == "global" and .error.message == "At least one of the pre-conditions you specified did not hold."'; }

fakegcp_start --auth token --authorized-user cid:csec:rtok --bucket bk1 --bucket tfstate \
	--log "$T/requests.jsonl" || exit 1
TOK=$(curl -s -d grant_type=refresh_token -d client_id=cid -d client_secret=csec \
	-d refresh_token=rtok "$FAKEGCP_URL/token" | jq -r .access_token)
O=/storage/v1/b/bk1/o

# ---------------------------------------------------------------- 1. curl
st=$(curl -s -o "$T/body" -w '%{http_code}' "$FAKEGCP_URL$O")
check "no token: 401 Login Required (reason required, location Authorization)" \
	eval '[ "$st" = 401 ] && jqt ".error.errors[0].reason == \"required\" and .error.errors[0].location == \"Authorization\""'
st=$(curl -s -o "$T/body" -w '%{http_code}' -H 'Authorization: Bearer nope' "$FAKEGCP_URL$O")
check "a token not issued here: 401 Invalid Credentials (authError)" \
	eval '[ "$st" = 401 ] && jqt ".error.message == \"Invalid Credentials\" and .error.errors[0].reason == \"authError\""'

st=$(req GET /storage/v1/b/nosuch/o)
check "list in a missing bucket: 404 notFound" \
	eval '[ "$st" = 404 ] && jqt ".error.errors[0].reason == \"notFound\""'
st=$(req POST "/upload/storage/v1/b/nosuch/o?uploadType=media&name=x" --data-binary x)
check "upload into a missing bucket: 404" [ "$st" = 404 ]
st=$(req GET "$O/missing.json")
check "get a missing object: 404 No such object: bk1/missing.json" \
	eval '[ "$st" = 404 ] && jqt ".error.message == \"No such object: bk1/missing.json\""'

st=$(put 'fleet%2Fdev.lock' '{"ID":"one"}' ifGenerationMatch=0)
check "create with ifGenerationMatch=0: 200, the Object resource" \
	eval '[ "$st" = 200 ] && jqt ".kind == \"storage#object\" and .name == \"fleet/dev.lock\" and .bucket == \"bk1\" and .size == \"12\""'
check "generation and metageneration are int64 strings; metageneration 1" \
	jqt '(.generation | type == "string" and test("^[1-9][0-9]{15}$")) and .metageneration == "1"'
check "md5Hash and crc32c are base64 of the data's digests" \
	jqt '.md5Hash == "'"$(printf '{"ID":"one"}' | openssl md5 -binary | base64)"'" and (.crc32c | test("^[A-Za-z0-9+/]{6}==$"))'
G1=$(jq -r .generation "$T/body")
st=$(put 'fleet%2Fdev.lock' '{"ID":"two"}' ifGenerationMatch=0)
check "ifGenerationMatch=0 when the object exists: 412 conditionNotMet (the lock is held)" is412 "$st"

st=$(req GET "$O/fleet%2Fdev.lock?alt=media")
check "alt=media: the bytes, x-goog-generation = generation, x-goog-metageneration 1" \
	eval '[ "$st" = 200 ] && [ "$(cat "$T/body")" = "{\"ID\":\"one\"}" ] && [ "$(hdr x-goog-generation)" = "$G1" ] && [ "$(hdr x-goog-metageneration)" = 1 ]'
st=$(req GET "/download/storage/v1/b/bk1/o/fleet%2Fdev.lock?generation=$G1&alt=media")
check "/download/storage/v1 with ?generation= (gcloud's path): the bytes" \
	eval '[ "$st" = 200 ] && [ "$(cat "$T/body")" = "{\"ID\":\"one\"}" ]'

st=$(put 'state.json' 'v1')
G2=$(jq -r .generation "$T/body")
st=$(put 'state.json' 'v2' "ifGenerationMatch=$G2")
G3=$(jq -r .generation "$T/body")
check "compare-and-swap with the generation read: 200, a larger generation" \
	eval '[ "$st" = 200 ] && [ "$G3" -gt "$G2" ] && [ "$G2" -gt "$G1" ]'
st=$(put 'state.json' 'v3-lost-update' "ifGenerationMatch=$G2")
check "a write with a stale generation: 412, and the object keeps v2" \
	eval 'is412 "$st" && [ "$(req GET "$O/state.json?alt=media" >/dev/null; cat "$T/body")" = v2 ]'
st=$(put 'never.json' 'x' 'ifGenerationNotMatch=5')
check "ifGenerationNotMatch with no live object: 412" is412 "$st"
st=$(put 'never.json' 'x' 'ifMetagenerationMatch=1')
check "ifMetagenerationMatch with no live object: 412" is412 "$st"
st=$(put 'never.json' 'x' 'ifGenerationMatch=abc')
check "a precondition that is not an int64: 400 invalid" \
	eval '[ "$st" = 400 ] && jqt ".error.errors[0].reason == \"invalid\""'

st=$(req GET "$O/state.json?ifGenerationNotMatch=$G3")
check "GET with ifGenerationNotMatch = the generation: 304 Not Modified" [ "$st" = 304 ]
st=$(req GET "$O/state.json?ifGenerationMatch=$G2")
check "GET with a stale ifGenerationMatch: 412" is412 "$st"
st=$(req GET "$O/state.json?ifMetagenerationMatch=2")
check "GET with ifMetagenerationMatch=2 on metageneration 1: 412" is412 "$st"
curl -s -X POST "$FAKEGCP_URL/__admin/storage:touch?bucket=bk1&object=state.json" >/dev/null
st=$(req GET "$O/state.json?ifMetagenerationMatch=2")
check "after a metadata change (admin touch): metageneration 2, same generation" \
	eval '[ "$st" = 200 ] && jqt ".metageneration == \"2\" and .generation == \"$G3\""'
st=$(req DELETE "$O/state.json?ifMetagenerationNotMatch=2")
check "DELETE with ifMetagenerationNotMatch = the metageneration: 412" is412 "$st"
st=$(req DELETE "$O/state.json?ifGenerationMatch=$G2")
check "DELETE with a stale generation: 412" is412 "$st"
st=$(req DELETE "$O/state.json?ifGenerationMatch=$G3")
check "DELETE with the live generation: 204" [ "$st" = 204 ]
st=$(req GET "$O/state.json")
check "deleted: 404" [ "$st" = 404 ]
st=$(req GET "$O/fleet%2Fdev.lock?generation=$G2")
check "?generation= of a generation that is not live: 404 (no versioning)" [ "$st" = 404 ]

head -c 3000 /dev/urandom >"$T/bin"
st=$(req POST "/upload/storage/v1/b/bk1/o?uploadType=media&name=blob.bin" \
	-H 'Content-Type: application/octet-stream' --data-binary "@$T/bin")
req GET "$O/blob.bin?alt=media" >/dev/null
check "binary data (NULs included) comes back byte for byte" cmp -s "$T/bin" "$T/body"

# multipart: JSON metadata, then the media (RFC 2387), as gcloud and terraform send it
printf -- '--b0\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n{"name":"mp.txt","contentType":"text/plain","metadata":{"who":"t370"}}\r\n--b0\r\nContent-Type: text/plain\r\n\r\nmultipart body\r\n--b0--\r\n' >"$T/mp"
st=$(req POST "/upload/storage/v1/b/bk1/o?uploadType=multipart&ifGenerationMatch=0" \
	-H "Content-Type: multipart/related; boundary=b0" --data-binary "@$T/mp")
check "multipart upload: name, contentType and metadata from the first part" \
	eval '[ "$st" = 200 ] && jqt ".name == \"mp.txt\" and .contentType == \"text/plain\" and .metadata == {\"who\":\"t370\"} and .size == \"14\""'
sed 's/"mp.txt"/"mp2.txt","md5Hash":"AAAAAAAAAAAAAAAAAAAAAA=="/' "$T/mp" >"$T/mp2"
st=$(req POST "/upload/storage/v1/b/bk1/o?uploadType=multipart" \
	-H "Content-Type: multipart/related; boundary=b0" --data-binary "@$T/mp2")
check "multipart with an md5Hash that does not match the data: 400, nothing stored" \
	eval '[ "$st" = 400 ] && [ "$(req GET "$O/mp2.txt")" = 404 ]'
st=$(req POST "/storage/v1/b/bk1/o?name=x" -d '{}')
check "insert without /upload/: 400 wrongUrlForUpload" \
	eval '[ "$st" = 400 ] && jqt ".error.errors[0].reason == \"wrongUrlForUpload\""'
head -c $((4 * 1024 * 1024 + 1)) /dev/zero >"$T/big"
st=$(req POST "/upload/storage/v1/b/bk1/o?uploadType=media&name=big" --data-binary "@$T/big")
check "a body over 4 MiB: 413, not stored" eval '[ "$st" = 413 ] && [ "$(req GET "$O/big")" = 404 ]'

for i in 1 2 3 4 5; do put "p%2Fo$i" "$i" >/dev/null; done
put 'q%2Fother' x >/dev/null
tok=; pages=0; : >"$T/names"
while :; do
	req GET "$O?prefix=p%2F&maxResults=2${tok:+&pageToken=$tok}" >/dev/null
	pages=$((pages + 1))
	jq -r '.items[]?.name' "$T/body" >>"$T/names"
	tok=$(jq -r '.nextPageToken // empty' "$T/body")
	[ -z "$tok" ] || [ "$pages" -gt 10 ] && break
done
check "list prefix=p/ maxResults=2: 5 objects in 3 pages, in name order, nothing else" \
	eval '[ "$pages" = 3 ] && [ "$(tr "\n" " " <"$T/names")" = "p/o1 p/o2 p/o3 p/o4 p/o5 " ]'
req GET "$O?delimiter=%2F" >/dev/null
check "list with delimiter=/: prefixes fleet/ p/ q/ and the top-level items" \
	jqt '.prefixes == ["fleet/","p/","q/"] and ([.items[].name] == ["blob.bin","mp.txt"])'
req GET "$O?prefix=zzz" >/dev/null
check "an empty list is {kind} alone (no items key)" jqt '. == {"kind":"storage#objects"}'

curl -s -X POST "$FAKEGCP_URL/__admin/storage:fail?code=429&count=1&method=GET&match=p/o1" >/dev/null
curl -s -X POST "$FAKEGCP_URL/__admin/storage:fail?code=503&count=1&method=POST" >/dev/null
st=$(req GET "$O/p%2Fo1?alt=media")
check "queued fault: 429 rateLimitExceeded with Retry-After on the matching request" \
	eval '[ "$st" = 429 ] && jqt ".error.errors[0].reason == \"rateLimitExceeded\"" && [ "$(hdr retry-after)" = 1 ]'
st=$(put 'p%2Fo9' 9)
check "queued fault: 503 backendError on the next POST" \
	eval '[ "$st" = 503 ] && jqt ".error.code == 503"'
st=$(req GET "$O/p%2Fo1?alt=media")
check "each queued fault is spent once: the retry succeeds" [ "$st" = 200 ]
check "the request log holds storage requests, their query and the faults" \
	logt '(map(select(.path == "/storage/v1/b/bk1/o/p/o1" and .fault == "queued" and .status == 429)) | length) == 1 and (map(select(.path == "/upload/storage/v1/b/bk1/o" and (.query | test("ifGenerationMatch=0")) and .status == 412)) | length) >= 1'

# ---------------------------------------------------------------- 2. gcloud
export CLOUDSDK_CONFIG="$T/gcloud" CLOUDSDK_AUTH_ACCESS_TOKEN="$TOK" \
	CLOUDSDK_CORE_PROJECT=test-project CLOUDSDK_CORE_DISABLE_PROMPTS=1 \
	CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE="$FAKEGCP_URL/storage/v1/"
if command -v gcloud >/dev/null 2>&1; then
	printf 'from gcloud\n' >"$T/g.txt"
	gcloud storage cp "$T/g.txt" gs://bk1/g/one.txt >"$T/out" 2>&1
	check "gcloud storage cp uploads (multipart; it checks md5Hash/crc32c in the answer)" \
		eval '[ "$(req GET "$O/g%2Fone.txt?alt=media" >/dev/null; cat "$T/body")" = "from gcloud" ]'
	gcloud storage ls gs://bk1/g/ >"$T/out" 2>&1
	check "gcloud storage ls lists it" grep -qx 'gs://bk1/g/one.txt' "$T/out"
	gcloud storage ls gs://bk1/ >"$T/out" 2>&1
	check "gcloud storage ls of the bucket shows the prefixes" \
		eval 'grep -qx "gs://bk1/g/" "$T/out" && grep -qx "gs://bk1/p/" "$T/out"'
	gcloud storage cat gs://bk1/g/one.txt >"$T/out" 2>&1
	check "gcloud storage cat reads it back" [ "$(cat "$T/out")" = "from gcloud" ]
	gcloud storage rm gs://bk1/g/one.txt >"$T/out" 2>&1
	check "gcloud storage rm deletes it" [ "$(req GET "$O/g%2Fone.txt")" = 404 ]
	gcloud storage cat gs://bk1/g/one.txt >"$T/out" 2>&1
	rc=$?
	check "gcloud storage cat of the deleted object fails, naming it" \
		eval '[ "$rc" -ne 0 ] && grep -q "one.txt" "$T/out"'
else
	for i in 1 2 3 4 5 6; do skip "gcloud is not installed"; done
fi

# ---------------------------------------------------------------- 3. terraform
if command -v terraform >/dev/null 2>&1; then
	mkdir -p "$T/tf" && : >"$T/tf/terraformrc"
	export TF_CLI_CONFIG_FILE="$T/tf/terraformrc" TF_IN_AUTOMATION=1 CHECKPOINT_DISABLE=1 \
		TF_DATA_DIR="$T/tf/.terraform"
	cat >"$T/tf/main.tf" <<EOF
terraform {
  backend "gcs" {
    bucket                  = "tfstate"
    prefix                  = "fleet/dev"
    storage_custom_endpoint = "$FAKEGCP_URL/storage/v1/"
    access_token            = "$TOK"
  }
}
variable "round" {
  type    = string
  default = "1"
}
variable "hold" {
  type    = string
  default = "0"
}
resource "terraform_data" "x" {
  triggers_replace = var.round
  provisioner "local-exec" {
    command = "sleep \${var.hold}"
  }
}
EOF
	tf() { (cd "$T/tf" && terraform "$@" -no-color) >"$T/out" 2>&1; }
	check "terraform init with backend gcs on the emulator" tf init -input=false
	check "terraform apply: state written to the bucket" \
		eval 'tf apply -auto-approve -input=false && [ "$(req GET /storage/v1/b/tfstate/o/fleet%2Fdev%2Fdefault.tfstate)" = 200 ]'
	check "the lock was taken with ifGenerationMatch=0 and released (deleted by generation)" \
		logt 'any(.path == "/upload/storage/v1/b/tfstate/o" and (.query | test("name=fleet%2Fdev%2Fdefault.tflock")) and (.query | test("ifGenerationMatch=0")) and .status == 200) and any(.method == "DELETE" and .path == "/storage/v1/b/tfstate/o/fleet/dev/default.tflock" and (.query | test("ifGenerationMatch=[0-9]+")) and .status == 204)'

	(cd "$T/tf" && terraform apply -auto-approve -input=false -no-color -var round=2 -var hold=4) \
		>"$T/bg.out" 2>&1 &
	BG=$!
	i=0
	until req GET /storage/v1/b/tfstate/o/fleet%2Fdev%2Fdefault.tflock >/dev/null && jqt .generation; do
		i=$((i + 1)); [ $i -gt 100 ] && break; sleep 0.1
	done
	tf apply -auto-approve -input=false -var round=3 -lock-timeout=1s
	rc=$?
	check "a second apply while the first holds the lock fails (exit 1)" [ "$rc" = 1 ]
	check "... with Terraform's lock error, the 412, and the holder's lock info" \
		eval 'grep -q "Error acquiring the state lock" "$T/out" && grep -q "412" "$T/out" && grep -q "Operation: *OperationTypeApply" "$T/out"'
	wait "$BG"
	rc=$?
	BG=
	check "the first apply completes and releases the lock" \
		eval '[ "$rc" = 0 ] && [ "$(req GET /storage/v1/b/tfstate/o/fleet%2Fdev%2Fdefault.tflock)" = 404 ]'
	check "terraform state list reads the state from the bucket (XML API read)" \
		eval 'tf state list && grep -qx "terraform_data.x" "$T/out"'

	# A stale lock, as a killed run leaves it; force-unlock removes it.
	printf '{"ID":"11111111-2222-3333-4444-555555555555","Operation":"OperationTypeApply","Who":"ci@runner","Version":"1.11.4","Created":"2025-01-01T00:00:00Z","Path":"gs://tfstate/fleet/dev/default.tflock"}' >"$T/lock"
	st=$(req POST "/upload/storage/v1/b/tfstate/o?uploadType=media&name=fleet%2Fdev%2Fdefault.tflock&ifGenerationMatch=0" --data-binary "@$T/lock")
	# shellcheck disable=SC2034 # read by the evals below
	LG=$(jq -r .generation "$T/body")
	tf plan -input=false -lock-timeout=0s
	# Terraform's gcs backend shows the lock object's generation as the lock ID
	# (whatever "ID" the JSON holds), and force-unlock takes that number.
	check "a stale lock object blocks plan; Terraform's lock ID is the object's generation" \
		eval '[ "$st" = 200 ] && grep -Eq "ID: +$LG\$" "$T/out" && grep -q "Who: *ci@runner" "$T/out"'
	check "terraform force-unlock -force GENERATION deletes it" \
		eval 'tf force-unlock -force "$LG" && [ "$(req GET /storage/v1/b/tfstate/o/fleet%2Fdev%2Fdefault.tflock)" = 404 ]'
	check "terraform destroy: the state in the bucket has no resources left" \
		eval 'tf destroy -auto-approve -input=false && req GET "/storage/v1/b/tfstate/o/fleet%2Fdev%2Fdefault.tfstate?alt=media" >/dev/null && jqt ".resources == []"'
else
	for i in 1 2 3 4 5 6 7 8 9 10; do skip "terraform is not installed"; done
fi

check "SIGTERM: the emulator exits 0 with no sanitizer report" fakegcp_stop
echo "1..$n"
[ "$failed" -eq 0 ]
