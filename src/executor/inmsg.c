/* Incoming messages: envelope decoding and the reason a message cannot be used. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include "executor/inmsg.h"

int inmsg_open(inmsg_t *m, const mq_delivery_t *d)
{
    char err[ERRBUF_SIZE];
    m->d = d;
    if (d->oversized) { /* only its first bytes were read: nothing in it can be used */
        mq_oversized_text(d, err, sizeof err);
        return inmsg_reject(m, "oversized", "%s", err);
    }
    if (envelope_decode(d->body, d->body_len, &m->env, err, sizeof err) != 0)
        return inmsg_reject(m, "parse_error", "%s", err);
    m->env_ok = true;
    return 0;
}

int inmsg_reject(inmsg_t *m, const char *reason, const char *fmt, ...)
{
    snprintf(m->reason, sizeof m->reason, "%s", reason);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->error, sizeof m->error, fmt, ap);
    va_end(ap);
    return -1;
}

void inmsg_close(inmsg_t *m)
{
    envelope_free(&m->env);
    m->env_ok = false;
}

const char *inmsg_occurrences(const inmsg_t *m, char *buf, size_t len)
{
    snprintf(buf, len, "%" PRId64, m->occurrences);
    return buf;
}
