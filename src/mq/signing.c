/* Signed messages: the key file, HMAC-SHA256 of a message's type, id and body, the check. */
#include <ctype.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "warren/signing.h"

/* Part of what is signed, so a signature of another scheme or version never verifies here. */
#define SIGN_SCHEME "warren-hmac-sha256-v1"
#define SIGN_KEYS_MAX 8

struct sign_keys {
    size_t n;
    struct {
        char id[SIGN_KEY_ID_MAX + 1];
        char *secret; /* owned */
        size_t len;
    } key[SIGN_KEYS_MAX];
};

static const sign_keys_t *active; /* set once at start; read-only afterwards */

void sign_free(sign_keys_t *k)
{
    if (!k)
        return;
    for (size_t i = 0; i < k->n; i++) {
        OPENSSL_cleanse(k->key[i].secret, k->key[i].len);
        free(k->key[i].secret);
    }
    free(k);
}

size_t sign_key_count(const sign_keys_t *k)
{
    return k ? k->n : 0;
}

const char *sign_key_id(const sign_keys_t *k)
{
    return k && k->n ? k->key[0].id : "";
}

void sign_set(const sign_keys_t *k)
{
    active = k && k->n ? k : NULL;
}

const sign_keys_t *sign_active(void)
{
    return active;
}

static sign_keys_t *loaded; /* sign_setup's, owned */

int sign_setup(const char *path, char *err, size_t errlen)
{
    sign_teardown();
    if (!path || !*path)
        return 0;
    if (!(loaded = sign_load(path, err, errlen)))
        return -1;
    sign_set(loaded);
    return 0;
}

void sign_teardown(void)
{
    sign_set(NULL);
    sign_free(loaded);
    loaded = NULL;
}

static bool id_valid(const char *id, size_t len)
{
    if (len == 0 || len > SIGN_KEY_ID_MAX)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!isalnum((unsigned char)id[i]) && !strchr("._-", id[i]))
            return false;
    return true;
}

/* One "KEY_ID SECRET" line into k; -1 with why. */
static int add_line(sign_keys_t *k, char *line, const char **why)
{
    char *id = strtok(line, " \t"), *secret = strtok(NULL, " \t"), *rest = strtok(NULL, " \t");
    if (!id || !secret || rest)
        return *why = "is not \"KEY_ID SECRET\"", -1;
    if (!id_valid(id, strlen(id)))
        return *why = "has a key id that is not 1 to 64 of [A-Za-z0-9._-]", -1;
    if (strlen(secret) < SIGN_SECRET_MIN)
        return *why = "has a secret shorter than 32 bytes", -1;
    for (size_t i = 0; i < k->n; i++)
        if (!strcmp(k->key[i].id, id))
            return *why = "repeats a key id", -1;
    if (k->n == SIGN_KEYS_MAX)
        return *why = "is past the 8 keys a file may hold", -1;
    snprintf(k->key[k->n].id, sizeof k->key[k->n].id, "%s", id);
    if (!(k->key[k->n].secret = strdup(secret)))
        return *why = "cannot be held: out of memory", -1;
    k->key[k->n++].len = strlen(secret);
    return 0;
}

static int read_keys(sign_keys_t *k, FILE *f, const char *path, char *err, size_t errlen)
{
    char line[1024];
    for (int no = 1; fgets(line, sizeof line, f); no++) {
        line[strcspn(line, "\r\n")] = '\0';
        const char *p = line + strspn(line, " \t"), *why = NULL;
        if (!*p || *p == '#')
            continue;
        if (add_line(k, line, &why) != 0) {
            snprintf(err, errlen, "message_queue.signing_key_file %s: line %d %s", path, no, why);
            OPENSSL_cleanse(line, sizeof line);
            return -1;
        }
    }
    OPENSSL_cleanse(line, sizeof line);
    if (k->n == 0)
        return snprintf(err, errlen, "message_queue.signing_key_file %s: no key", path), -1;
    return 0;
}

