-- Up Migration
-- Scheduled tasks get an owner, a project and the next
-- occurrence to claim; runs get their trigger, the claiming host, and the session and turn they
-- started. A due occurrence is claimed by exactly one host (unique (task_id, scheduled_for) for
-- scheduled runs). A refused Plan run has no row at all: its audit row is the record. Legacy rows keep
-- every value (legacy tasks have no owner or project and are never scheduled).

ALTER TABLE scheduled_tasks ADD COLUMN owner text;
ALTER TABLE scheduled_tasks ADD COLUMN project_id text REFERENCES projects(id);
ALTER TABLE scheduled_tasks ADD COLUMN next_run_at timestamptz;
ALTER TABLE scheduled_tasks ADD COLUMN updated_at timestamptz;
ALTER TABLE scheduled_tasks ADD COLUMN version integer NOT NULL DEFAULT 0;
CREATE INDEX scheduled_tasks_due ON scheduled_tasks (next_run_at) WHERE enabled AND next_run_at IS NOT NULL;
CREATE INDEX scheduled_tasks_owner ON scheduled_tasks (owner, created_at);

ALTER TABLE scheduled_runs ADD COLUMN trigger text CHECK (trigger IN ('schedule', 'manual'));
ALTER TABLE scheduled_runs ADD COLUMN claimed_by text;
ALTER TABLE scheduled_runs ADD COLUMN principal text;
ALTER TABLE scheduled_runs ADD COLUMN session_id text REFERENCES sessions(id);
ALTER TABLE scheduled_runs ADD COLUMN turn_id text REFERENCES turns(id);
-- NOT VALID: checked for every row written from now on; legacy rows keep whatever status they had.
ALTER TABLE scheduled_runs ADD CONSTRAINT scheduled_runs_status_check
  CHECK (status IN ('claimed', 'running', 'completed', 'failed', 'missed')) NOT VALID;
CREATE UNIQUE INDEX scheduled_runs_one_per_occurrence ON scheduled_runs (task_id, scheduled_for)
  WHERE trigger = 'schedule';
CREATE INDEX scheduled_runs_task ON scheduled_runs (task_id, scheduled_for DESC);
CREATE INDEX scheduled_runs_open ON scheduled_runs (claimed_by) WHERE status IN ('claimed', 'running');

-- Down Migration
DROP INDEX scheduled_runs_open;
DROP INDEX scheduled_runs_task;
DROP INDEX scheduled_runs_one_per_occurrence;
ALTER TABLE scheduled_runs DROP CONSTRAINT scheduled_runs_status_check;
ALTER TABLE scheduled_runs DROP COLUMN turn_id;
ALTER TABLE scheduled_runs DROP COLUMN session_id;
ALTER TABLE scheduled_runs DROP COLUMN principal;
ALTER TABLE scheduled_runs DROP COLUMN claimed_by;
ALTER TABLE scheduled_runs DROP COLUMN trigger;
DROP INDEX scheduled_tasks_owner;
DROP INDEX scheduled_tasks_due;
ALTER TABLE scheduled_tasks DROP COLUMN version;
ALTER TABLE scheduled_tasks DROP COLUMN updated_at;
ALTER TABLE scheduled_tasks DROP COLUMN next_run_at;
ALTER TABLE scheduled_tasks DROP COLUMN project_id;
ALTER TABLE scheduled_tasks DROP COLUMN owner;
