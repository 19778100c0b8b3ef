/*
 * An LD_PRELOAD module for bench/run: counts the statements a process sends to PostgreSQL
 * through libpq, so that statements_per_execution counts what the executor's connections run,
 * BEGIN and COMMIT included (PostgreSQL 15's pg_stat_statements does not see those when they are
 * prepared statements, as warren's database.prepared_statements makes them).
 *
 * Counted: every PQexec, PQexecParams, PQexecPrepared, PQsendQuery, PQsendQueryParams and
 * PQsendQueryPrepared the process calls (once, also when libpq implements one through another);
 * preparing a statement (PQprepare, PQsendPrepare) runs none and is not counted. The count is
 * kept in the file BENCH_PQ_COUNT_FILE names (8 bytes, native byte order, created when missing),
 * mapped shared and updated atomically, so the bench reads it while the process runs. Without
 * BENCH_PQ_COUNT_FILE the module counts nothing.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static uint64_t *counter;
static __thread int depth; /* > 0 inside a counted call: libpq calling itself is not counted */

__attribute__((constructor)) static void pq_count_init(void)
{
    const char *path = getenv("BENCH_PQ_COUNT_FILE");
    if (!path || !*path)
        return;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    if (ftruncate(fd, sizeof *counter) == 0) {
        void *p = mmap(NULL, sizeof *counter, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p != MAP_FAILED)
            counter = p;
    }
    close(fd);
}

static void count(int sent)
{
    if (sent && depth == 0 && counter)
        __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

#define NEXT(fn)                                                                                   \
    static __typeof__(fn) *next;                                                                   \
    if (!next)                                                                                     \
    next = (__typeof__(fn) *)dlsym(RTLD_NEXT, #fn)

PGresult *PQexec(PGconn *conn, const char *query)
{
    NEXT(PQexec);
    depth++;
    PGresult *r = next(conn, query);
    depth--;
    count(1);
    return r;
}

PGresult *PQexecParams(PGconn *conn, const char *command, int nParams, const Oid *paramTypes,
                       const char *const *paramValues, const int *paramLengths,
                       const int *paramFormats, int resultFormat)
{
    NEXT(PQexecParams);
    depth++;
    PGresult *r = next(conn, command, nParams, paramTypes, paramValues, paramLengths, paramFormats,
                       resultFormat);
    depth--;
    count(1);
    return r;
}

PGresult *PQexecPrepared(PGconn *conn, const char *stmtName, int nParams,
                         const char *const *paramValues, const int *paramLengths,
                         const int *paramFormats, int resultFormat)
{
    NEXT(PQexecPrepared);
    depth++;
    PGresult *r = next(conn, stmtName, nParams, paramValues, paramLengths, paramFormats,
                       resultFormat);
    depth--;
    count(1);
    return r;
}

int PQsendQuery(PGconn *conn, const char *query)
{
    NEXT(PQsendQuery);
    depth++;
    int rc = next(conn, query);
    depth--;
    count(rc);
    return rc;
}

int PQsendQueryParams(PGconn *conn, const char *command, int nParams, const Oid *paramTypes,
                      const char *const *paramValues, const int *paramLengths,
                      const int *paramFormats, int resultFormat)
{
    NEXT(PQsendQueryParams);
    depth++;
    int rc = next(conn, command, nParams, paramTypes, paramValues, paramLengths, paramFormats,
                  resultFormat);
    depth--;
    count(rc);
    return rc;
}

int PQsendQueryPrepared(PGconn *conn, const char *stmtName, int nParams,
                        const char *const *paramValues, const int *paramLengths,
                        const int *paramFormats, int resultFormat)
{
    NEXT(PQsendQueryPrepared);
    depth++;
    int rc = next(conn, stmtName, nParams, paramValues, paramLengths, paramFormats, resultFormat);
    depth--;
    count(rc);
    return rc;
}
