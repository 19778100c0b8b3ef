-- warren schema 031: an operator completes an execution by hand (docs/api.md, "Operator
-- actions"). Who did it, the API key's name or cli:<os user>: NULL for every completion a
-- worker reported. The history trigger stores the step with its note even where the happy path
-- would leave it implied, and the records of the execution close as manually_resolved by them
-- (schema/functions/060_execution_history.sql, 160_dead_letter_close_completed.sql).
ALTER TABLE executions ADD COLUMN completed_by text;

-- function warren_investigate: schema/functions/180_operator_actions.sql
-- function warren_complete_by_hand: schema/functions/180_operator_actions.sql
-- function warren_dl_priority: schema/functions/120_dead_letter_views.sql
