/*
 * Who sent a message, as the broker vouches for it. In per_worker mode (executor.worker_identity)
 * every worker logs in as its own broker user, named like the worker, and RabbitMQ refuses a
 * publish whose user_id property is not the connection's user: a report's user_id is its
 * sender. Reports must come from the worker they name, and dead letters from the executor's
 * own user (a worker publishing into the dead-letter exchange cannot fake an expired dispatch).
 * In shared mode (one broker user for everything, for development) nothing is checked here.
 */
#ifndef WARREN_EXECUTOR_IDENTITY_H
#define WARREN_EXECUTOR_IDENTITY_H

#include <stdbool.h>
#include "warren/mq.h"

/* The dead-letter reason of a message refused by these checks. */
#define IDENT_REASON "forged_identity"

typedef enum { IDENT_SHARED = 0, IDENT_PER_WORKER } ident_mode_t;

typedef struct ident {
    ident_mode_t mode;
    char executor_user[MQ_USER_MAX + 1]; /* the broker user the executor publishes as */
} ident_t;

/* Set the process's checks once at start, before any consumer runs. */
void ident_set(const ident_t *id);
bool ident_per_worker(void);
/* A message reporting for `worker` (NULL or "": it names none). per_worker: 0 when its
 * user_id is present and equals worker (when named); -1 with the reason in err. Shared: 0. */
int ident_check_worker(const mq_delivery_t *d, const char *worker, char *err,
                       size_t errlen) WARN_UNUSED;
/* A dead letter. per_worker: 0 when the executor published it (broker dead-lettering keeps the
 * original properties); -1 with the reason in err. Shared: 0. */
int ident_check_executor(const mq_delivery_t *d, char *err, size_t errlen) WARN_UNUSED;

#endif
