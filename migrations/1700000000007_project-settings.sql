-- Up Migration
-- A project's tool settings. `network_allowed` gives the project's sandboxes
-- user-mode networking through slirp4netns (host loopback disabled); off, they have no network.
-- `preview_origins` lists the origins (scheme://host[:port]) BrowserPreview may load besides loopback
-- and workspace files. Both are read on every tool call, so a change applies to the next call.
-- `version` counts configuration changes; times come from the host clock.

ALTER TABLE projects ADD COLUMN network_allowed boolean NOT NULL DEFAULT false;
ALTER TABLE projects ADD COLUMN preview_origins text[] NOT NULL DEFAULT '{}'
  CONSTRAINT projects_preview_origins_bounded CHECK (cardinality(preview_origins) <= 32);
ALTER TABLE projects ADD COLUMN version integer NOT NULL DEFAULT 0;
ALTER TABLE projects ADD COLUMN updated_at timestamptz;

-- Down Migration
ALTER TABLE projects DROP COLUMN updated_at;
ALTER TABLE projects DROP COLUMN version;
ALTER TABLE projects DROP COLUMN preview_origins;
ALTER TABLE projects DROP COLUMN network_allowed;
