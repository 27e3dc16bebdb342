// The worker's side of turn dispatch: takes offers from the worker queue group, claims up to its
// concurrency, runs each claimed turn once, and on stop aborts and drains what it runs.
import type { MsgHdrs, NatsConnection, Subscription } from "@nats-io/nats-core";
import { isAppError } from "../protocol/app-error.ts";
import { currentRequestId, errorFields, type Logger, newRequestId, withRequestId } from "../runtime/log.ts";
import { acceptRequestId, agentClient, REQUEST_ID_HEADER } from "../protocol/rpc-client.ts";
import { decodeJson } from "../protocol/envelope.ts";
import { decodeParams, type TurnAssignment, TurnOffer } from "../protocol/schemas.ts";
import { agentSubject, PROTOCOL_VERSION, WORKER_QUEUE } from "../protocol/subjects.ts";
import { type RunningTurn, startTurn } from "./turn-runner.ts";
import { builtInModels, type ModelRegistry } from "./models-config.ts";
import { providerTextRedactor } from "./provider-text.ts";
import { SCRIPTED_PROVIDER } from "./scripted-provider.ts";

export interface AgentWorkerOptions {
  nc: NatsConnection;
  prefix: string;
  workerId: string;
  concurrency: number;
  log: Logger;
  scriptedCallLog?: string | undefined;
  /** The models this worker can run: pi-ai's built-ins and PI_MODELS_JSON (models-config.ts). */
  models?: ModelRegistry;
  /** Reply timeout of control calls (claim, context, append, heartbeat, turn.end). */
  callTimeoutMs?: number;
  /** Reply timeout of tools.execute (a tool may wait for a person's permission). */
  toolTimeoutMs?: number;
}

/** How often a worker says hello again (the host forgets one it has not heard from in 3 of these). */
export const HELLO_INTERVAL_MS = 30_000;
/** Turn ids this worker has claimed, kept so a repeated offer never runs a turn twice. */
const REMEMBERED_TURNS = 10_000;

/** One worker's state and dependencies, which each step below takes explicitly. */
interface WorkerContext {
  opts: AgentWorkerOptions;
  nc: NatsConnection;
  prefix: string;
  workerId: string;
  log: Logger;
  /** Control calls (claim, context, append, heartbeat, turn.end). */
  bus: ReturnType<typeof agentClient>;
  /** tools.execute calls, with their longer reply timeout. */
  toolBus: ReturnType<typeof agentClient>;
  models: ModelRegistry;
  redact: ReturnType<typeof providerTextRedactor>;
  running: Map<string, RunningTurn>;
  claiming: Map<string, Promise<void>>;
  taken: Set<string>;
  offerSub: Subscription | undefined;
  rollcallSub: Subscription | undefined;
  helloTimer: NodeJS.Timeout | undefined;
  stopping: boolean;
}

export function createAgentWorker(opts: AgentWorkerOptions) {
  const ctx = workerContext(opts);
  return {
    workerId: ctx.workerId,
    /** Subscribes to offers, then says hello so the host re-offers waiting turns. */
    async start(): Promise<void> {
      await startWorker(ctx);
    },
    /** The number of turns claimed or running now. */
    load(): number {
      return ctx.running.size + ctx.claiming.size;
    },
    /** Stops taking offers, aborts every running turn and waits (up to graceMs) for them to end. */
    async stop(graceMs = 10_000): Promise<void> {
      await stopWorker(ctx, graceMs);
    },
  };
}

function workerContext(opts: AgentWorkerOptions): WorkerContext {
  const { nc, prefix, workerId, log } = opts;
  // Every call a turn makes carries the turn's request id (the offer's: the prompt's), as do its log lines.
  // Each turn's calls go to the host that owns it (the offer and the claim name it), never elsewhere.
  const bus = agentClient({
    nc,
    prefix,
    timeoutMs: opts.callTimeoutMs ?? 30_000,
    requestId: currentRequestId,
  });
  const toolBus = agentClient({
    nc,
    prefix,
    timeoutMs: opts.toolTimeoutMs ?? 15 * 60_000,
    requestId: currentRequestId,
  });
  const models = opts.models ?? builtInModels();
  return {
    opts,
    nc,
    prefix,
    workerId,
    log,
    bus,
    toolBus,
    models,
    // Every provider text a turn sends loses these (provider-text.ts); main.ts gives the log them too.
    redact: providerTextRedactor(models.secrets()),
    running: new Map(),
    claiming: new Map(),
    taken: new Set(),
    offerSub: undefined,
    rollcallSub: undefined,
    helloTimer: undefined,
    stopping: false,
  };
}

function remember(ctx: WorkerContext, turnId: string): void {
  ctx.taken.add(turnId);
  if (ctx.taken.size > REMEMBERED_TURNS) {
    const oldest = ctx.taken.values().next().value;
    if (oldest !== undefined) ctx.taken.delete(oldest);
  }
}

function hello(ctx: WorkerContext): void {
  ctx.bus.hello(ctx.workerId, ctx.models.served());
}

