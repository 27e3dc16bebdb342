-- Up Migration
-- Maps every stored 'chat' mode to 'plan' (sessions, the app default,
-- scheduled task config) in this one transaction. Any other value (NULL, 'Chat', ' chat', malformed
-- JSON, a missing or non-string mode) raises, so the whole migration rolls back and the legacy
-- schema and data stay in force. Adds plan_approvals with their approval fields.

CREATE FUNCTION pg_temp.pihost_json_or_fail(src text, what text) RETURNS jsonb
LANGUAGE plpgsql AS $$
BEGIN
  RETURN src::jsonb;
EXCEPTION WHEN others THEN
  RAISE EXCEPTION 'pi-host migration v8: malformed JSON in %', what USING ERRCODE = 'data_exception';
END $$;

DO $$
DECLARE bad record;
BEGIN
  SELECT id, mode INTO bad FROM sessions WHERE mode IS NULL OR mode NOT IN ('chat', 'agent') LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'pi-host migration v8: session % has mode %, expected chat or agent', bad.id, coalesce(quote_literal(bad.mode), 'NULL')
      USING ERRCODE = 'data_exception';
  END IF;
END $$;

-- Every settings value and task config must be JSON; a mode, where present, must be chat or agent.
DO $$
DECLARE r record; doc jsonb;
BEGIN
  FOR r IN SELECT key, value FROM app_settings LOOP
    doc := pg_temp.pihost_json_or_fail(r.value, 'app_settings.' || r.key);
    IF r.key = 'defaults' AND (jsonb_typeof(doc) <> 'object' OR NOT (doc ? 'mode')
        OR jsonb_typeof(doc -> 'mode') <> 'string' OR doc ->> 'mode' NOT IN ('chat', 'agent')) THEN
      RAISE EXCEPTION 'pi-host migration v8: app default mode % is not chat or agent', doc -> 'mode' USING ERRCODE = 'data_exception';
    END IF;
  END LOOP;
  FOR r IN SELECT id, config FROM scheduled_tasks LOOP
    doc := pg_temp.pihost_json_or_fail(r.config, 'scheduled_tasks.' || r.id);
    IF jsonb_typeof(doc) <> 'object' OR NOT (doc ? 'mode') OR jsonb_typeof(doc -> 'mode') <> 'string'
        OR doc ->> 'mode' NOT IN ('chat', 'agent') THEN
      RAISE EXCEPTION 'pi-host migration v8: scheduled task % mode % is not chat or agent', r.id, doc -> 'mode' USING ERRCODE = 'data_exception';
    END IF;
  END LOOP;
END $$;

UPDATE sessions SET mode = 'plan' WHERE mode = 'chat';
ALTER TABLE sessions ALTER COLUMN mode SET NOT NULL;
ALTER TABLE sessions ALTER COLUMN mode SET DEFAULT 'agent';
ALTER TABLE sessions ADD CONSTRAINT sessions_mode_check CHECK (mode IN ('agent', 'plan'));
ALTER TABLE sessions ADD CONSTRAINT sessions_permission_mode_check
  CHECK (permission_mode IN ('inherit', 'ask', 'accept-edits', 'auto'));
ALTER TABLE sessions ADD COLUMN approvers text[] NOT NULL DEFAULT '{}';

ALTER TABLE app_settings ALTER COLUMN value TYPE jsonb USING value::jsonb;
UPDATE app_settings SET value = jsonb_set(value, '{mode}', '"plan"') WHERE key = 'defaults' AND value ->> 'mode' = 'chat';

ALTER TABLE scheduled_tasks ALTER COLUMN config TYPE jsonb USING config::jsonb;
UPDATE scheduled_tasks SET config = jsonb_set(config, '{mode}', '"plan"') WHERE config ->> 'mode' = 'chat';
ALTER TABLE scheduled_tasks ADD CONSTRAINT scheduled_tasks_mode_check CHECK (config ->> 'mode' IN ('agent', 'plan'));

