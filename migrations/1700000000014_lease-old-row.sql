-- Up Migration
-- The lease trigger of migration 13 checked only the NEW row of an UPDATE on session_leases: a live
-- host's connection could write `host_id = <itself>` over another live host's lease and so take a
-- session without a takeover. From here an UPDATE also checks the OLD row: a host may move a lease
-- only away from itself, or away from a host that is no longer `running` (a takeover marks the dead
-- host `dead` in the same transaction before it moves its leases, services/host/store/takeover.ts).
-- Expand only: a host of the previous commit writes leases exactly this way, so it keeps working.

CREATE OR REPLACE FUNCTION pihost_lease_row() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  writer text := current_setting('pihost.host_id', true);
  mine text := current_setting('pihost.incarnation', true);
  old_state text;
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
  IF TG_OP = 'UPDATE' AND OLD.host_id <> writer THEN
    SELECT state INTO old_state FROM hosts WHERE id = OLD.host_id;
    IF old_state = 'running' THEN
      RAISE EXCEPTION 'lease of session % is held by running host %; host % may take it only by a takeover',
        OLD.session_id, OLD.host_id, writer
        USING ERRCODE = 'PH002';
    END IF;
  END IF;
  IF NEW.host_id <> writer OR (NEW.incarnation IS NOT NULL AND NEW.incarnation::text IS DISTINCT FROM mine) THEN
    RAISE EXCEPTION 'host % incarnation % may write the lease of session % only as its owner (not % incarnation %)',
      writer, mine, NEW.session_id, NEW.host_id, NEW.incarnation
      USING ERRCODE = 'PH002';
  END IF;
  RETURN NEW;
END $$;

-- Down Migration
CREATE OR REPLACE FUNCTION pihost_lease_row() RETURNS trigger LANGUAGE plpgsql AS $$
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
