-- Up Migration
-- Every event row kept one index nothing reads any more (docs/performance.md "Every call at its
-- floor"): `session_events_by_session (session_id, cursor)` served one session's pages while the
-- cursor was a global sequence; since migration 16 pages are ordered by (tx, cursor) and one
-- session's page uses `session_events_by_session_tx`, pruning uses (session_id, seq), and the
-- foreign key to sessions is served by that unique index too. Each append paid for the unused
-- index's insert. Contract only, and safe for a host of the previous commit: no statement of it
-- names or needs the index.

DROP INDEX IF EXISTS session_events_by_session;

-- Down Migration
CREATE INDEX IF NOT EXISTS session_events_by_session ON session_events (session_id, cursor);
