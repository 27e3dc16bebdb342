// A whole pi-host stack for one test file: its own database, subject prefix, workspace folder and
// scripted-model call log, with the host and agent worker as real child processes.
//
// Tests speak to the stack through typed clients: `client(principal)` for the client methods and
// `agentClient` for the agent-worker methods of the stack's host (`.to(host)` for another host), each
// typed by the METHODS table (services/protocol/methods.ts), so results need no casts. Each offers one
// named raw path, `.raw(method, body)`: any method name and any body, unchecked, answering `unknown`. It
// is for the tests that send malformed or hostile input on purpose (wrong types, missing fields,
// oversized bodies, unknown methods); every other call goes through `.call`.
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { NatsConnection, Subscription } from "@nats-io/nats-core";
import type pg from "pg";
import { HORIZON_SQL } from "../../services/host/store/event-store.ts";
import { encodeJson, unwrapReply } from "../../services/protocol/envelope.ts";
import type { SessionEvent } from "../../services/protocol/events.ts";
import {
  agentClient,
  rpcClient,
  type TypedAgentClient,
  type TypedRpcClient,
} from "../../services/protocol/rpc-client.ts";
import { hostTestSubject, sessionEventsWildcard, testSubject } from "../../services/protocol/subjects.ts";
import { createTestDatabase, type TestDatabase } from "./test-db.ts";
import type { Resource } from "./leaks.ts";
import { connectNats, NATS_URL, natsResource, subscriptionResource, uniquePrefix } from "./test-nats.ts";
import { type ManagedProcess, reapAll, type StackEnv, startHost, startWorker } from "./processes.ts";
import { decodeEvent } from "./events.ts";

export interface Stack {
  db: TestDatabase;
  nc: NatsConnection;
  env: StackEnv;
  dir: string;
  host: ManagedProcess | null;
  worker: ManagedProcess | null;
  /** The typed client of `principal` (client methods of the METHODS table; `.raw` for hostile input). */
  client(principal?: string): TypedRpcClient;
  /** The typed agent-worker client of the stack's host (PI_HOST_ID in `env.extra`); `.to(id)` for another. */
  agentClient: StackAgentClient;
  startHost(): Promise<ManagedProcess>;
  startWorker(): Promise<ManagedProcess>;
  callLog(): Array<Record<string, unknown>>;
  newWorkspace(name: string): string;
  /** A test hook of the host (PI_TEST_HOOKS=1): `<prefix>.test.<name>`. */
  hook<T = { now: number }>(name: string, body?: unknown): Promise<T>;
  /** The same hook of one host by id, when several run (each has its own clock). */
  hookOn<T = { now: number }>(hostId: string, name: string, body?: unknown): Promise<T>;
  events(sessionId: string, principal?: string): EventCollector;
  /** What the stack opened and closes itself: connection, database, processes, collectors. */
  owned(): Resource[];
  /** Stops what the stack itself started: its event collectors, host and worker processes. */
  release(): Promise<void>;
  /** release(), then reaps every process, removes the stream and drops the database. */
  close(): Promise<void>;
}

/** The agent-worker methods of one host, and `to(host)` for another host's. */
export type StackAgentClient = TypedAgentClient & { to(host: string): TypedAgentClient };

export interface EventCollector {
  all: SessionEvent[];
  /** The first event (seen or to come) `pred` takes; a guard such as `isEvent(type)` narrows what it gives. */
  waitFor<E extends SessionEvent>(pred: (e: SessionEvent) => e is E, timeoutMs?: number): Promise<E>;
  waitFor(pred: (e: SessionEvent) => boolean, timeoutMs?: number): Promise<SessionEvent>;
  stop(): void;
}

/** The host id of a test stack's host unless a test names another (PI_HOST_ID in `env.extra`). */
export const TEST_HOST_ID = "h1";

/**
 * A stack's database is a copy of the run's migrated template (test-db.ts) unless `emptyDatabase`:
 * then it has no schema, and the host's first start migrates it as a new installation's.
 */
