// Session events: each is first a row (its session's next `seq` and a caller-wide position,
// store/event-store.ts), then published to `<prefix>.evt.<principal>.<sessionId>.<type>` for the owner
// and every approver. One session's events are written and published in the order they were raised.
// Postgres is their one store: NATS carries them live (docs/architecture.md "Events"). A state the
// session actor only passes through (machine-state.ts) is published live and not stored.
import { AsyncLocalStorage } from "node:async_hooks";
import type { NatsConnection } from "@nats-io/nats-core";
import { encodeJson } from "../../../protocol/envelope.ts";
import type { EventBodies, EventType } from "../../../protocol/events.ts";
import { errorFields, type Logger } from "../../../runtime/log.ts";
import { eventSubject } from "../../../protocol/subjects.ts";
import type { Clock, TimerHandle } from "../../clock.ts";
import {
  type AppendedEvent,
  type EventRowsWrite,
  type EventStore,
  storedBody,
} from "../../store/event-store.ts";

/** Room kept under max_payload for an event's subject and protocol line. */
const EVENT_SLACK_BYTES = 16 * 1024;
/** Longest wait for the server's PONG before a reply goes anyway (a server that is gone gets neither). */
const FLUSH_WAIT_MS = 2_000;
/** How often the pruner removes old events (by age, and beyond each own session's count bound). */
export const PRUNE_EVERY_MS = 60_000;

export interface Audience {
  sessionId: string;
  owner: string;
  approvers: string[];
}

/** The sessions a request raised events in (AsyncLocalStorage), so its reply waits for those only. */
interface Scope {
  sessions: Set<string>;
  /** The publish count when this request last published, 0: it published nothing. */
  published: number;
}

/**
 * The row writer of one event: the store's own append, or a bigger statement that appends the event
 * with the rows it belongs to (the tool call's record: sessions/pipeline/tool-pipeline.ts).
 */
export type EventWrite = () => Promise<AppendedEvent>;

/** What the publisher needs: the connection events go out on, their store and the host clock. */
export interface EventPublisherDeps {
  nc: NatsConnection;
  prefix: string;
  clock: Clock;
  store: Pick<EventStore, "append" | "appendMany" | "approvers" | "pruneByAge" | "pruneByCount">;
  log: Logger;
  /** This host (the count bound is kept for the sessions it owns). */
  hostId?: string;
}

/** What the publisher holds between calls. */
interface PublisherState {
  deps: EventPublisherDeps;
  /** The last write of each session with one under way: the next one of that session waits for it. */
  tails: Map<string, Promise<void>>;
  scopes: AsyncLocalStorage<Scope>;
  /** Events published so far, and the round trip to the server started after the latest of them. */
  publishedCount: number;
  roundTrip: { after: number; done: Promise<void> };
  pruner: TimerHandle | null;
}

/** The largest event the server takes, with room for the subject and headers. */
function maxEventBytes(st: PublisherState): number {
  return (st.deps.nc.info?.max_payload ?? 1024 * 1024) - EVENT_SLACK_BYTES;
}

function send(
  st: PublisherState,
  to: Audience,
  type: EventType,
  body: Record<string, unknown>,
  envelope: object,
  approvers: readonly string[],
) {
  const { nc, prefix, log } = st.deps;
  let data = encodeJson({ ...body, ...envelope });
  // An event the server would refuse goes out in its stored form (short fields and `truncated`).
  if (data.byteLength > maxEventBytes(st))
    data = encodeJson({ ...JSON.parse(storedBody(body).json), ...envelope });
  for (const principal of new Set([to.owner, ...approvers])) {
    if (!principal) continue;
    try {
      nc.publish(eventSubject(prefix, principal, to.sessionId, type), data);
    } catch (err) {
      // Stored already (or live only): the client fetches it with events.since or re-reads.
      log.error("host.event_publish_failed", { sessionId: to.sessionId, type, ...errorFields(err) });
    }
  }
  st.publishedCount += 1;
  const scope = st.scopes.getStore();
  if (scope) scope.published = st.publishedCount;
}

async function writeAndPublish(
  st: PublisherState,
  to: Audience,
  type: EventType,
  body: Record<string, unknown>,
  at: Date,
  write: EventWrite,
): Promise<void> {
  let stored: AppendedEvent;
  try {
    stored = await write();
  } catch (err) {
    // Events are hints: one that could not be stored (fenced writer, database gone) is not sent,
    // so every event a client sees can be fetched again by its cursor.
    st.deps.log.error("host.event_not_stored", { sessionId: to.sessionId, type, ...errorFields(err) });
    throw err;
  }
  // The envelope fields last: no body field overrides them. The approvers as the store read them
  // with the event (members now), not as the caller cached them.
  const envelope = {
    type,
    sessionId: to.sessionId,
    at: at.toISOString(),
    seq: stored.seq,
    cursor: stored.cursor,
  };
  send(st, to, type, body, envelope, stored.approvers);
}

