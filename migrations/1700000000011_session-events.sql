-- Up Migration
-- Issue #11 clause 3: session events kept in Postgres, so people read what they missed with the host
-- method `events.since` instead of JetStream (docs/protocol.md "Events"). `session_event_seqs` holds the
-- last per-session sequence handed out: a counter, not MAX(seq) of the events, so a session whose
-- events were all pruned never hands out a number again; a table of its own, not a column of
-- `sessions`, so an event never locks or rewrites the session row. `cursor` is the caller-wide
-- position: the host allocates it under one transaction-level advisory lock, so cursors commit in
-- their order and a reader that has seen cursor N never later finds a smaller one. `bytes` is the
-- body's encoded size (pages are bounded in bytes). Times come from the host clock.

CREATE TABLE session_event_seqs (
  session_id text PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
  last_seq bigint NOT NULL CONSTRAINT session_event_seqs_positive CHECK (last_seq > 0)
);

CREATE TABLE session_events (
  cursor bigserial PRIMARY KEY,
  session_id text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  seq bigint NOT NULL CONSTRAINT session_events_seq_positive CHECK (seq > 0),
  type text NOT NULL,
  body jsonb NOT NULL,
  bytes integer NOT NULL CONSTRAINT session_events_bytes_positive CHECK (bytes > 0),
  at timestamptz NOT NULL,
  CONSTRAINT session_events_session_seq UNIQUE (session_id, seq)
);
-- events.since for one session reads by (session, cursor); pruning by age scans by time.
CREATE INDEX session_events_by_session ON session_events (session_id, cursor);
CREATE INDEX session_events_at ON session_events (at);

CREATE TRIGGER write_fence BEFORE INSERT OR UPDATE OR DELETE ON session_event_seqs FOR EACH STATEMENT EXECUTE FUNCTION pihost_write_fence();
CREATE TRIGGER write_fence BEFORE INSERT OR UPDATE OR DELETE ON session_events FOR EACH STATEMENT EXECUTE FUNCTION pihost_write_fence();

-- Down Migration
DROP TRIGGER write_fence ON session_events;
DROP TRIGGER write_fence ON session_event_seqs;
DROP TABLE session_events;
DROP TABLE session_event_seqs;
