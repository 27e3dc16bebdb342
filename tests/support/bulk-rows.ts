// Rows written straight into a test's database in bulk, where creating them through the host would
// take too long (thousands of sessions, members, tasks): the list-paging suites make a few hundred
// through the real API and the rest here. Plain SQL on the test pool (no host id: the write fence
// lets it through). Times start at T_BULK, older than anything the host writes during a test.
import type { Stack } from "./stack.ts";

/** Bulk rows are created from this moment on, one second apart (older than the host's own rows). */
export const T_BULK = "2020-01-01T00:00:00Z";

const q = (stack: Stack, sql: string, params: unknown[] = []) => stack.db.pool.query(sql, params);

/**
 * `count` sessions of `owner` in `projectId` naming `approvers`, ids `<prefix>_<n>`; every third
 * shares its creation time with the next two (ties broken by id). `title` of each by SQL on `g`.
 */
export async function bulkSessions(
  stack: Stack,
  o: { projectId: string; owner: string; approvers: string[]; count: number; prefix: string; title?: string },
): Promise<string[]> {
  const r = await q(
    stack,
    `INSERT INTO sessions (id, project_id, title, owner, approvers, mode, permission_mode, provider, model,
                           model_config, version, created_at, updated_at)
     SELECT $1 || '_' || g, $2, ${o.title ?? "''"}, $3, $4, 'agent', 'inherit', 'scripted', 'demo',
            '{"provider":"scripted","model":"demo"}', 0,
            $5::timestamptz + (g / 3) * interval '1 second', $5::timestamptz + (g / 3) * interval '1 second'
       FROM generate_series(1, $6) g RETURNING id`,
    [o.prefix, o.projectId, o.owner, o.approvers, T_BULK, o.count],
  );
  return r.rows.map((x) => x.id as string);
}

/**
 * A pending plan (with its ended planning turn) on each of `sessionIds`, deadline far ahead; title
 * and question of control characters (six bytes each on the wire), two plans to each second.
 */
export async function bulkPendingPlans(stack: Stack, sessionIds: string[]): Promise<string[]> {
  await q(
    stack,
    `INSERT INTO turns (id, session_id, kind, status, created_at)
     SELECT 'turn_' || s, s, 'prompt', 'completed', $2::timestamptz FROM unnest($1::text[]) s`,
    [sessionIds, T_BULK],
  );
  const r = await q(
    stack,
    `INSERT INTO plan_approvals (id, request_id, session_id, turn_id, tool_call_id, title, question, markdown,
                                 artifact_path, artifact_sha256, artifact_size, status, created_at, deadline)
     SELECT 'plan_' || s, 'req_' || s, s, 'turn_' || s, 'call_' || s, repeat(chr(2), 150), repeat(chr(2), 150), '# p',
            '.pi/plans/' || s || '.md', repeat('0', 64), 3, 'pending',
            $2::timestamptz + (n / 2) * interval '1 second', now() + interval '1 day'
       FROM unnest($1::text[]) WITH ORDINALITY AS x(s, n) RETURNING id`,
    [sessionIds, T_BULK],
  );
  return r.rows.map((x) => x.id as string);
}

/** `count` members of `projectId`, principals `<prefix>-<n>`, added by `addedBy`. */
export async function bulkMembers(
  stack: Stack,
  o: { projectId: string; prefix: string; count: number; addedBy: string },
): Promise<string[]> {
  const r = await q(
    stack,
    `INSERT INTO project_members (project_id, principal, added_by, added_at)
     SELECT $1, $2 || '-' || g, $3, $4::timestamptz + (g / 4) * interval '1 second'
       FROM generate_series(1, $5) g RETURNING principal`,
    [o.projectId, o.prefix, o.addedBy, T_BULK, o.count],
  );
  return r.rows.map((x) => x.principal as string);
}

