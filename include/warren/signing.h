/*
 * Signed messages (docs/security.md, "Signed messages"): HMAC-SHA256 over a message's type, id
 * and body, keyed by a secret of message_queue.signing_key_file, with the key's id and the
 * signature in the headers warren-key-id and warren-signature. The MessageClient signs every
 * publish while keys are set; consumers check what they read with sign_check. The keys are
 * process-wide, set once at start before any client publishes or consumer reads.
 */
#ifndef WARREN_SIGNING_H
#define WARREN_SIGNING_H

#include <stdbool.h>
#include <stddef.h>
#include "warren/common.h"
#include "warren/mq.h"

/* The dead-letter reason of a message refused for its signature. */
#define SIGN_REASON "bad_signature"
#define SIGN_HEADER_KEY_ID "warren-key-id"
#define SIGN_HEADER_SIGNATURE "warren-signature"
#define SIGN_KEY_ID_MAX 64 /* [A-Za-z0-9._-] */
#define SIGN_SECRET_MIN 32 /* bytes of a secret, at least */
#define SIGN_HEX_LEN 64    /* a signature: the HMAC-SHA256 in lower-case hex */

typedef struct sign_keys sign_keys_t;

/*
 * Read a key file: one key per line, "KEY_ID SECRET" (a secret of at least SIGN_SECRET_MIN
 * bytes, no blanks), # comments and blank lines skipped; the first key signs, every key
 * verifies, so a rotation adds the new key beside the old one first. Refused when the file is
 * group- or world-readable or holds no key. The caller frees it with sign_free(); NULL with err.
 */
sign_keys_t *sign_load(const char *path, char *err, size_t errlen);
void sign_free(sign_keys_t *k);
size_t sign_key_count(const sign_keys_t *k);
/* The id of the key that signs (the file's first). */
const char *sign_key_id(const sign_keys_t *k);

/* Load path (NULL or "": signing off) and sign and check with its keys from now on; the keys
 * live until sign_teardown(). 0, or -1 with err. */
int sign_setup(const char *path, char *err, size_t errlen) WARN_UNUSED;
void sign_teardown(void);

/* Sign and check with k from now on; NULL: publishes go unsigned and every check passes.
 * borrowed: k must outlive every client and consumer of the process. */
void sign_set(const sign_keys_t *k);
/* The keys set (NULL: signing is off). */
const sign_keys_t *sign_active(void);

/* The signature of a message (type and message_id may be NULL, read as "") with k's first key:
 * its id into key_id, the hex HMAC into sig. 0, or -1 when out of memory. */
int sign_compute(const sign_keys_t *k, const char *type, const char *message_id, const void *body,
                 size_t len, char key_id[SIGN_KEY_ID_MAX + 1],
                 char sig[SIGN_HEX_LEN + 1]) WARN_UNUSED;
/* 0 when sig is the signature of the message under k's key key_id; -1 with the reason in err
 * (no signature, an unknown key id, a signature that does not match). Compared in constant
 * time. */
int sign_verify(const sign_keys_t *k, const char *type, const char *message_id, const void *body,
                size_t len, const char *key_id, const char *sig, char *err,
                size_t errlen) WARN_UNUSED;
/* A delivery against the keys set: 0 when signing is off or it verifies; -1 with the reason in
 * err. An oversized delivery (only its prefix was read) cannot verify. */
int sign_check(const mq_delivery_t *d, char *err, size_t errlen) WARN_UNUSED;

#endif
