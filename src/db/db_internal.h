/* Internal to the db module: helpers its files (db.c, migrate.c) share. */
#ifndef WARREN_DB_INTERNAL_H
#define WARREN_DB_INTERNAL_H

#include <libpq-fe.h>
#include <stddef.h>

/* One line "message (SQLSTATE xxxxx): detail" from a failed result (res may be NULL:
 * then the connection's own message). */
void db_describe_error(PGconn *db, const PGresult *res, char *err, size_t errlen);

#endif
