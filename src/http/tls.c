/* HTTPS for the HTTP server: a server TLS context from PEM files, and the accept side of it. */
#include <stdio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <event2/bufferevent_ssl.h>
#include "http/http_internal.h"

/* The first error of OpenSSL's queue, as text, and the queue emptied. */
static void ssl_why(char *buf, size_t len)
{
    unsigned long e = ERR_get_error();
    if (e)
        ERR_error_string_n(e, buf, len);
    else
        snprintf(buf, len, "unknown error");
    ERR_clear_error();
}

http_tls_t *http_tls_new(const http_tls_files_t *f, char *err, size_t errlen)
{
    char why[256];
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        ssl_why(why, sizeof why);
        snprintf(err, errlen, "cannot make a TLS context: %s", why);
        return NULL;
    }
    (void)SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    /* No session tickets or cache: each connection does a full handshake, and nothing that
     * outlives a certificate reload is kept. */
    SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION);
    (void)SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    const char *key = NULL, *file = NULL;
    if (SSL_CTX_use_certificate_chain_file(ctx, f->cert_file) != 1) {
        key = f->cert_key;
        file = f->cert_file;
    } else if (SSL_CTX_use_PrivateKey_file(ctx, f->key_file, SSL_FILETYPE_PEM) != 1 ||
               SSL_CTX_check_private_key(ctx) != 1) { /* unreadable, or not the certificate's */
        key = f->key_key;
        file = f->key_file;
    } else if (f->client_ca_file && *f->client_ca_file) {
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(f->client_ca_file);
        if (!names || SSL_CTX_load_verify_locations(ctx, f->client_ca_file, NULL) != 1) {
            if (names)
                sk_X509_NAME_pop_free(names, X509_NAME_free);
            key = f->client_ca_key;
            file = f->client_ca_file;
        } else {
            SSL_CTX_set_client_CA_list(ctx, names); /* takes names */
            SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
        }
    }
    if (key) {
        ssl_why(why, sizeof why);
        snprintf(err, errlen, "%s %s: %s", key, file, why);
        SSL_CTX_free(ctx);
        return NULL;
    }
    return (http_tls_t *)ctx;
}

void http_tls_free(http_tls_t *t)
{
    SSL_CTX_free((SSL_CTX *)t); /* connections hold references of their own */
}

struct bufferevent *http_tls_accept(struct event_base *base, http_tls_t *t)
{
    SSL *ssl = SSL_new((SSL_CTX *)t);
    if (!ssl)
        return NULL;
    struct bufferevent *bev = bufferevent_openssl_socket_new(
        base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
    if (!bev) {
        SSL_free(ssl);
        return NULL;
    }
    /* A client that closes without close_notify (most do) ends its connection, not an error. */
    bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    return bev;
}
