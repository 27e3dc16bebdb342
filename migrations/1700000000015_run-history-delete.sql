-- Up Migration
-- Deleting a scheduled task deletes its run history, and those runs' sessions may be owned by other
-- hosts (each host runs its own scheduler): the row lease trigger of migration 13 refused that
-- DELETE whole, so a task with runs on two hosts could never be deleted (SESSION_LEASE_LOST for
-- good). Run history is the task owner's, not session state: deleting it is no longer lease-checked.
-- Inserting and updating runs still are, and the write fence (migration 9) still refuses every write
-- of a superseded incarnation. Expand only: hosts of the previous commit write runs the same way.

DROP TRIGGER session_lease ON scheduled_runs;
CREATE TRIGGER session_lease BEFORE INSERT OR UPDATE ON scheduled_runs FOR EACH ROW EXECUTE FUNCTION pihost_session_lease();

-- Down Migration
DROP TRIGGER session_lease ON scheduled_runs;
CREATE TRIGGER session_lease BEFORE INSERT OR UPDATE OR DELETE ON scheduled_runs FOR EACH ROW EXECUTE FUNCTION pihost_session_lease();
