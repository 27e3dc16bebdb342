// Every Postgres advisory lock pi-host takes, in one place (docs/architecture.md "Several hosts").
// Postgres keeps two lock spaces apart: a lock on one bigint key never meets a lock on a pair of
// int4 keys, even with the same number (pg_locks.objsubid 1 and 2). Each lock below names its
// space, and advisory-locks.test.ts checks that no two share a space and a key, and that the
// literals in migrations/ and node-pg-migrate's own lock are the ones listed here.

/** The kind of key a lock is taken on: `pair` is (class, hashtext(text)); `single` is one bigint. */
export type LockSpace = "pair" | "single";

export interface AdvisoryLock {
  space: LockSpace;
  key: number;
}

export const ADVISORY_LOCKS = {
  /**
   * (class, hashtext(host id)), transaction-level: taken shared by every write of a host (the write
   * fence's trigger, migration 9, which spells the number out), exclusive by that host's startup
   * fence and by a takeover of it, so neither runs while a write of the old incarnation is open.
   */
  writeFence: { space: "pair", key: 1885956211 },
  /**
   * (class, hashtext(workspace real path)), session-level on a connection of its own while a Write,
   * Edit or Bash runs: one at a time per workspace across hosts (workspace-advisory-lock.ts).
   */
  workspace: { space: "pair", key: 1885956212 },
  /**
   * One bigint key, transaction-level: every projects.create, so the check that a new root overlaps
   * no other project's sees the creates before it (project-store.ts). Its number is the workspace
   * class's, in the other lock space; it stays so that a host of the previous commit, still running
   * during an upgrade, serialises its creates with this one's.
   */
  projectRoots: { space: "single", key: 1885956212 },
  /** node-pg-migrate's own (one bigint key, its PG_MIGRATE_LOCK_ID): hosts migrate one at a time. */
  migrations: { space: "single", key: 7241865325823964 },
} as const satisfies Record<string, AdvisoryLock>;
