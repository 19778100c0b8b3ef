-- warren schema 022: the staleness detector (docs/dead-letters.md, "Staleness").
-- A non-terminal execution (requested, scheduled, running) has been in its status since its
-- last applied status change; past a threshold per status (staleness.*_s, overridden per action
-- by staleness.*_by_action) it is stale: requested and scheduled ones fail, running ones are
-- abandoned (attempt-fenced), each leaving a staleness_timeout record. From
-- staleness.warning_pct of its threshold on it is in warning: logged once per status and attempt.
--
-- The thresholds travel as one JSON document built from the configuration (dlq_staleness_cfg):
-- {"defaults": {"requested": S, "scheduled": S, "running": S}, "actions": {"ACTION":
-- {"running": S, ...}}, "warning_pct": P}; a threshold of 0 turns the check off.

-- The status and attempt of the last warning about an execution ("running:3"): one per state.
ALTER TABLE executions ADD COLUMN staleness_warned text;

-- function warren_state_since: schema/functions/080_staleness.sql
-- function warren_stale_threshold: schema/functions/080_staleness.sql
-- function warren_staleness: schema/functions/080_staleness.sql
-- function warren_staleness_sweep: schema/functions/080_staleness.sql
