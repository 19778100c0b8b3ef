/* Sender checks on the broker-validated user_id of reports and dead letters (per_worker mode). */
#include <stdio.h>
#include <string.h>
#include "executor/identity.h"

static ident_t current; /* written once at start, read by the consumers of the same loop */

void ident_set(const ident_t *id)
{
    current = *id;
}

bool ident_per_worker(void)
{
    return current.mode == IDENT_PER_WORKER;
}

/* 0 when d was published by `user`; -1 with the reason in err. */
static int check(const mq_delivery_t *d, const char *user, const char *who, char *err,
                 size_t errlen)
{
    if (!d->user_id) {
        snprintf(err, errlen, "no user_id: the sender cannot be known to be %s '%s'", who, user);
        return -1;
    }
    if (strcmp(d->user_id, user) != 0) {
        snprintf(err, errlen, "sent by broker user '%s', not by %s '%s'", d->user_id, who, user);
        return -1;
    }
    return 0;
}

int ident_check_worker(const mq_delivery_t *d, const char *worker, char *err, size_t errlen)
{
    if (!ident_per_worker())
        return 0;
    if (worker && worker[0])
        return check(d, worker, "worker", err, errlen);
    if (!d->user_id) {
        snprintf(err, errlen, "no user_id: the sending worker cannot be known");
        return -1;
    }
    return 0;
}

int ident_check_executor(const mq_delivery_t *d, char *err, size_t errlen)
{
    return ident_per_worker() ? check(d, current.executor_user, "the executor", err, errlen) : 0;
}
