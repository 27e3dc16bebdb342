-- Up Migration
-- docs/protocol.md "Startup fence": every authoritative write checks that the writing host is still the incarnation the
-- startup fence made current, so a host that was superseded (paused, partitioned, or a second
-- process with the same PI_HOST_ID) cannot commit. Host connections carry `pihost.host_id` and
-- `pihost.incarnation` from their start (libpq options); a statement on a guarded table from such a
-- connection first takes a shared transaction-level advisory lock on the host id, which the fence
-- takes exclusively while it bumps the incarnation, then compares. A mismatch raises SQLSTATE PH001
-- and nothing is written. Connections without the settings (migrations, the fence itself, tools)
-- are not checked.

CREATE FUNCTION pihost_write_fence() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  writer text := current_setting('pihost.host_id', true);
  mine text := current_setting('pihost.incarnation', true);
  current_incarnation integer;
BEGIN
  IF writer IS NULL OR writer = '' THEN
    RETURN NULL;
  END IF;
  PERFORM pg_advisory_xact_lock_shared(1885956211, hashtext(writer));
  SELECT incarnation INTO current_incarnation FROM hosts WHERE id = writer;
  IF current_incarnation IS NULL OR mine IS NULL OR current_incarnation::text <> mine THEN
    RAISE EXCEPTION 'host % incarnation % is fenced (current incarnation %)', writer, mine, current_incarnation
      USING ERRCODE = 'PH001';
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER write_fence BEFORE INSERT OR UPDATE OR DELETE ON sessions FOR EACH STATEMENT EXECUTE FUNCTION pihost_write_fence();
CREATE TRIGGER write_fence BEFORE INSERT OR UPDATE OR DELETE ON turns FOR EACH STATEMENT EXECUTE FUNCTION pihost_write_fence();
CREATE TRIGGER write_fence BEFORE INSERT OR UPDATE OR DELETE ON transcript_entries FOR EACH STATEMENT EXECUTE FUNCTION pihost_write_fence();
CREATE TRIGGER write_fence BEFORE INSERT OR UPDATE OR DELETE ON tool_calls FOR EACH STATEMENT EXECUTE FUNCTION pihost_write_fence();
CREATE TRIGGER write_fence BEFORE INSERT OR UPDATE OR DELETE ON plan_approvals FOR EACH STATEMENT EXECUTE FUNCTION pihost_write_fence();
CREATE TRIGGER write_fence BEFORE INSERT OR UPDATE OR DELETE ON permission_requests FOR EACH STATEMENT EXECUTE FUNCTION pihost_write_fence();
CREATE TRIGGER write_fence BEFORE INSERT OR UPDATE OR DELETE ON permission_grants FOR EACH STATEMENT EXECUTE FUNCTION pihost_write_fence();
CREATE TRIGGER write_fence BEFORE INSERT OR UPDATE OR DELETE ON session_leases FOR EACH STATEMENT EXECUTE FUNCTION pihost_write_fence();
CREATE TRIGGER write_fence BEFORE INSERT OR UPDATE OR DELETE ON scheduled_tasks FOR EACH STATEMENT EXECUTE FUNCTION pihost_write_fence();
CREATE TRIGGER write_fence BEFORE INSERT OR UPDATE OR DELETE ON scheduled_runs FOR EACH STATEMENT EXECUTE FUNCTION pihost_write_fence();
CREATE TRIGGER write_fence BEFORE INSERT OR UPDATE OR DELETE ON app_settings FOR EACH STATEMENT EXECUTE FUNCTION pihost_write_fence();
CREATE TRIGGER write_fence BEFORE INSERT OR UPDATE OR DELETE ON projects FOR EACH STATEMENT EXECUTE FUNCTION pihost_write_fence();
CREATE TRIGGER write_fence BEFORE INSERT OR UPDATE OR DELETE ON plugins FOR EACH STATEMENT EXECUTE FUNCTION pihost_write_fence();
CREATE TRIGGER write_fence BEFORE INSERT OR UPDATE OR DELETE ON audit_log FOR EACH STATEMENT EXECUTE FUNCTION pihost_write_fence();

-- Down Migration
DROP TRIGGER write_fence ON audit_log;
DROP TRIGGER write_fence ON plugins;
DROP TRIGGER write_fence ON projects;
DROP TRIGGER write_fence ON app_settings;
DROP TRIGGER write_fence ON scheduled_runs;
DROP TRIGGER write_fence ON scheduled_tasks;
DROP TRIGGER write_fence ON session_leases;
DROP TRIGGER write_fence ON permission_grants;
DROP TRIGGER write_fence ON permission_requests;
DROP TRIGGER write_fence ON plan_approvals;
DROP TRIGGER write_fence ON tool_calls;
DROP TRIGGER write_fence ON transcript_entries;
DROP TRIGGER write_fence ON turns;
DROP TRIGGER write_fence ON sessions;
DROP FUNCTION pihost_write_fence();
