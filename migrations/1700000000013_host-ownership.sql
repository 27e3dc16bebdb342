-- Up Migration
-- Several hosts (docs/architecture.md "Several hosts"): each session is owned by one host, named by its lease.
-- `hosts.heartbeat` is a counter the host increments every PI_HOST_HEARTBEAT_MS; another host
-- declares it dead when the counter stops moving for a lease on the observer's own clock (no
-- timestamp another host wrote is ever compared). `hosts.state` is running | stopped (clean
-- shutdown: taken over at once) | dead (taken over). `session_leases.incarnation` is the owner's
-- incarnation when it took the lease; the epoch grows by one on every takeover.
-- Every authoritative write of a session-scoped row from a host connection (pihost.host_id set)
-- takes the row's session's lease FOR SHARE, so a takeover's UPDATE of the lease waits for writes
-- in flight, and raises SQLSTATE PH002 (SESSION_LEASE_LOST) when the writer is not its owner: the
-- lease names another host, or a newer incarnation than the writer's. Nothing is written. A
-- session without a lease row (legacy) is not checked until a host claims it. Connections without
-- the settings (migrations, the fences' own pool, tools) are not checked.

ALTER TABLE hosts ADD COLUMN heartbeat bigint NOT NULL DEFAULT 0;
ALTER TABLE hosts ADD COLUMN state text NOT NULL DEFAULT 'running'
  CONSTRAINT hosts_state_known CHECK (state IN ('running', 'stopped', 'dead'));
ALTER TABLE session_leases ADD COLUMN incarnation integer;
UPDATE session_leases l SET incarnation = h.incarnation FROM hosts h WHERE h.id = l.host_id;
-- The start fence and a takeover find one host's sessions.
CREATE INDEX session_leases_by_host ON session_leases (host_id);

CREATE FUNCTION pihost_lease_check(sid text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  writer text := current_setting('pihost.host_id', true);
  mine text := current_setting('pihost.incarnation', true);
  owner text;
  owner_incarnation integer;
BEGIN
  IF writer IS NULL OR writer = '' OR sid IS NULL THEN
    RETURN;
  END IF;
  SELECT host_id, incarnation INTO owner, owner_incarnation FROM session_leases WHERE session_id = sid FOR SHARE;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  IF owner <> writer OR (owner_incarnation IS NOT NULL AND (mine IS NULL OR owner_incarnation > mine::integer)) THEN
    RAISE EXCEPTION 'session % is owned by host % incarnation %, not by % incarnation %', sid, owner, owner_incarnation, writer, mine
      USING ERRCODE = 'PH002';
  END IF;
END $$;

-- Rows whose session is `session_id`: the old row's session on UPDATE/DELETE, the new one's on INSERT/UPDATE.
CREATE FUNCTION pihost_session_lease() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM pihost_lease_check(NEW.session_id);
    RETURN NEW;
  END IF;
  PERFORM pihost_lease_check(OLD.session_id);
  IF TG_OP = 'DELETE' THEN
    RETURN OLD;
  END IF;
  IF NEW.session_id IS DISTINCT FROM OLD.session_id THEN
    PERFORM pihost_lease_check(NEW.session_id);
  END IF;
  RETURN NEW;
END $$;

-- The sessions table itself (UPDATE and DELETE: a new session has no lease yet, its creator
-- inserts the lease next).
CREATE FUNCTION pihost_session_row_lease() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pihost_lease_check(OLD.id);
  IF TG_OP = 'DELETE' THEN
    RETURN OLD;
  END IF;
  RETURN NEW;
END $$;

-- The leases: a host writes a lease only as its new owner (creating, claiming or taking it over),
-- and deletes only its own.
CREATE FUNCTION pihost_lease_row() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  writer text := current_setting('pihost.host_id', true);
  mine text := current_setting('pihost.incarnation', true);
BEGIN
  IF writer IS NULL OR writer = '' THEN
    IF TG_OP = 'DELETE' THEN
      RETURN OLD;
    END IF;
    RETURN NEW;
  END IF;
  IF TG_OP = 'DELETE' THEN
    IF OLD.host_id <> writer THEN
      RAISE EXCEPTION 'lease of session % is held by host %, not by %', OLD.session_id, OLD.host_id, writer
        USING ERRCODE = 'PH002';
    END IF;
    RETURN OLD;
  END IF;
  IF NEW.host_id <> writer OR (NEW.incarnation IS NOT NULL AND NEW.incarnation::text IS DISTINCT FROM mine) THEN
    RAISE EXCEPTION 'host % incarnation % may write the lease of session % only as its owner (not % incarnation %)',
      writer, mine, NEW.session_id, NEW.host_id, NEW.incarnation
      USING ERRCODE = 'PH002';
  END IF;
  RETURN NEW;
END $$;

CREATE TRIGGER session_lease BEFORE UPDATE OR DELETE ON sessions FOR EACH ROW EXECUTE FUNCTION pihost_session_row_lease();
CREATE TRIGGER session_lease BEFORE INSERT OR UPDATE OR DELETE ON turns FOR EACH ROW EXECUTE FUNCTION pihost_session_lease();
CREATE TRIGGER session_lease BEFORE INSERT OR UPDATE OR DELETE ON transcript_entries FOR EACH ROW EXECUTE FUNCTION pihost_session_lease();
CREATE TRIGGER session_lease BEFORE INSERT OR UPDATE OR DELETE ON tool_calls FOR EACH ROW EXECUTE FUNCTION pihost_session_lease();
CREATE TRIGGER session_lease BEFORE INSERT OR UPDATE OR DELETE ON tool_call_starts FOR EACH ROW EXECUTE FUNCTION pihost_session_lease();
CREATE TRIGGER session_lease BEFORE INSERT OR UPDATE OR DELETE ON plan_approvals FOR EACH ROW EXECUTE FUNCTION pihost_session_lease();
CREATE TRIGGER session_lease BEFORE INSERT OR UPDATE OR DELETE ON permission_requests FOR EACH ROW EXECUTE FUNCTION pihost_session_lease();
CREATE TRIGGER session_lease BEFORE INSERT OR UPDATE OR DELETE ON permission_grants FOR EACH ROW EXECUTE FUNCTION pihost_session_lease();
CREATE TRIGGER session_lease BEFORE INSERT OR UPDATE OR DELETE ON scheduled_runs FOR EACH ROW EXECUTE FUNCTION pihost_session_lease();
CREATE TRIGGER session_lease BEFORE INSERT OR UPDATE OR DELETE ON session_leases FOR EACH ROW EXECUTE FUNCTION pihost_lease_row();

-- Down Migration
DROP TRIGGER session_lease ON session_leases;
DROP TRIGGER session_lease ON scheduled_runs;
DROP TRIGGER session_lease ON permission_grants;
DROP TRIGGER session_lease ON permission_requests;
DROP TRIGGER session_lease ON plan_approvals;
DROP TRIGGER session_lease ON tool_call_starts;
DROP TRIGGER session_lease ON tool_calls;
DROP TRIGGER session_lease ON transcript_entries;
DROP TRIGGER session_lease ON turns;
DROP TRIGGER session_lease ON sessions;
DROP FUNCTION pihost_lease_row();
DROP FUNCTION pihost_session_row_lease();
DROP FUNCTION pihost_session_lease();
DROP FUNCTION pihost_lease_check(text);
DROP INDEX session_leases_by_host;
ALTER TABLE session_leases DROP COLUMN incarnation;
ALTER TABLE hosts DROP COLUMN state;
ALTER TABLE hosts DROP COLUMN heartbeat;
