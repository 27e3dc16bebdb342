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

export function createAgentWorker(opts: AgentWorkerOptions) {
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
  const running = new Map<string, RunningTurn>();
  const claiming = new Map<string, Promise<void>>();
  const taken = new Set<string>();
  let offerSub: Subscription | undefined;
  let stopping = false;

  const remember = (turnId: string) => {
    taken.add(turnId);
    if (taken.size > REMEMBERED_TURNS) {
      const oldest = taken.values().next().value;
      if (oldest !== undefined) taken.delete(oldest);
    }
  };

  const models = opts.models ?? builtInModels();
  // Every provider text a turn sends loses these (provider-text.ts); main.ts gives the log them too.
  const redact = providerTextRedactor(models.secrets());
  const hello = () => bus.hello(workerId, models.served());
  /** Whether this worker can run the offered turn's model (the scripted test provider: always). */
  const serves = (m: TurnOffer["model"]) => {
    if (!m || m.provider === SCRIPTED_PROVIDER) return true;
    const found = models.lookup(m.provider, m.model);
    return found.ok && found.apiKey !== undefined;
  };
  let helloTimer: NodeJS.Timeout | undefined;
  let rollcallSub: Subscription | undefined;

  function onOffer(data: Uint8Array, offerHeaders: MsgHdrs | undefined): void {
    if (stopping) return;
    let offer: TurnOffer;
    try {
      offer = decodeParams(TurnOffer, decodeJson(data));
    } catch (err) {
      log.warn("turn.offer_invalid", errorFields(err));
      return;
    }
    if (taken.has(offer.turnId) || claiming.has(offer.turnId)) return;
    // A model this worker cannot run is left to a worker that can (it is offered again).
    if (!serves(offer.model)) return;
    if (running.size + claiming.size >= opts.concurrency) return;
    // The turn's work (claim, run, every call and log line) goes on under the offer's request id.
    const requestId = acceptRequestId(offerHeaders?.get(REQUEST_ID_HEADER)) ?? newRequestId();
    const claim = withRequestId(requestId, () => claimTurn(offer)).finally(() =>
      claiming.delete(offer.turnId),
    );
    claiming.set(offer.turnId, claim);
  }

  async function claimTurn(offer: TurnOffer): Promise<void> {
    let assignment: TurnAssignment;
    try {
      assignment = await bus.to(offer.host).call("claim", { turnId: offer.turnId, workerId });
    } catch (err) {
      // Another worker has it (TURN_NOT_CLAIMABLE, ...): quiet. A lost reply may be retried on a re-offer.
      if (!isAppError(err)) log.error("turn.claim_failed", { turnId: offer.turnId, ...errorFields(err) });
      return;
    }
    remember(offer.turnId);
    log.info("turn.claimed", {
      turnId: assignment.turnId,
      sessionId: assignment.sessionId,
      kind: assignment.kind,
    });
    const turn = startTurn(assignment, {
      nc,
      prefix,
      workerId,
      client: bus.to(assignment.host),
      toolClient: toolBus.to(assignment.host),
      log,
      scriptedCallLog: opts.scriptedCallLog,
      models,
      redact,
    });
    running.set(turn.turnId, turn);
    void turn.done.finally(() => running.delete(turn.turnId));
    if (stopping) turn.abort("worker shutting down", "WORKER_STOPPED");
  }

  return {
    workerId,
    /** Subscribes to offers, then says hello so the host re-offers waiting turns. */
    async start(): Promise<void> {
      offerSub = nc.subscribe(agentSubject(prefix, "offer"), {
        queue: WORKER_QUEUE,
        callback: (err, msg) => {
          if (err) log.warn("worker.offer_subscription_error", errorFields(err));
          else onOffer(msg.data, msg.headers);
        },
      });
      // A host that starts asks every worker to say hello again (models.list).
      rollcallSub = nc.subscribe(agentSubject(prefix, "rollcall"), {
        callback: () => {
          if (!stopping) hello();
        },
      });
      await nc.flush();
      hello();
      // Again every HELLO_INTERVAL_MS: the host forgets a worker it has not heard from (models.list).
      helloTimer = setInterval(() => {
        if (!stopping) hello();
      }, HELLO_INTERVAL_MS);
      helloTimer.unref();
      void (async () => {
        for await (const status of nc.status()) {
          if (status.type === "reconnect" && !stopping) hello();
        }
      })();
      log.info("worker.ready", {
        workerId,
        prefix,
        concurrency: opts.concurrency,
        protocolVersion: PROTOCOL_VERSION,
      });
    },
    /** The number of turns claimed or running now. */
    load(): number {
      return running.size + claiming.size;
    },
    /** Stops taking offers, aborts every running turn and waits (up to graceMs) for them to end. */
    async stop(graceMs = 10_000): Promise<void> {
      if (stopping) return;
      stopping = true;
      // Hosts drop it from workers.list and models.list at once; its turns still end below.
      bus.goodbye(workerId);
      clearInterval(helloTimer);
      rollcallSub?.unsubscribe();
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
      if (result === "timeout") log.warn("worker.stop_timeout", { running: [...running.keys()] });
    },
  };
}

export type AgentWorker = ReturnType<typeof createAgentWorker>;
