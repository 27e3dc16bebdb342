-- Up Migration
-- One statement per decision (docs/architecture.md "Plans"): an approval commits its row, the
-- execution turn, the session's mode and the events in one statement whose every part is checked
-- by version. When one part finds its row changed, the statement must commit nothing at all: it
-- calls this function, which raises SQLSTATE PH003 with the refusal's code as its message, and the
-- whole statement rolls back. Expand only: nothing of the previous commit calls it.

CREATE FUNCTION pihost_refuse(code text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '%', code USING ERRCODE = 'PH003';
END $$;

-- Down Migration
DROP FUNCTION pihost_refuse(text);