sign_keys_t *sign_load(const char *path, char *err, size_t errlen)
{
    struct stat st;
    FILE *f = fopen(path, "r");
    if (!f || fstat(fileno(f), &st) != 0) {
        snprintf(err, errlen, "message_queue.signing_key_file %s: cannot read: %s", path,
                 strerror(errno));
        if (f)
            (void)fclose(f);
        return NULL;
    }
    if (!S_ISREG(st.st_mode) || (st.st_mode & (S_IRWXG | S_IRWXO))) {
        snprintf(err, errlen, "message_queue.signing_key_file %s %s", path,
                 !S_ISREG(st.st_mode) ? "is not a regular file"
                                      : "is readable or writable by group or others: chmod 600");
        (void)fclose(f);
        return NULL;
    }
    sign_keys_t *k = calloc(1, sizeof *k);
    if (!k)
        snprintf(err, errlen, "out of memory");
    if (k && read_keys(k, f, path, err, errlen) != 0) {
        sign_free(k);
        k = NULL;
    }
    (void)fclose(f);
    return k;
}

/* HMAC-SHA256 of SCHEME \n key_id \n type \n message_id \n body with key i, in hex. */
static int mac_hex(const sign_keys_t *k, size_t i, const char *type, const char *message_id,
                   const void *body, size_t len, char out[SIGN_HEX_LEN + 1])
{
    char head[1024]; /* type and message id are AMQP short strings: 255 bytes each at most */
    int hn = snprintf(head, sizeof head, "%s\n%s\n%s\n%s\n", SIGN_SCHEME, k->key[i].id,
                      type ? type : "", message_id ? message_id : "");
    if (hn < 0 || (size_t)hn >= sizeof head)
        return -1;
    unsigned char mac[EVP_MAX_MD_SIZE];
    size_t maclen = 0;
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                           OSSL_PARAM_construct_end()};
    EVP_MAC *hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    EVP_MAC_CTX *ctx = hmac ? EVP_MAC_CTX_new(hmac) : NULL;
    int ok = ctx &&
             EVP_MAC_init(ctx, (const unsigned char *)k->key[i].secret, k->key[i].len, params) &&
             EVP_MAC_update(ctx, (const unsigned char *)head, (size_t)hn) &&
             EVP_MAC_update(ctx, body ? body : (const void *)"", len) &&
             EVP_MAC_final(ctx, mac, &maclen, sizeof mac) && maclen * 2 == SIGN_HEX_LEN;
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(hmac);
    for (size_t b = 0; ok && b < maclen; b++)
        snprintf(out + 2 * b, 3, "%02x", mac[b]);
    return ok ? 0 : -1;
}

int sign_compute(const sign_keys_t *k, const char *type, const char *message_id, const void *body,
                 size_t len, char key_id[SIGN_KEY_ID_MAX + 1], char sig[SIGN_HEX_LEN + 1])
{
    if (!k || k->n == 0 || mac_hex(k, 0, type, message_id, body, len, sig) != 0)
        return -1;
    snprintf(key_id, SIGN_KEY_ID_MAX + 1, "%s", k->key[0].id);
    return 0;
}

int sign_verify(const sign_keys_t *k, const char *type, const char *message_id, const void *body,
                size_t len, const char *key_id, const char *sig, char *err, size_t errlen)
{
    if (!key_id || !sig)
        return snprintf(err, errlen, "unsigned: no %s header",
                        key_id ? SIGN_HEADER_SIGNATURE : SIGN_HEADER_KEY_ID),
               -1;
    size_t i = 0;
    while (k && i < k->n && strcmp(k->key[i].id, key_id))
        i++;
    if (!k || i == k->n)
        return snprintf(err, errlen, "signed with key '%.64s', which this process does not hold",
                        key_id),
               -1;
    char want[SIGN_HEX_LEN + 1];
    if (mac_hex(k, i, type, message_id, body, len, want) != 0)
        return snprintf(err, errlen, "cannot compute the signature: out of memory"), -1;
    if (strlen(sig) != SIGN_HEX_LEN || CRYPTO_memcmp(want, sig, SIGN_HEX_LEN) != 0)
        return snprintf(err, errlen, "the signature (key '%s') does not match the message", key_id),
               -1;
    return 0;
}

int sign_check(const mq_delivery_t *d, char *err, size_t errlen)
{
    if (!active)
        return 0;
    if (d->oversized)
        return snprintf(err, errlen, "only the body's first bytes were read: cannot verify"), -1;
    char *key_id = mq_header_string(&d->headers, SIGN_HEADER_KEY_ID);
    char *sig = mq_header_string(&d->headers, SIGN_HEADER_SIGNATURE);
    int rc = sign_verify(active, d->type, d->message_id, d->body, d->body_len, key_id, sig, err,
                         errlen);
    free(key_id);
    free(sig);
    return rc;
}
