/* LISTEN warren_requested on a connection of its own: wake the scheduler when work arrives. */
#include <string.h>
#include "executor/listen.h"
#include "warren/db.h"
#include "warren/log.h"

int listener_init(listener_t *l, struct event_base *base, const char *url, int connect_timeout_s,
                  int statement_timeout_ms, void (*wake)(void *arg), void *arg)
{
    memset(l, 0, sizeof *l);
    l->base = base;
    l->wake = wake;
    l->arg = arg;
    if (dbc_init(&l->db, url, connect_timeout_s) != 0)
        return -1;
    dbc_set_statement_timeout(&l->db, statement_timeout_ms);
    return 0;
}

void listener_stop(listener_t *l)
{
    if (l->listening)
        event_del(&l->read_ev);
    l->listening = false;
}

void listener_free(listener_t *l)
{
    listener_stop(l);
    if (l->db.url)
        dbc_free(&l->db); /* leaves url NULL: listener_check does nothing */
}

/* Readable: notifications, or the end of the connection (a restart, a failover). */
static void on_read(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    listener_t *l = arg;
    PGconn *db = l->db.conn;
    if (!db || !PQconsumeInput(db)) {
        log_kv(LOG_WARN, "lost the connection that listens for new work; polling until it is back",
               "error", db ? PQerrorMessage(db) : "no connection", NULL);
        listener_stop(l);
        dbc_lost(&l->db);
        return;
    }
    bool any = false, ended = false;
    for (PGnotify *note; (note = PQnotifies(db)) != NULL; PQfreemem(note)) {
        if (!strcmp(note->relname, LISTEN_ENDED_CHANNEL))
            ended = true;
        else
            any = true;
    }
    if (ended && l->ended)
        l->ended(l->ended_arg);
    if (any)
        l->wake(l->arg);
}

void listener_on_ended(listener_t *l, void (*ended)(void *arg), void *arg)
{
    l->ended = ended;
    l->ended_arg = arg;
}

static int listen_work(PGconn *db, void *arg, char *err, size_t errlen)
{
    const listener_t *l = arg;
    if (db_exec(db, "LISTEN " LISTEN_CHANNEL, 0, NULL, NULL, err, errlen) != 0)
        return -1;
    return l->ended ? db_exec(db, "LISTEN " LISTEN_ENDED_CHANNEL, 0, NULL, NULL, err, errlen) : 0;
}

void listener_check(listener_t *l)
{
    if (l->listening || l->refused || !l->db.url)
        return;
    dbc_result_t r = dbc_statement(&l->db, "listening for new work", listen_work, l);
    if (r == DBC_FAILED) { /* not a loss: asking again would fail again */
        log_kv(LOG_WARN, "the database refused LISTEN; new work waits for the scheduler's poll",
               "error", l->db.last_error, NULL);
        l->refused = true;
        dbc_free(&l->db);
        return;
    }
    if (r != DBC_OK)
        return;
    PGconn *db = l->db.conn;
    if (event_assign(&l->read_ev, l->base, PQsocket(db), EV_READ | EV_PERSIST, on_read, l) != 0 ||
        event_add(&l->read_ev, NULL) != 0) {
        log_kv(LOG_ERROR, "cannot watch the connection that listens for new work", NULL);
        dbc_lost(&l->db);
        return;
    }
    l->listening = true;
    log_kv(LOG_DEBUG, "listening for new work", "channel", LISTEN_CHANNEL, NULL);
    l->wake(l->arg);
    if (l->ended)
        l->ended(l->ended_arg);
}
