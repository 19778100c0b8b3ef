/* MessageClient TLS for amqps://: checks of the settings, rabbitmq-c's SSL socket, its errors. */
#include <amqp.h>
#include <amqp_ssl_socket.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "mq/mq_internal.h"

#define KEY_PREFIX "message_queue.rabbitmq.tls."

static bool set(const char *s)
{
    return s && *s;
}

/* A file OpenSSL is about to read: open it ourselves first, so a missing or unreadable file
 * gets its errno rather than OpenSSL's "SSL error". With `encrypted`, also tell whether it holds
 * an encrypted PEM key ("BEGIN ENCRYPTED PRIVATE KEY", or "Proc-Type: 4,ENCRYPTED"). */
static int check_file(const char *key, const char *path, bool *encrypted, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    struct stat st;
    if (!f || fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, KEY_PREFIX "%s '%s': %s", key, path,
                 f ? "not a regular file" : strerror(errno));
        if (f)
            (void)fclose(f);
        return -1;
    }
    if (encrypted) {
        char line[256];
        *encrypted = false;
        while (!*encrypted && fgets(line, sizeof line, f))
            *encrypted = strstr(line, "ENCRYPTED") != NULL;
        explicit_bzero(line, sizeof line); /* a piece of a private key */
    }
    (void)fclose(f);
    return 0;
}

int mq_tls_check(const mq_tls_t *t, char *err, size_t errlen)
{
    if (t->verify_peer && !set(t->ca_file)) {
        snprintf(err, errlen,
                 KEY_PREFIX "ca_file is empty: verify_peer needs the CA certificates the "
                            "broker's certificate is signed by");
        return -1;
    }
    if (set(t->cert_file) != set(t->key_file)) {
        snprintf(err, errlen,
                 KEY_PREFIX "%s is set but " KEY_PREFIX "%s is empty: a client certificate "
                            "goes with its private key",
                 set(t->cert_file) ? "cert_file" : "key_file",
                 set(t->cert_file) ? "key_file" : "cert_file");
        return -1;
    }
    if (t->verify_peer && check_file("ca_file", t->ca_file, NULL, err, errlen) != 0)
        return -1;
    if (!set(t->cert_file))
        return 0;
    bool encrypted = false;
    if (check_file("cert_file", t->cert_file, NULL, err, errlen) != 0 ||
        check_file("key_file", t->key_file, &encrypted, err, errlen) != 0)
        return -1;
    if (encrypted) {
        snprintf(err, errlen,
                 KEY_PREFIX "key_file '%s' is encrypted: rabbitmq-c cannot ask for its "
                            "passphrase; give it the key unencrypted (openssl pkey -in KEY -out "
                            "PLAIN), readable by this user only",
                 t->key_file);
        return -1;
    }
    return 0;
}

amqp_socket_t *mq_tls_socket(amqp_connection_state_t conn, const mq_tls_t *t, char *err,
                             size_t errlen)
{
    if (mq_tls_check(t, err, errlen) != 0)
        return NULL;
    /* Owned by conn from here on: amqp_destroy_connection() frees it, also after an error. */
    amqp_socket_t *s = amqp_ssl_socket_new(conn);
    if (!s) {
        snprintf(err, errlen, "cannot create a TLS socket (OpenSSL did not initialise)");
        return NULL;
    }
    amqp_ssl_socket_set_verify_peer(s, t->verify_peer);
    amqp_ssl_socket_set_verify_hostname(s, t->verify_hostname);
    /* OpenSSL would prompt on the terminal for the passphrase of an encrypted key: an empty
     * one makes such a key fail instead (mq_tls_check refuses the common forms earlier). */
    amqp_ssl_socket_set_key_passwd(s, "");
    if (amqp_ssl_socket_set_ssl_versions(s, AMQP_TLSv1_2, AMQP_TLSvLATEST) != AMQP_STATUS_OK) {
        snprintf(err, errlen, "this OpenSSL cannot do TLS 1.2");
        return NULL;
    }
    if (t->verify_peer && amqp_ssl_socket_set_cacert(s, t->ca_file) != AMQP_STATUS_OK) {
        snprintf(err, errlen, KEY_PREFIX "ca_file '%s' holds no PEM certificate", t->ca_file);
        return NULL;
    }
    if (set(t->cert_file) &&
        amqp_ssl_socket_set_key(s, t->cert_file, t->key_file) != AMQP_STATUS_OK) {
        snprintf(err, errlen,
                 KEY_PREFIX "cert_file '%s' and key_file '%s' cannot be used: not PEM, or the "
                            "key does not belong to the certificate",
                 t->cert_file, t->key_file);
        return NULL;
    }
    return s;
}

void mq_tls_describe(int status, const char *host, int port, const mq_tls_t *t, char *buf,
                     size_t len)
{
    switch (status) {
    case AMQP_STATUS_SSL_PEER_VERIFY_FAILED:
        snprintf(buf, len,
                 "TLS: the certificate of %s:%d is not trusted: it does not verify against "
                 "the CAs in " KEY_PREFIX "ca_file '%s' (another CA, expired or not yet valid)",
                 host, port, t->ca_file);
        return;
    case AMQP_STATUS_SSL_HOSTNAME_VERIFY_FAILED:
        snprintf(buf, len,
                 "TLS: the certificate of %s:%d does not name the host '%s' (" KEY_PREFIX
                 "verify_hostname): connect by a DNS name it lists; rabbitmq-c matches no IP "
                 "addresses",
                 host, port, host);
        return;
    case AMQP_STATUS_SSL_CONNECTION_FAILED:
        snprintf(buf, len,
                 "TLS handshake with %s:%d failed: not a TLS port, no protocol version or cipher "
                 "in common, or the broker refused the client certificate",
                 host, port);
        return;
    case AMQP_STATUS_TIMEOUT:
        snprintf(buf, len,
                 "connect %s:%d: no TLS session within message_queue.rabbitmq.connect_timeout_ms",
                 host, port);
        return;
    case AMQP_STATUS_SSL_ERROR: /* after the handshake: TLS 1.3 checks client certificates then */
        snprintf(buf, len,
                 "TLS session with %s:%d failed: the broker ended it; it may refuse the client "
                 "certificate (" KEY_PREFIX "cert_file '%s')",
                 host, port, t->cert_file ? t->cert_file : "");
        return;
    default: snprintf(buf, len, "connect %s:%d (TLS): %s", host, port, amqp_error_string2(status));
    }
}
