-- warren schema 011: the HTTP API (docs/api.md).
-- Who submitted an execution: the API key's name, or cli:<os user> for `warren submit` on the
-- database URL; NULL for rows written before.
ALTER TABLE executions ADD COLUMN submitted_by text;

-- GET /api/v1/executions?status=S pages newest first by id (the cursor is the last id seen):
-- equality on status, then id backwards, whatever the size of the history.
CREATE INDEX executions_status_id_idx ON executions (status, id);
