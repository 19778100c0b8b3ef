/*
 * The results consumer's handler (results.c): ExecutionStatusChanged (running) and
 * ExecutionCompleted from the results queue, applied per drained batch in one transaction.
 */
#ifndef WARREN_EXECUTOR_RESULTS_H
#define WARREN_EXECUTOR_RESULTS_H

#include "executor/consumer.h"

extern const consumer_handler_t results_handler;

#endif
