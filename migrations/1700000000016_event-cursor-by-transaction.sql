-- Up Migration
-- Session events without a global lock (docs/architecture.md "Events"): until now every append took
-- one transaction-level advisory lock so that `cursor` values committed in their order, which made
-- every event of every host wait for every other. From here each row also carries the id of the
-- transaction that wrote it (`tx`, xid8), and `events.since` reads only rows below the visibility
-- horizon (`pg_snapshot_xmin(pg_current_snapshot())`: every transaction below it has ended), ordered
-- by (tx, cursor): no row can later appear before one already read, so pages stay gap-free in
-- commit order while writers never wait for each other. Expand only: rows written before get the
-- migrating transaction's id (they keep their order by cursor); a host of the previous commit
-- still appends under its lock, and its rows get their own transaction's id by default.

ALTER TABLE session_events ADD COLUMN tx xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX session_events_by_tx ON session_events (tx, cursor);
CREATE INDEX session_events_by_session_tx ON session_events (session_id, tx, cursor);

-- Down Migration
DROP INDEX session_events_by_session_tx;
DROP INDEX session_events_by_tx;
ALTER TABLE session_events DROP COLUMN tx;