/** Runs `work` after the session's earlier events, as its next one; the reply scope learns of it. */
function enqueue(st: PublisherState, sessionId: string, work: () => Promise<void>): Promise<void> {
  const { tails } = st;
  const previous = tails.get(sessionId) ?? Promise.resolve();
  const tail = previous.then(work);
  const settled = tail.catch(() => {});
  tails.set(sessionId, settled);
  void settled.finally(() => {
    if (tails.get(sessionId) === settled) tails.delete(sessionId);
  });
  st.scopes.getStore()?.sessions.add(sessionId);
  return tail;
}

async function prune(st: PublisherState): Promise<void> {
  const { store, hostId, log } = st.deps;
  try {
    const byAge = await store.pruneByAge();
    const byCount = hostId ? await store.pruneByCount(hostId) : 0;
    if (byAge + byCount > 0) log.info("host.events_pruned", { byAge, byCount });
  } catch (err) {
    log.warn("host.events_prune_failed", errorFields(err));
  }
}

/** Raises an event: stored, then published, after the session's earlier events; never throws. */
function publish<T extends EventType>(st: PublisherState, to: Audience, type: T, body: EventBodies[T]): void {
  const { clock, store } = st.deps;
  const at = clock.date();
  const b = body as Record<string, unknown>;
  void enqueue(st, to.sessionId, () =>
    writeAndPublish(st, to, type, b, at, () => store.append(to.sessionId, type, b, at)),
  ).catch(() => {});
}

/**
 * Raises an event whose row `write` appends together with other rows in one statement (it must
 * append exactly this event: event-store.ts `appendEventCtes`); resolves with what it wrote once
 * published, rejects when the statement failed (nothing published).
 */
function publishWith<T extends EventType, R>(
  st: PublisherState,
  to: Audience,
  type: T,
  body: EventBodies[T],
  write: (at: Date) => Promise<{ event: AppendedEvent; value: R }>,
): Promise<R> {
  const at = st.deps.clock.date();
  let value: R;
  return enqueue(st, to.sessionId, () =>
    writeAndPublish(st, to, type, body as Record<string, unknown>, at, async () => {
      const r = await write(at);
      value = r.value;
      return r.event;
    }),
  ).then(() => value);
}

/**
 * Raises many events of sessions no actor serves here yet (what a fence or a takeover ended):
 * stored in one statement, then published in the order given. Rejects when the statement failed
 * (nothing published).
 */
async function publishMany(
  st: PublisherState,
  events: ReadonlyArray<{ sessionId: string; type: EventType; body: Record<string, unknown> }>,
): Promise<void> {
  const at = st.deps.clock.date();
  const stored = await st.deps.store.appendMany(events, at);
  stored.forEach((s, i) => {
    const e = events[i]!;
    const envelope = {
      type: e.type,
      sessionId: e.sessionId,
      at: at.toISOString(),
      seq: s.seq,
      cursor: s.cursor,
    };
    send(
      st,
      { sessionId: e.sessionId, owner: s.owner, approvers: s.approvers },
      e.type,
      e.body,
      envelope,
      s.approvers,
    );
  });
}

/**
 * Runs a statement that appends several events with the rows they belong to (event-store.ts
 * `appendEventsCtes`), after the session's earlier events, and publishes each it wrote, in order,
 * to the owner and the approvers the statement read. Resolves with its value; rejects when it
 * failed (nothing published).
 */
function publishRows<R>(st: PublisherState, to: Audience, write: EventRowsWrite<R>): Promise<R> {
  const at = st.deps.clock.date();
  let value: R;
  return enqueue(st, to.sessionId, async () => {
    let written: Awaited<ReturnType<typeof write>>;
    try {
      written = await write(at);
    } catch (err) {
      st.deps.log.warn("host.events_not_stored", { sessionId: to.sessionId, ...errorFields(err) });
      throw err;
    }
    value = written.value;
    for (const e of written.events)
      send(
        st,
        to,
        e.type as EventType,
        e.body,
        { type: e.type, sessionId: to.sessionId, at: at.toISOString(), seq: e.seq, cursor: e.cursor },
        written.approvers,
      );
  }).then(() => value);
}

/**
 * Publishes live only, after the session's earlier events, with no row and no sequence number:
 * a state the actor leaves within the step that entered it (docs/protocol.md "Events").
 */
