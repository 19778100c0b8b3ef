/*
 * AMQP headers of a delivery as JSON (for dead_letters.headers and result JSON), and the
 * broker's x-death record, which says why and from where a message was dead-lettered.
 */
#ifndef WARREN_EXECUTOR_HEADERS_H
#define WARREN_EXECUTOR_HEADERS_H

#include <amqp.h>
#include <json-c/json.h>
#include "warren/common.h"

/*
 * The table as a JSON object. Strings become valid UTF-8 (PostgreSQL jsonb refuses anything
 * else, and one bad header must not make a dead letter unstorable), timestamps RFC 3339 UTC
 * (past year 9999 the number itself), non-finite floats null. Never NULL except on OOM; a NULL
 * table gives {}. Caller puts it.
 */
json_object *hdr_to_json(const amqp_table_t *table);
/* The x-death array alone as JSON (NULL when absent); the caller releases it with
 * json_object_put(). */
json_object *hdr_x_death_json(const amqp_table_t *table);

/* The most recent x-death entry (RabbitMQ keeps the array most recent first). */
typedef struct xdeath {
    bool present;
    char queue[256];
    char reason[32]; /* expired, rejected, maxlen, delivery_limit */
    char exchange[256];
    char routing_key[256]; /* first of routing-keys */
    int64_t count;
    int64_t time_s; /* AMQP timestamp, seconds since the epoch; 0 when absent or beyond
                       TS_MIN_S..TS_MAX_S (warren/timestamp.h) */
} xdeath_t;

void hdr_first_death(const amqp_table_t *table, xdeath_t *out);
/* The x-death entry at index (0: the most recent); present is false when there is none. */
void hdr_death_at(const amqp_table_t *table, int index, xdeath_t *out);

#endif
