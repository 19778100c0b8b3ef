/*
 * The legal transitions between execution statuses (warren/exec_status.h, docs/schema.md), as
 * a table. Status writes that accept several source statuses take their guard from it
 * (trans_sources_literal, trans_pairs_literal: results, the dead-letter handler, the monitor's
 * abandoned). Writes from one known status compare with that status as EXEC_SQL(NAME) in their
 * statement (the scheduler's requested -> scheduled or failed and scheduled -> requested, the
 * monitor's scheduled -> failed); tests/unit/test_transitions.c checks that those edges are in
 * the table.
 */
#ifndef WARREN_EXECUTOR_TRANSITIONS_H
#define WARREN_EXECUTOR_TRANSITIONS_H

#include "warren/exec_status.h"

/* May a row in `from` move to `to`? Never to itself, never out of a terminal status except
 * abandoned -> completed/failed/timeout (a late completion of the same attempt). */
bool trans_legal(exec_status_t from, exec_status_t to);
/*
 * The statuses a row may move to `to` from, as a PostgreSQL text[] literal ("{scheduled,...}")
 * into buf, for guards like `status = ANY($n::text[])`. -1 when buf is too small.
 */
int trans_sources_literal(exec_status_t to, char *buf, size_t len) WARN_UNUSED;
/*
 * Every legal (from, to) pair whose `to` is in targets[0..n), as two parallel text[] literals,
 * for guards like `(e.status, u.status) IN (SELECT * FROM unnest($a::text[], $b::text[]))`.
 */
int trans_pairs_literal(const exec_status_t *targets, size_t n, char *from_buf, char *to_buf,
                        size_t len) WARN_UNUSED;

#endif