function publishLive<T extends EventType>(
  st: PublisherState,
  to: Audience,
  type: T,
  body: EventBodies[T],
): void {
  const { clock, store, log } = st.deps;
  const at = clock.date();
  const envelope = { type, sessionId: to.sessionId, at: at.toISOString(), live: true };
  // The approvers as the rows say now (a removed member gets nothing), as for a stored event: read
  // at once, beside the session's writes ahead of it, so a write queued behind this event does not
  // wait for the read; only the send keeps its place in the session's order.
  const approvers = store.approvers(to.sessionId);
  void approvers.catch(() => {});
  void enqueue(st, to.sessionId, async () =>
    send(st, to, type, body as Record<string, unknown>, envelope, await approvers),
  ).catch((err) =>
    log.warn("host.event_publish_failed", { sessionId: to.sessionId, type, ...errorFields(err) }),
  );
}

/**
 * Resolves when the events of the sessions this request raised events in (every session, outside
 * a request's scope) are stored and published and, unless `reachServer` is false, have reached
 * the server. Other sessions' events are not waited for, so one busy session never delays
 * another's reply.
 */
async function flush(st: PublisherState, reachServer = true): Promise<void> {
  const { tails } = st;
  const scope = st.scopes.getStore();
  if (scope) await Promise.all([...scope.sessions].map((s) => tails.get(s)));
  else await Promise.all([...tails.values()]);
  const published = scope ? scope.published : st.publishedCount;
  if (published === 0 || !reachServer) return;
  // Replies leave on the host's serving connection, events on this one: a round trip here
  // (PING/PONG) started after the request's last publish means the server has routed its events.
  if (st.roundTrip.after < published) {
    st.roundTrip = {
      after: st.publishedCount,
      done: Promise.race([
        st.deps.nc.flush().catch(() => {}),
        new Promise<void>((resolve) => setTimeout(resolve, FLUSH_WAIT_MS).unref()),
      ]),
    };
  }
  await st.roundTrip.done;
}

/** Starts the pruner (old events, and each own session's beyond its count bound): off every request. */
function startPruning(st: PublisherState): void {
  const { clock } = st.deps;
  if (st.pruner) return;
  const tick = () => {
    st.pruner = clock.setTimeout(() => void prune(st).finally(tick), PRUNE_EVERY_MS);
  };
  void prune(st);
  tick();
}

function stopPruning(st: PublisherState): void {
  if (st.pruner) st.deps.clock.clearTimeout(st.pruner);
  st.pruner = null;
}

export function createEventPublisher(deps: EventPublisherDeps) {
  const st: PublisherState = {
    deps,
    tails: new Map(),
    scopes: new AsyncLocalStorage<Scope>(),
    publishedCount: 0,
    roundTrip: { after: 0, done: Promise.resolve() },
    pruner: null,
  };
  return {
    /** Raises an event: stored, then published, after the session's earlier events; never throws. */
    publish<T extends EventType>(to: Audience, type: T, body: EventBodies[T]): void {
      publish(st, to, type, body);
    },
    /** Raises an event whose row `write` appends with other rows in one statement (see `publishWith`). */
    publishWith<T extends EventType, R>(
      to: Audience,
      type: T,
      body: EventBodies[T],
      write: (at: Date) => Promise<{ event: AppendedEvent; value: R }>,
    ): Promise<R> {
      return publishWith(st, to, type, body, write);
    },
    /** Raises many events of sessions no actor serves here yet (see `publishMany`). */
    publishMany(
      events: ReadonlyArray<{ sessionId: string; type: EventType; body: Record<string, unknown> }>,
    ): Promise<void> {
      return publishMany(st, events);
    },
    /** Runs a statement that appends several events with their rows, then publishes them (see `publishRows`). */
    publishRows<R>(to: Audience, write: EventRowsWrite<R>): Promise<R> {
      return publishRows(st, to, write);
    },
    /** Publishes live only, with no row and no sequence number (see `publishLive`). */
    publishLive<T extends EventType>(to: Audience, type: T, body: EventBodies[T]): void {
      publishLive(st, to, type, body);
    },
    /** Runs one request's work so that `flush` inside it waits only for the sessions it raised events in. */
    scoped<T>(work: () => Promise<T>): Promise<T> {
      return st.scopes.run({ sessions: new Set(), published: 0 }, work);
    },
    /**
     * Resolves when this request's events are stored and published and (unless `reachServer` is
     * false) have reached the server (see `flush`).
     */
    flush(opts: { reachServer?: boolean } = {}): Promise<void> {
      return flush(st, opts.reachServer ?? true);
    },
    /** Starts the pruner (see `startPruning`). */
    startPruning(): void {
      startPruning(st);
    },
    stopPruning(): void {
      stopPruning(st);
    },
  };
}

export type EventPublisher = ReturnType<typeof createEventPublisher>;