export async function createStack(label: string, opts: { emptyDatabase?: boolean } = {}): Promise<Stack> {
  const db = await createTestDatabase(label, { schema: opts.emptyDatabase ? "empty" : "migrated" });
  const nc = await connectNats();
  const dir = mkdtempSync(path.join(os.tmpdir(), `pihost-${label}-`));
  // The sandbox user binds workspaces and scratch folders from below this folder (bwrap runs as it).
  chmodSync(dir, 0o711);
  const env: StackEnv = {
    databaseUrl: db.url,
    natsUrl: NATS_URL,
    prefix: uniquePrefix(label),
    workspaceRoots: [dir],
    dataDir: path.join(dir, "data"),
    callLog: path.join(dir, "calls.jsonl"),
    // A known host id, so the test's agent client can send to that host's own worker subjects.
    extra: { PI_HOST_ID: TEST_HOST_ID },
  };
  const subs: Subscription[] = [];
  const procs: ManagedProcess[] = [];
  const stack: Stack = {
    db,
    nc,
    env,
    dir,
    host: null,
    worker: null,
    client: (principal = "alice") => rpcClient({ nc, prefix: env.prefix, principal }),
    get agentClient() {
      const agents = agentClient({ nc, prefix: env.prefix, timeoutMs: 10_000 });
      return { ...agents.to(env.extra?.PI_HOST_ID ?? TEST_HOST_ID), to: agents.to };
    },
    async startHost() {
      const p = startHost(env);
      procs.push(p);
      await p.waitForEvent("host.ready");
      stack.host = p;
      return p;
    },
    async startWorker() {
      const p = startWorker(env);
      procs.push(p);
      await p.waitForEvent("worker.ready");
      stack.worker = p;
      return p;
    },
    callLog() {
      try {
        return readFileSync(env.callLog!, "utf8")
          .split("\n")
          .filter(Boolean)
          .map((l) => JSON.parse(l));
      } catch {
        return [];
      }
    },
    newWorkspace(name) {
      const ws = path.join(dir, name);
      rmSync(ws, { recursive: true, force: true });
      mkdirSync(ws, { recursive: true });
      return ws;
    },
    async hook<T>(name: string, body: unknown = {}) {
      const m = await nc.request(testSubject(env.prefix, name), encodeJson(body), { timeout: 10_000 });
      return unwrapReply<T>(m.data);
    },
    async hookOn<T>(hostId: string, name: string, body: unknown = {}) {
      const m = await nc.request(hostTestSubject(env.prefix, hostId, name), encodeJson(body), {
        timeout: 10_000,
      });
      return unwrapReply<T>(m.data);
    },
    events(sessionId, principal = "alice") {
      const all: SessionEvent[] = [];
      const waiters: Array<{ pred: (e: SessionEvent) => boolean; resolve: (e: SessionEvent) => void }> = [];
      const sub = nc.subscribe(sessionEventsWildcard(env.prefix, principal, sessionId), {
        callback: (_err, msg) => {
          const e = decodeEvent(msg.data);
          all.push(e);
          for (const w of [...waiters]) {
            if (w.pred(e)) {
              waiters.splice(waiters.indexOf(w), 1);
              w.resolve(e);
            }
          }
        },
      });
      subs.push(sub);
      function waitFor<E extends SessionEvent>(
        pred: (e: SessionEvent) => e is E,
        timeoutMs?: number,
      ): Promise<E>;
      function waitFor(pred: (e: SessionEvent) => boolean, timeoutMs?: number): Promise<SessionEvent>;
      function waitFor(pred: (e: SessionEvent) => boolean, timeoutMs = 20_000): Promise<SessionEvent> {
        const found = all.find(pred);
        if (found) return Promise.resolve(found);
        return new Promise((resolve, reject) => {
          const timer = setTimeout(
            () =>
              reject(
                new Error(`event not seen in ${timeoutMs} ms; saw: ${all.map((e) => e.type).join(", ")}`),
              ),
            timeoutMs,
          );
          waiters.push({
            pred,
            resolve: (e) => {
              clearTimeout(timer);
              resolve(e);
            },
          });
        });
      }
      return {
        all,
        waitFor,
        stop: () => sub.unsubscribe(),
      };
    },
    owned() {
      return [
        db.resource,
        natsResource(nc),
        ...procs.map((p) => p.resource),
        ...subs.map((s) => subscriptionResource(s)),
      ].filter((r): r is Resource => r !== undefined);
    },
    async release() {
      for (const s of subs.splice(0)) s.unsubscribe();
      await Promise.all(procs.splice(0).map((p) => p.kill()));
    },
    async close() {
      await stack.release();
      await reapAll();
      await nc.close();
      await db.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await nc.flush();
  return stack;
}

/** Polls fn until it returns a truthy value (or throws after timeoutMs). */
export async function eventually<T>(
  fn: () => Promise<T | null | undefined | false>,
  timeoutMs = 15_000,
  label = "condition",
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`${label} not reached in ${timeoutMs} ms${last ? `: ${String(last)}` : ""}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Waits until every event stored so far lies below the visibility horizon (a page holds only what
 * does: store/event-store.ts HORIZON_SQL). A transaction open meanwhile (a host's own write, a
 * heartbeat) holds pages back a moment, never makes one skip.
 */
export async function eventsSettled(pool: pg.Pool, timeoutMs = 10_000): Promise<void> {
  await eventually(
    async () => {
      const r = await pool.query(
        `SELECT coalesce((SELECT max(tx) FROM session_events) < ${HORIZON_SQL}, true) AS ok`,
      );
      return r.rows[0].ok === true;
    },
    timeoutMs,
    "events below the horizon",
  );
}

/** Makes `principals` members of `owner`'s project (approvers must be members, docs/security.md). */
export async function addMembers(
  stack: Stack,
  projectId: string,
  principals: readonly string[],
  owner = "alice",
) {
  for (const principal of principals)
    await stack.client(owner).call("projects.members.add", { projectId, principal });
}
