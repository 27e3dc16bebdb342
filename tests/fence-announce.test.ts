// What a fence ended is announced in batches (services/host/sessions/events/fence-announce.ts): every end
// gets its stored event and its publication, each session's events in order and numbered after its
// earlier ones, in batches of many sessions written two at a time; an end whose session is gone
// (its batch fails) does not silence the others of its batch.
import type { NatsConnection } from "@nats-io/nats-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClock } from "../services/host/clock.ts";
import { createEventPublisher } from "../services/host/sessions/events/event-publisher.ts";
import { announceEndedWork } from "../services/host/sessions/events/fence-announce.ts";
import { createEventStore } from "../services/host/store/event-store.ts";
import { migrateUp } from "../services/host/store/migrate.ts";
import type { EndedWork } from "../services/host/store/startup-fence.ts";
import { decodeJson } from "../services/protocol/envelope.ts";
import type { Logger } from "../services/runtime/log.ts";
import { connectNats, uniquePrefix } from "./support/test-nats.ts";
import { createTestDatabase, type TestDatabase } from "./support/test-db.ts";
import { eventually } from "./support/stack.ts";

const SESSIONS = 6_000;
let tdb: TestDatabase;
let nc: NatsConnection;
const prefix = uniquePrefix("fenceann");
const warnings: Array<{ msg: string; fields: unknown }> = [];
const log = {
  info() {},
  debug() {},
  error() {},
  warn(msg: string, fields: unknown) {
    warnings.push({ msg, fields });
  },
} as unknown as Logger;

beforeAll(async () => {
  tdb = await createTestDatabase("fence_announce");
  nc = await connectNats();
  await migrateUp({ databaseUrl: tdb.url });
  const at = new Date();
  await tdb.pool.query(
    "INSERT INTO projects (id, name, workspace_root, owner, created_at) VALUES ('prj_a', 'a', '/tmp', 'alice', $1)",
    [at],
  );
  await tdb.pool.query(
    `INSERT INTO sessions (id, project_id, owner, mode, provider, model, created_at, updated_at)
     SELECT 'ses_' || g, 'prj_a', 'alice', 'plan', 'scripted', 'demo', $2, $2 FROM generate_series(1, $1::int) g`,
    [SESSIONS, at],
  );
  // ses_1 already has two events: the announced ones follow them.
  await tdb.pool.query("INSERT INTO session_event_seqs (session_id, last_seq) VALUES ('ses_1', 2)");
});

afterAll(async () => {
  await nc?.close();
  await tdb?.drop();
});

describe("announcing what a fence ended", () => {
  it("stores and publishes every end, a session's in order, across batches; a gone session silences no other", async () => {
    const clock = createClock();
    const events = createEventPublisher({
      nc,
      prefix,
      clock,
      store: createEventStore({ db: tdb.pool, clock }),
      log,
    });
    const got: Array<{ subject: string; seq: number; sessionId: string; type: string }> = [];
    const sub = nc.subscribe(`${prefix}.evt.>`, {
      callback: (_e, m) => {
        const e = decodeJson(m.data) as { seq: number; sessionId: string; type: string };
        got.push({ subject: m.subject, seq: e.seq, sessionId: e.sessionId, type: e.type });
      },
    });
    await nc.flush();
    // Every session's turn ended; ses_1 and ses_5999 also had a prompt denied; one turn belongs to
    // a session that is gone (deleted after the fence committed).
    const ended: EndedWork = {
      approvalsInterrupted: 0,
      executionsInterrupted: 0,
      turnsAborted: SESSIONS + 1,
      permissionsDenied: 2,
      toolOutcomesUnknown: 0,
      fencedProposalIds: [],
      endedTurns: [
        ...Array.from({ length: SESSIONS }, (_, i) => ({
          sessionId: `ses_${i + 1}`,
          turnId: `run_${i + 1}`,
          code: "HOST_RESTARTED" as const,
        })),
        { sessionId: "ses_gone", turnId: "run_gone", code: "HOST_RESTARTED" as const },
      ],
      deniedPermissions: ["ses_1", "ses_5999"].map((sessionId) => ({
        sessionId,
        requestId: `perm_${sessionId}`,
        turnId: `run_${sessionId}`,
        toolCallId: "call",
        tool: "Bash",
      })),
    };
    await announceEndedWork({ plans: { viewsWithMode: async () => [] }, events, log }, ended);

    const stored = await tdb.pool.query(
      "SELECT session_id, seq, type, body->>'turnId' AS turn FROM session_events ORDER BY session_id, seq",
    );
    expect(stored.rows).toHaveLength(SESSIONS + 2);
    const of = (id: string) => stored.rows.filter((r) => r.session_id === id);
    expect(of("ses_1").map((r) => [r.seq, r.type])).toEqual([
      ["3", "turn.ended"],
      ["4", "permission.resolved"],
    ]);
    expect(of("ses_5999").map((r) => [r.seq, r.type])).toEqual([
      ["1", "turn.ended"],
      ["2", "permission.resolved"],
    ]);
    expect(of("ses_4242").map((r) => [r.seq, r.turn])).toEqual([["1", "run_4242"]]);
    expect(of("ses_gone")).toEqual([]);
    // The gone session's batch failed and was told one by one: only that end is missing.
    expect(warnings.filter((w) => w.msg === "host.fence_announce_failed").length).toBeGreaterThanOrEqual(2);
    expect(
      warnings.some(
        (w) =>
          w.msg === "host.fence_announce_failed" &&
          (w.fields as { sessionId?: string }).sessionId === "ses_gone",
      ),
    ).toBe(true);

    await eventually(async () => got.length === SESSIONS + 2, 10_000, "every stored end published");
    sub.unsubscribe();
    const published1 = got.filter((g) => g.sessionId === "ses_1");
    expect(published1.map((g) => [g.seq, g.type])).toEqual([
      [3, "turn.ended"],
      [4, "permission.resolved"],
    ]);
    expect(got.every((g) => g.subject.startsWith(`${prefix}.evt.alice.${g.sessionId}.`))).toBe(true);
  });
});
