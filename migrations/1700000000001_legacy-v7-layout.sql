-- Up Migration
-- The legacy ("schema v7", before Plan mode) layout the history starts from: stored modes are 'chat' or
-- 'agent' (sessions.mode, the app default inside app_settings' JSON text, scheduled task config JSON
-- text). The next migration maps chat -> plan. Times are written by the host (never now()).

CREATE TABLE projects (
  id text PRIMARY KEY,
  name text NOT NULL,
  workspace_root text NOT NULL,
  owner text NOT NULL,
  created_at timestamptz NOT NULL
);

CREATE TABLE sessions (
  id text PRIMARY KEY,
  project_id text REFERENCES projects(id),
  title text NOT NULL DEFAULT '',
  owner text NOT NULL,
  mode text,
  permission_mode text NOT NULL DEFAULT 'inherit',
  provider text NOT NULL,
  model text NOT NULL,
  model_config jsonb NOT NULL DEFAULT '{}'::jsonb,
  version integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);

CREATE TABLE turns (
  id text PRIMARY KEY,
  session_id text NOT NULL REFERENCES sessions(id),
  kind text NOT NULL,
  status text NOT NULL,
  error_code text,
  created_at timestamptz NOT NULL,
  ended_at timestamptz
);
CREATE INDEX turns_session_idx ON turns (session_id, created_at);

CREATE TABLE transcript_entries (
  id bigserial PRIMARY KEY,
  session_id text NOT NULL REFERENCES sessions(id),
  turn_id text REFERENCES turns(id),
  role text NOT NULL,
  message jsonb NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE INDEX transcript_session_idx ON transcript_entries (session_id, id);

CREATE TABLE audit_log (
  id bigserial PRIMARY KEY,
  at timestamptz NOT NULL,
  principal text,
  session_id text,
  turn_id text,
  tool_call_id text,
  action text NOT NULL,
  decision text,
  code text,
  details jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX audit_session_idx ON audit_log (session_id, id);

-- value is JSON kept as text in the legacy layout, e.g. key 'defaults' -> '{"mode":"chat"}'
CREATE TABLE app_settings (
  key text PRIMARY KEY,
  value text NOT NULL
);

CREATE TABLE scheduled_tasks (
  id text PRIMARY KEY,
  name text NOT NULL,
  cron text NOT NULL,
  timezone text NOT NULL DEFAULT 'UTC',
  config text NOT NULL,
  enabled boolean NOT NULL DEFAULT true,
  created_at timestamptz NOT NULL
);

CREATE TABLE scheduled_runs (
  id text PRIMARY KEY,
  task_id text NOT NULL REFERENCES scheduled_tasks(id),
  status text NOT NULL,
  scheduled_for timestamptz NOT NULL,
  started_at timestamptz,
  ended_at timestamptz,
  error_code text
);

-- Down Migration
DROP TABLE scheduled_runs;
DROP TABLE scheduled_tasks;
DROP TABLE app_settings;
DROP TABLE audit_log;
DROP TABLE transcript_entries;
DROP TABLE turns;
DROP TABLE sessions;
DROP TABLE projects;
