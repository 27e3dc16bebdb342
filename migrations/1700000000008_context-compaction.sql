-- Up Migration
-- new_context compacts the context the host serves (docs/protocol.md "context"): the
-- first context page starts after the session's latest allowed new_context call. This index finds
-- it without reading the session's other tool calls.

CREATE INDEX tool_calls_compaction_idx ON tool_calls (session_id) WHERE tool = 'new_context' AND decision = 'allow';

-- Down Migration
DROP INDEX tool_calls_compaction_idx;
