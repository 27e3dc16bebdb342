-- Up Migration
-- Issue #12 clause 4: no tool runs without a record. The host writes a start row for a tool call, in
-- the statement that reads the call's facts, before anything of the call runs; the result row in
-- tool_calls follows. A start row without a result is a call whose outcome is unknown (the host
-- died, or the result could not be recorded): a retry gets TOOL_OUTCOME_UNKNOWN and never runs it
-- again, and the startup fence records that result for every such row it finds.

CREATE TABLE tool_call_starts (
  turn_id text NOT NULL REFERENCES turns(id),
  tool_call_id text NOT NULL,
  session_id text NOT NULL REFERENCES sessions(id),
  tool text NOT NULL,
  started_at timestamptz NOT NULL,
  PRIMARY KEY (turn_id, tool_call_id)
);

CREATE TRIGGER write_fence BEFORE INSERT OR UPDATE OR DELETE ON tool_call_starts FOR EACH STATEMENT EXECUTE FUNCTION pihost_write_fence();

-- Down Migration
DROP TRIGGER write_fence ON tool_call_starts;
DROP TABLE tool_call_starts;
