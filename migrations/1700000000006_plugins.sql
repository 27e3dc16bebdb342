-- Up Migration
-- Plugins (docs/protocol.md "Plugins"): a registered manifest (its tools with JSON schema and normalised risk) and
-- whether it is enabled. The host reads this row on every plugin tool call, so enable and disable
-- take effect at once. Times come from the host clock.

CREATE TABLE plugins (
  id text PRIMARY KEY,
  manifest jsonb NOT NULL,
  enabled boolean NOT NULL DEFAULT true,
  registered_by text NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);

-- Down Migration
DROP TABLE plugins;
