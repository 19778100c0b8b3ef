/* Helpers shared by the db module's files (db.c, migrate.c); not part of the contract. */
#ifndef WARREN_DB_PRIVATE_H
#define WARREN_DB_PRIVATE_H

#include <libpq-fe.h>
#include <stddef.h>

/* One line "message (SQLSTATE xxxxx): detail" from a failed result (res may be NULL:
 * then the connection's own message). */
void db_describe_error(PGconn *db, const PGresult *res, char *err, size_t errlen);

#endif