/** Whether this worker can run the offered turn's model (the scripted test provider: always). */
function serves(ctx: WorkerContext, m: TurnOffer["model"]): boolean {
  if (!m || m.provider === SCRIPTED_PROVIDER) return true;
  const found = ctx.models.lookup(m.provider, m.model);
  return found.ok && found.apiKey !== undefined;
}

function onOffer(ctx: WorkerContext, data: Uint8Array, offerHeaders: MsgHdrs | undefined): void {
  if (ctx.stopping) return;
  let offer: TurnOffer;
  try {
    offer = decodeParams(TurnOffer, decodeJson(data));
  } catch (err) {
    ctx.log.warn("turn.offer_invalid", errorFields(err));
    return;
  }
  if (ctx.taken.has(offer.turnId) || ctx.claiming.has(offer.turnId)) return;
  // A model this worker cannot run is left to a worker that can (it is offered again).
  if (!serves(ctx, offer.model)) return;
  if (ctx.running.size + ctx.claiming.size >= ctx.opts.concurrency) return;
  // The turn's work (claim, run, every call and log line) goes on under the offer's request id.
  const requestId = acceptRequestId(offerHeaders?.get(REQUEST_ID_HEADER)) ?? newRequestId();
  const claim = withRequestId(requestId, () => claimTurn(ctx, offer)).finally(() =>
    ctx.claiming.delete(offer.turnId),
  );
  ctx.claiming.set(offer.turnId, claim);
}

async function claimTurn(ctx: WorkerContext, offer: TurnOffer): Promise<void> {
  const { bus, log, workerId } = ctx;
  let assignment: TurnAssignment;
  try {
    assignment = await bus.to(offer.host).call("claim", { turnId: offer.turnId, workerId });
  } catch (err) {
    // Another worker has it (TURN_NOT_CLAIMABLE, ...): quiet. A lost reply may be retried on a re-offer.
    if (!isAppError(err)) log.error("turn.claim_failed", { turnId: offer.turnId, ...errorFields(err) });
    return;
  }
  remember(ctx, offer.turnId);
  log.info("turn.claimed", {
    turnId: assignment.turnId,
    sessionId: assignment.sessionId,
    kind: assignment.kind,
  });
  const turn = startTurn(assignment, {
    nc: ctx.nc,
    prefix: ctx.prefix,
    workerId,
    client: bus.to(assignment.host),
    toolClient: ctx.toolBus.to(assignment.host),
    log,
    scriptedCallLog: ctx.opts.scriptedCallLog,
    models: ctx.models,
    redact: ctx.redact,
  });
  ctx.running.set(turn.turnId, turn);
  void turn.done.finally(() => ctx.running.delete(turn.turnId));
  if (ctx.stopping) turn.abort("worker shutting down", "WORKER_STOPPED");
}

async function startWorker(ctx: WorkerContext): Promise<void> {
  const { nc, prefix, log } = ctx;
  ctx.offerSub = nc.subscribe(agentSubject(prefix, "offer"), {
    queue: WORKER_QUEUE,
    callback: (err, msg) => {
      if (err) log.warn("worker.offer_subscription_error", errorFields(err));
      else onOffer(ctx, msg.data, msg.headers);
    },
  });
  // A host that starts asks every worker to say hello again (models.list).
  ctx.rollcallSub = nc.subscribe(agentSubject(prefix, "rollcall"), {
    callback: () => {
      if (!ctx.stopping) hello(ctx);
    },
  });
  await nc.flush();
  hello(ctx);
  // Again every HELLO_INTERVAL_MS: the host forgets a worker it has not heard from (models.list).
  ctx.helloTimer = setInterval(() => {
    if (!ctx.stopping) hello(ctx);
  }, HELLO_INTERVAL_MS);
  ctx.helloTimer.unref();
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === "reconnect" && !ctx.stopping) hello(ctx);
    }
  })();
  log.info("worker.ready", {
    workerId: ctx.workerId,
    prefix,
    concurrency: ctx.opts.concurrency,
    protocolVersion: PROTOCOL_VERSION,
  });
}

async function stopWorker(ctx: WorkerContext, graceMs: number): Promise<void> {
  if (ctx.stopping) return;
  ctx.stopping = true;
  const { running, claiming } = ctx;
  // Hosts drop it from workers.list and models.list at once; its turns still end below.
  ctx.bus.goodbye(ctx.workerId);
  clearInterval(ctx.helloTimer);
  ctx.rollcallSub?.unsubscribe();
  const offerSub = ctx.offerSub;
  if (offerSub && !offerSub.isClosed()) await offerSub.drain().catch(() => {});
  // Each turn ends WORKER_STOPPED (aborted on the host, its execution interrupted), never replayed.
  for (const turn of running.values()) turn.abort("worker shutting down", "WORKER_STOPPED");
  const settled = Promise.all([...claiming.values()]).then(() =>
    Promise.all([...running.values()].map((t) => t.done)),
  );
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), graceMs);
  });
  const result = await Promise.race([settled, timeout]);
  clearTimeout(timer);
  if (result === "timeout") ctx.log.warn("worker.stop_timeout", { running: [...running.keys()] });
}

export type AgentWorker = ReturnType<typeof createAgentWorker>;
