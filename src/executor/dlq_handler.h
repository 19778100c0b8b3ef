/*
 * The dead-letter handler (dlq_handler.c): the handlers of the dead-letter queue and of the
 * parking queue, the last resort of every consumer (one delivery stored raw, reason
 * store_error), and the age of the dead letters a consumer holds.
 */
#ifndef WARREN_EXECUTOR_DLQ_HANDLER_H
#define WARREN_EXECUTOR_DLQ_HANDLER_H

#include "executor/consumer.h"
#include "warren/mq.h"

extern const consumer_handler_t dlq_handler;
extern const consumer_handler_t dlq_parked_handler;
extern const consumer_handler_t dlq_raw_handler;

/* The dead-letter exchange and queue (message_queue.rabbitmq.dead_letter), against which a dead
 * letter's path is checked: only then is its x-death the broker's (dead_letters.x_death_verified).
 * Copied; set once at start, before the consumers run. */
void dlq_set_names(const char *dlx_exchange, const char *dlx_queue);

/* How long a dead letter has waited since it was dead-lettered into the dead-letter queue, in
 * seconds (0 when its x-death says nothing). */
int64_t dlq_age_s(const mq_delivery_t *d, int64_t now_s);
/* The oldest dead letter held unacked (a database outage keeps them) by the dead-letter and
 * parking consumers, in seconds since it was dead-lettered (x-death); 0 when none. */
uint64_t dlq_held_age_s(const consumer_t *dlq, const consumer_t *parked);

#endif
