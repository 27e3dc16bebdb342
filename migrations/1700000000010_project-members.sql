-- Up Migration
-- Issue #11 clause 5: projects have owners and members (docs/security.md "Projects have owners and
-- members"). A member may see the project, create sessions on it and be named approver of its
-- sessions; the owner (`projects.owner`) is always a member. `added_by` is the principal who added
-- the member (the owner); NULL marks a row this migration derived from the rows before it. Times come
-- from the host clock, never from now(): migrated rows take the time of the row they come from.

CREATE TABLE project_members (
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  principal text NOT NULL CONSTRAINT project_members_principal_token CHECK (principal ~ '^[A-Za-z0-9_-]{1,64}$'),
  added_by text,
  added_at timestamptz NOT NULL,
  PRIMARY KEY (project_id, principal)
);
-- "Which projects may this person use": the access checks look members up by (project, principal)
-- through the primary key; this index serves the per-person side.
CREATE INDEX project_members_by_principal ON project_members (principal, project_id);

-- Existing projects: the creator as owner-member, then the owners and approvers of their sessions
-- (first seen at their earliest session). Names that are not principals (not one subject token)
-- could never have called the host and are skipped.
INSERT INTO project_members (project_id, principal, added_by, added_at)
SELECT id, owner, NULL, created_at FROM projects WHERE owner ~ '^[A-Za-z0-9_-]{1,64}$';

INSERT INTO project_members (project_id, principal, added_by, added_at)
SELECT u.project_id, u.principal, NULL, min(u.created_at)
  FROM (
    SELECT s.project_id, s.owner AS principal, s.created_at FROM sessions s WHERE s.project_id IS NOT NULL
    UNION ALL
    SELECT s.project_id, a.principal, s.created_at
      FROM sessions s CROSS JOIN LATERAL unnest(s.approvers) AS a(principal)
     WHERE s.project_id IS NOT NULL
  ) u
 WHERE u.principal ~ '^[A-Za-z0-9_-]{1,64}$'
 GROUP BY u.project_id, u.principal
ON CONFLICT (project_id, principal) DO NOTHING;

CREATE TRIGGER write_fence BEFORE INSERT OR UPDATE OR DELETE ON project_members FOR EACH STATEMENT EXECUTE FUNCTION pihost_write_fence();

-- Down Migration
DROP TRIGGER write_fence ON project_members;
DROP TABLE project_members;
