-- Up Migration
-- Within one session, positions grow with seq (docs/protocol.md "Events"). Rows are ordered by the
-- id of the transaction that wrote them (migration 16), but a transaction may get its id before it
-- reaches the session's counter row and then wait there for a younger transaction that holds it:
-- its event then gets the next seq yet an older id, and a page would return seq 8 before seq 7
-- (a client dropping what it has already seen would lose 7). From here the counter row remembers
-- the position its last writer gave (`last_tx`), and each appended row is stamped with the greater
-- of its own transaction's id and that one. A row's stamp is never below its writer's id, so a row
-- below the horizon still belongs to a transaction that has ended: pages stay gap-free.
-- Expand only: the column is nullable and a host of the previous commit neither reads nor sets it
-- (its rows keep their own transaction's id, as before).

ALTER TABLE session_event_seqs ADD COLUMN last_tx xid8;

-- Down Migration
ALTER TABLE session_event_seqs DROP COLUMN last_tx;
