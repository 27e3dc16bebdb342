-- Up Migration
-- Permission prompts (docs/protocol.md "Permission prompts"): a prompt is a durable permission_requests row (with the tool's risk,
-- a bounded preview of its arguments, the decision and the principal who gave it); an allow-session
-- decision is a grant per (session, tool). A grant only skips a prompt: Plan denials come first.

ALTER TABLE permission_requests ADD COLUMN risk text;
ALTER TABLE permission_requests ADD COLUMN args_preview jsonb NOT NULL DEFAULT '{}'::jsonb;
ALTER TABLE permission_requests ADD COLUMN decision text
  CHECK (decision IN ('allow-once', 'allow-session', 'deny'));
ALTER TABLE permission_requests ADD COLUMN principal text;
CREATE INDEX permission_requests_turn ON permission_requests (turn_id);

CREATE TABLE permission_grants (
  session_id text NOT NULL REFERENCES sessions(id),
  tool text NOT NULL,
  granted_by text NOT NULL,
  request_id text REFERENCES permission_requests(id),
  created_at timestamptz NOT NULL,
  PRIMARY KEY (session_id, tool)
);

-- Down Migration
DROP TABLE permission_grants;
DROP INDEX permission_requests_turn;
ALTER TABLE permission_requests DROP COLUMN principal;
ALTER TABLE permission_requests DROP COLUMN decision;
ALTER TABLE permission_requests DROP COLUMN args_preview;
ALTER TABLE permission_requests DROP COLUMN risk;