/** `count` projects of `owner` (roots that exist nowhere: listing never opens them), `member` added to each. */
export async function bulkProjects(
  stack: Stack,
  o: { owner: string; member: string; count: number; prefix: string },
): Promise<string[]> {
  const r = await q(
    stack,
    `WITH p AS (
       INSERT INTO projects (id, name, workspace_root, owner, created_at)
       SELECT $1 || '_' || g, repeat('n', 180), '/nonexistent/' || $1 || '/' || g, $2, $4::timestamptz
         FROM generate_series(1, $5) g RETURNING id)
     INSERT INTO project_members (project_id, principal, added_by, added_at)
     SELECT p.id, $3, $2, $4::timestamptz + (row_number() OVER (ORDER BY p.id) / 3) * interval '1 second'
       FROM p RETURNING project_id`,
    [o.prefix, o.owner, o.member, T_BULK, o.count],
  );
  return r.rows.map((x) => x.project_id as string);
}

/** `count` tasks of `owner` in `projectId`, disabled (the scheduler never runs them). */
export async function bulkTasks(
  stack: Stack,
  o: { owner: string; projectId: string; count: number; prefix: string },
): Promise<string[]> {
  const r = await q(
    stack,
    `INSERT INTO scheduled_tasks (id, name, cron, timezone, config, enabled, created_at, owner, project_id, updated_at, version)
     SELECT $1 || '_' || g, repeat('n', 190), '0 9 * * 1-5', 'UTC',
            jsonb_build_object('mode', 'agent', 'prompt', repeat('p', 900)), false,
            $4::timestamptz + (g / 2) * interval '1 second', $2, $3, $4::timestamptz, 0
       FROM generate_series(1, $5) g RETURNING id`,
    [o.prefix, o.owner, o.projectId, T_BULK, o.count],
  );
  return r.rows.map((x) => x.id as string);
}

/** `count` missed runs of `taskId` (a long error code each), a minute apart (one run per occurrence). */
export async function bulkRuns(stack: Stack, taskId: string, count: number): Promise<string[]> {
  const r = await q(
    stack,
    `INSERT INTO scheduled_runs (id, task_id, status, scheduled_for, trigger, error_code)
     SELECT 'run_' || $1 || '_' || g, $1, 'missed', $2::timestamptz + g * interval '1 minute', 'schedule',
            repeat('E', 400)
       FROM generate_series(1, $3) g RETURNING id`,
    [taskId, T_BULK, count],
  );
  return r.rows.map((x) => x.id as string);
}

/** `count` plugins whose manifests carry a few KiB each, ids `<prefix>-<n>`. */
export async function bulkPlugins(stack: Stack, prefix: string, count: number): Promise<string[]> {
  const r = await q(
    stack,
    `INSERT INTO plugins (id, manifest, enabled, registered_by, created_at, updated_at)
     SELECT $1 || '-' || g,
            jsonb_build_object('id', $1 || '-' || g, 'tools', jsonb_build_array(jsonb_build_object(
              'name', 'tool_' || $1 || '_' || g, 'description', repeat('d', 3000),
              'parameters', '{"type":"object"}'::jsonb, 'risk', 'low'))),
            false, 'alice', $2::timestamptz, $2::timestamptz
       FROM generate_series(1, $3) g RETURNING id`,
    [prefix, T_BULK, count],
  );
  return r.rows.map((x) => x.id as string);
}

/**
 * A pending permission request on each of `sessionIds` that no host waits on (their turns are the
 * plans' of bulkPendingPlans: call that first); a list passes them over.
 */
export async function bulkUnwaitedRequests(stack: Stack, sessionIds: string[]): Promise<string[]> {
  const r = await q(
    stack,
    `INSERT INTO permission_requests (id, session_id, turn_id, tool_call_id, tool, status, created_at, deadline, risk)
     SELECT 'preq_' || s, s, 'turn_' || s, 'call_' || s, 'Write', 'pending',
            $2::timestamptz + (n / 2) * interval '1 second', now() + interval '1 day', 'medium'
       FROM unnest($1::text[]) WITH ORDINALITY AS x(s, n) RETURNING id`,
    [sessionIds, T_BULK],
  );
  return r.rows.map((x) => x.id as string);
}
