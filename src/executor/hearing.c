/* Recording since when the executor hears heartbeats (executor_state.heard_since). */
#include "executor/hearing.h"
#include "warren/db.h"

static int record_heard(PGconn *db, void *arg, char *err, size_t errlen)
{
    (void)arg;
    return db_exec(db, "UPDATE executor_state SET heard_since = now()", 0, NULL, NULL, err, errlen);
}

bool hearing_check(hearing_t *h)
{
    const consumer_t *c = h->heartbeats;
    if (!consumer_hearing(c))
        return false;
    if (c->gaps == h->heard_gaps)
        return true;
    if (dbc_statement(h->db, "recording that heartbeats are heard again", record_heard, NULL) !=
        DBC_OK)
        return false;
    h->heard_gaps = c->gaps;
    return true;
}
