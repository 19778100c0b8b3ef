/* The heartbeats consumer's handler (registry.c): WorkerHeartbeat messages into workers. */
#ifndef WARREN_EXECUTOR_REGISTRY_H
#define WARREN_EXECUTOR_REGISTRY_H

#include "executor/consumer.h"

extern const consumer_handler_t registry_handler;

#endif
