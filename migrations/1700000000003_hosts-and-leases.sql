-- Up Migration
-- Hosts and session leases carry an epoch from the start, so multi-host takeover can be
-- added without reshaping writes. With one host, every session's lease belongs to it.

CREATE TABLE hosts (
  id text PRIMARY KEY,
  incarnation integer NOT NULL,
  started_at timestamptz NOT NULL,
  heartbeat_at timestamptz NOT NULL,
  lease_expires_at timestamptz NOT NULL,
  info jsonb NOT NULL DEFAULT '{}'::jsonb
);

CREATE TABLE session_leases (
  session_id text PRIMARY KEY REFERENCES sessions(id),
  host_id text NOT NULL REFERENCES hosts(id),
  epoch bigint NOT NULL,
  acquired_at timestamptz NOT NULL
);

CREATE TABLE permission_requests (
  id text PRIMARY KEY,
  session_id text NOT NULL REFERENCES sessions(id),
  turn_id text NOT NULL REFERENCES turns(id),
  tool_call_id text NOT NULL,
  tool text NOT NULL,
  status text NOT NULL CHECK (status IN ('pending', 'allowed', 'denied')),
  created_at timestamptz NOT NULL,
  deadline timestamptz NOT NULL,
  resolved_at timestamptz,
  code text
);
CREATE INDEX permission_requests_pending ON permission_requests (session_id) WHERE status = 'pending';

-- Recorded tool results, so a repeated (turnId, toolCallId) returns the first result.
CREATE TABLE tool_calls (
  turn_id text NOT NULL REFERENCES turns(id),
  tool_call_id text NOT NULL,
  session_id text NOT NULL REFERENCES sessions(id),
  tool text NOT NULL,
  decision text NOT NULL CHECK (decision IN ('allow', 'deny')),
  code text,
  result jsonb NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (turn_id, tool_call_id)
);

-- Down Migration
DROP TABLE tool_calls;
DROP TABLE permission_requests;
DROP TABLE session_leases;
DROP TABLE hosts;