ALTER TABLE turns ADD CONSTRAINT turns_status_check CHECK (status IN ('running', 'completed', 'aborted', 'error'));
ALTER TABLE turns ADD CONSTRAINT turns_kind_check CHECK (kind IN ('prompt', 'execution'));
ALTER TABLE turns ADD COLUMN proposal_id text;
ALTER TABLE turns ADD COLUMN idempotency_key text;
CREATE UNIQUE INDEX turns_one_running_per_session ON turns (session_id) WHERE status = 'running';
CREATE UNIQUE INDEX turns_idempotency ON turns (session_id, idempotency_key) WHERE idempotency_key IS NOT NULL;

CREATE TABLE plan_approvals (
  id text PRIMARY KEY,
  request_id text NOT NULL UNIQUE,
  session_id text NOT NULL REFERENCES sessions(id),
  turn_id text NOT NULL REFERENCES turns(id),
  tool_call_id text NOT NULL,
  title text NOT NULL,
  question text NOT NULL,
  markdown text NOT NULL,
  artifact_path text NOT NULL,
  artifact_sha256 text NOT NULL,
  artifact_size integer NOT NULL,
  status text NOT NULL DEFAULT 'pending'
    CHECK (status IN ('pending', 'approved', 'rejected', 'expired', 'interrupted')),
  action text CHECK (action IN ('approve', 'reject')),
  target_permission_mode text CHECK (target_permission_mode IN ('ask', 'accept-edits', 'auto')),
  created_at timestamptz NOT NULL,
  deadline timestamptz NOT NULL,
  resolved_at timestamptz,
  resolved_by text,
  version integer NOT NULL DEFAULT 0,
  execution_id text UNIQUE,
  execution_state text CHECK (execution_state IN ('queued', 'running', 'completed', 'interrupted')),
  execution_turn_id text REFERENCES turns(id),
  error_code text,
  CHECK ((execution_id IS NULL) = (execution_state IS NULL)),
  CHECK (execution_id IS NULL OR status = 'approved')
);
CREATE UNIQUE INDEX plan_approvals_one_pending_per_session ON plan_approvals (session_id) WHERE status = 'pending';
CREATE UNIQUE INDEX plan_approvals_one_execution_per_session ON plan_approvals (session_id)
  WHERE execution_state IN ('queued', 'running');
CREATE UNIQUE INDEX plan_approvals_artifact_path ON plan_approvals (session_id, artifact_path);

-- Down Migration
DROP TABLE plan_approvals;
DROP INDEX turns_idempotency;
DROP INDEX turns_one_running_per_session;
ALTER TABLE turns DROP COLUMN idempotency_key;
ALTER TABLE turns DROP COLUMN proposal_id;
ALTER TABLE turns DROP CONSTRAINT turns_kind_check;
ALTER TABLE turns DROP CONSTRAINT turns_status_check;
ALTER TABLE scheduled_tasks DROP CONSTRAINT scheduled_tasks_mode_check;
UPDATE scheduled_tasks SET config = jsonb_set(config, '{mode}', '"chat"') WHERE config ->> 'mode' = 'plan';
ALTER TABLE scheduled_tasks ALTER COLUMN config TYPE text USING config::text;
UPDATE app_settings SET value = jsonb_set(value, '{mode}', '"chat"') WHERE key = 'defaults' AND value ->> 'mode' = 'plan';
ALTER TABLE app_settings ALTER COLUMN value TYPE text USING value::text;
ALTER TABLE sessions DROP COLUMN approvers;
ALTER TABLE sessions DROP CONSTRAINT sessions_permission_mode_check;
ALTER TABLE sessions DROP CONSTRAINT sessions_mode_check;
ALTER TABLE sessions ALTER COLUMN mode DROP DEFAULT;
ALTER TABLE sessions ALTER COLUMN mode DROP NOT NULL;
UPDATE sessions SET mode = 'chat' WHERE mode = 'plan';
