/*
 * The one secret redaction (docs/security.md): every occurrence of a secret
 * value of TPF_REDACT_MIN bytes or more becomes "***", and the bytes that
 * held the text before are wiped (OPENSSL_cleanse) before they are freed.
 * Used for provisioning errors and last log lines (engine/workers/provision.c),
 * webhook payloads (engine/telemetry/notify_payload.c) and the token endpoints' error
 * messages (google/gcp_auth_oauth.c).
 */
#ifndef TPF_REDACT_H
#define TPF_REDACT_H

#include "util/buf.h"
#include "util/kv.h"

/* Secret values shorter than this are left alone: hiding every "1" or "ab"
 * would garble the text. */
#define TPF_REDACT_MIN 4

/* Replace every occurrence of secret in b by "***". When b changes, its old
 * bytes are wiped, then freed. A NULL or short secret does nothing. */
void tpf_redact(struct tpf_buf *b, const char *secret);
/* tpf_redact for each value of secrets (NULL ok). */
void tpf_redact_kv(struct tpf_buf *b, const struct tpf_kvlist *secrets);
/* Wipe the len bytes at p (OPENSSL_cleanse: not optimised away). NULL ok. */
void tpf_wipe(void *p, size_t len);

#endif
