// Client methods (`<prefix>.rpc.<principal>.<method>`, docs/protocol.md): decode, check the principal
// against the session, then read rows or hand the request to the session's actor.
import { ok, type Result, refuse } from "../../protocol/result.ts";
import { pageOfList } from "../store/bounded-page.ts";
import type { ModelConfig, SessionView } from "../../protocol/schemas.ts";
import type { ResultOf } from "../../protocol/methods.ts";
import { PROTOCOL_VERSION } from "../../protocol/subjects.ts";
import { splitProposal } from "../sessions/events/plan-events.ts";
import type { Db } from "../store/db.ts";
import type { ClientHandler, ClientHandlers, RequestContext } from "./request-context.ts";
import type { ClientMethod } from "../../protocol/methods.ts";
import { readPlanArtifact, sha256Hex } from "../tools/plan-artifact.ts";
import type { PlanStore } from "../store/plan-store.ts";
import { approversAreMembers } from "../store/project-members.ts";
import type { ProjectStore } from "../store/project-store.ts";
import type { SessionSupervisor } from "../sessions/actors/session-supervisor.ts";
import { PASSIVATED } from "../sessions/actors/machine-state.ts";
import type { ModelChoice } from "../sessions/turns/model-choice.ts";
import type { WorkerRegistry } from "../sessions/turns/worker-registry.ts";
import { countSessionLeases, turnOfIdempotencyKey } from "../store/session-facts.ts";
import { ownSessionsHere, readHostStatusRows } from "../store/host-status-rows.ts";
import type { SandboxStatus } from "../tools/sandbox-probe.ts";
import {
  canAccess,
  type SessionRow,
  type SessionStore,
  type StoredSessionView,
} from "../store/session-store.ts";

/** One `SELECT 1` within a second. */
async function databaseReachable(db: Db): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), 1_000);
  });
  const query = db.query("SELECT 1").then(
    () => true,
    () => false,
  );
  const ok = await Promise.race([query, timeout]);
  clearTimeout(timer);
  return ok;
}

/** artifacts.read's page bound when the host is not told one: fits a 1 MiB max_payload. */
const DEFAULT_MAX_PAGE_BYTES = 512 * 1024;

/** What the client methods need: the stores, the session actors and what host.status reports. */
export interface ClientApiDeps {
  db: Db;
  sessions: SessionStore;
  plans: PlanStore;
  supervisor: SessionSupervisor;
  hostId: string;
  devMode: boolean;
  /** Overlapping projects found at start, shown in host.status. */
  projects?: Pick<ProjectStore, "overlaps">;
  /** Who sees every project's root in host.status (besides its owner); dev mode: anyone. */
  settingsAdmins?: readonly string[];
  /** Whether the connection that publishes events is up (host.status). */
  natsReachable?: () => boolean;
  /** What /readyz finds failing (http-listener.ts notReady), for host.status; none: from `reachable`. */
  readiness?: () => Promise<string[]>;
  /**
   * Whether a tool sandbox starts here and its oom_score_adj is pinned (tools/sandbox-probe.ts,
   * sandbox-oom.ts: each probed once at start), for settings admins.
   */
  sandbox?: () => Promise<SandboxStatus>;
  /** Which model a session runs (sessions/turns/model-choice.ts); none: any, the scripted demo by default. */
  models?: ModelChoice;
  /** The workers heard from lately and what they serve (models.list, workers.list, session.create). */
  workers?: Pick<WorkerRegistry, "models" | "serves" | "list">;
  /**
   * The most file bytes one artifacts.read page carries: three quarters of half the server's
   * max_payload, so the base64 reply stays within it (docs/protocol.md "Message bounds").
   */
  maxPageBytes?: number;
}

/** The deps with what the factory derives from them once. */
interface ClientApiContext extends ClientApiDeps {
  /** artifacts.read's page bound in file bytes. */
  pageBound: number;
}

/** A client method's handler over the api's context (the factory binds the context). */
type Step<M extends ClientMethod> = (
  deps: ClientApiContext,
  ...args: Parameters<ClientHandler<M>>
) => ReturnType<ClientHandler<M>>;

/** The model a session asks for, checked as at every entry (model-choice.ts). */
function chooseModel(deps: ClientApiDeps, model: ModelConfig | undefined): Result<ModelConfig | undefined> {
  return deps.models ? deps.models.choose(model) : ok(model);
}

/** The rows' view with the live actor's state value ("passivated" without one). */
function live(deps: ClientApiDeps, view: StoredSessionView): SessionView {
  return { ...view, machineState: deps.supervisor.machineState(view.id) };
}

/** The row the gate read and let the caller through on (gates.ts); a bug if it is missing. */
function gated(ctx: RequestContext): SessionRow {
  if (!ctx.session) throw new Error("a session-gated method ran without its gate's row");
  return ctx.session;
}

const hostHello: Step<"host.hello"> = async (deps, _principal, p) => {
  if (p.protocolVersion !== PROTOCOL_VERSION)
    return refuse(
      "PROTOCOL_MISMATCH",
      `host speaks protocol ${PROTOCOL_VERSION}, client ${p.protocolVersion}`,
      { hostVersion: PROTOCOL_VERSION },
    );
  return ok({ protocolVersion: PROTOCOL_VERSION, hostId: deps.hostId, devMode: deps.devMode });
};

const hostStatus: Step<"host.status"> = async (deps, principal) => {
  // Settings admins (settings-admins.ts: anyone in development mode) see every host, its leases
  // and this host's readiness; anyone else only figures of their own sessions on this host.
  const admin = deps.devMode || (deps.settingsAdmins ?? []).includes(principal);
  const { active, degraded } = deps.supervisor.status();
  const reachable = { database: await databaseReachable(deps.db), nats: deps.natsReachable?.() ?? true };
  const base = { hostId: deps.hostId, uptimeMs: Math.round(process.uptime() * 1000), reachable };
  const overlaps = deps.projects?.overlaps() ?? [];
  const rootFor = (x: { owner: string; workspaceRoot: string }) =>
    x.owner === principal || admin ? x.workspaceRoot : null;
  const projectOverlaps = overlaps
    .filter((pair) => admin || pair.some((x) => x.owner === principal))
    .map((pair) => ({
      projects: pair.map((x) => ({ projectId: x.projectId, workspaceRoot: rootFor(x) })),
    }));
  if (!admin) {
    // Without the database the rest is still told (and the database said unreachable).
    const own = await ownSessionsHere(deps.db, {
      principal,
      hostId: deps.hostId,
      candidates: degraded.map((d) => d.sessionId),
    }).catch(() => ({ leased: [] as string[], owned: new Set<string>() }));
    const ownDegraded = degraded.filter((d) => own.owned.has(d.sessionId));
    const ownActive = own.leased.filter((id) => deps.supervisor.machineState(id) !== PASSIVATED).length;
    return ok({
      ...base,
      view: "own" as const,
      sessions: {
        active: ownActive,
        passivated: Math.max(0, own.leased.length - ownActive - ownDegraded.length),
        degraded: ownDegraded,
      },
      projectOverlaps,
    });
  }
  // Sessions this host holds = its session leases; those without a live actor are passivated.
  const leased = await countSessionLeases(deps.db, deps.hostId).catch(() => 0);
  const hosts = await readHostStatusRows(deps.db).catch(() => []);
  const failing = deps.readiness
    ? await deps.readiness()
    : [...(reachable.database ? [] : ["database"]), ...(reachable.nats ? [] : ["nats"])];
  return ok({
    ...base,
    view: "admin" as const,
    sessions: { active, passivated: Math.max(0, leased - active - degraded.length), degraded },
    projectOverlaps,
    hosts,
    readiness: { ready: failing.length === 0, failing },
    ...(deps.sandbox ? { sandbox: await deps.sandbox() } : {}),
  });
};

const modelsList: Step<"models.list"> = async (deps) => {
  // What live workers serve, of the providers this deployment allows (the scripted test one
  // is served by every worker but listed only where sessions may use it).
  const listed = (deps.workers?.models() ?? []).filter((m) => !deps.models || deps.models.allows(m.provider));
  return ok({ models: listed, default: deps.models?.defaultModel ?? null });
};

const workersList: Step<"workers.list"> = async (deps, _principal, p) => {
  // What each live worker serves, of the providers this deployment allows (as models.list),
  // paged by worker id like the lists read from rows.
  const workers = (deps.workers?.list() ?? []).map((w) => ({
    ...w,
    serves: w.serves.filter((m) => !deps.models || deps.models.allows(m.provider)),
  }));
  const page = pageOfList(workers, (w) => w.workerId, p);
  return ok({ workers: page.items, next: page.next });
};

const sessionCreate: Step<"session.create"> = async (deps, principal, p) => {
  const chosen = chooseModel(deps, p.model);
  if (!chosen.ok) return chosen;
  const model = chosen.value;
  const created = await deps.sessions.createSession(
    principal,
    { ...p, ...(model ? { model } : {}) },
    deps.hostId,
  );
  if (!created.ok) return created;
  const view = created.value;
  // Each approver learns who named them (an event on the session; the audit row is written with it).
  if (view.approvers.length > 0)
    deps.supervisor.announce(
      { sessionId: view.id, owner: view.owner, approvers: view.approvers },
      "approvers.added",
      {
        approvers: view.approvers,
        addedBy: principal,
      },
    );
  return ok(live(deps, view));
};

// The gate read the row and let only its owner or an approver through (gates.ts).
const sessionGet: Step<"session.get"> = async (deps, _principal, _p, ctx) =>
  ok(live(deps, await deps.sessions.view(deps.db, gated(ctx))));

const sessionList: Step<"session.list"> = async (deps, principal, p) => {
  const page = await deps.sessions.listSessions(principal, p, (view) => live(deps, view));
  return ok({ sessions: page.items, next: page.next });
};

const sessionConfigure: Step<"session.configure"> = async (deps, _principal, p, ctx) => {
  const row = gated(ctx);
  if (p.model) {
    const chosen = chooseModel(deps, p.model);
    if (!chosen.ok) return chosen;
  }
  // Only members may be named approver (a later removal ends their rights: project-members.ts).
  const approvers = await approversAreMembers(deps.db, row.project_id, p.approvers);
  if (!approvers.ok) return approvers;
  return ok(
    live(
      deps,
      await deps.supervisor.request<StoredSessionView>(p.sessionId, (reply) => ({
        type: "CONFIGURE",
        params: p,
        reply,
      })),
    ),
  );
};

const sessionPrompt: Step<"session.prompt"> = async (deps, _principal, p) => {
  if (p.idempotencyKey) {
    // A retried prompt returns the first reply instead of AGENT_BUSY.
    const turnId = await turnOfIdempotencyKey(deps.db, p.sessionId, p.idempotencyKey);
    if (turnId) return ok({ turnId });
  }
  return ok(
    await deps.supervisor.request<{ turnId: string }>(p.sessionId, (reply) => ({
      type: "PROMPT",
      params: p,
      reply,
    })),
  );
};

const sessionAbort: Step<"session.abort"> = async (deps, _principal, p) =>
  ok(
    await deps.supervisor.request<ResultOf<"session.abort">>(p.sessionId, (reply) => ({
      type: "ABORT",
      reply,
    })),
  );

const plansPending: Step<"plans.pending"> = async (deps, principal, p) =>
  ok(await deps.plans.pending(principal, p));

const plansHistory: Step<"plans.history"> = async (deps, _principal, p) =>
  ok(await deps.plans.history(p.sessionId, p));

const plansGet: Step<"plans.get"> = async (deps, principal, p) => {
  const row = await deps.plans.get(p.proposalId);
  if (!row.ok) return row;
  const { view, audience } = splitProposal(row.value);
  if (!canAccess(audience, principal)) return refuse("FORBIDDEN");
  return ok(view);
};

const plansResolve: Step<"plans.resolve"> = async (deps, principal, p, ctx) => {
  // Routed by the row's own session (found by the bus's routing read, else read here): a forged
  // sessionId in the request is refused as stale there.
  let sessionId = ctx.sessionId;
  if (sessionId === undefined) {
    const row = await deps.plans.get(p.proposalId);
    if (!row.ok) return row;
    sessionId = row.value.sessionId;
  }
  return ok(
    await deps.supervisor.request<ResultOf<"plans.resolve">>(sessionId, (reply) => ({
      type: "RESOLVE",
      params: p,
      principal,
      reply,
    })),
  );
};

const artifactsRead: Step<"artifacts.read"> = async (deps, principal, p) => {
  const found = await deps.plans.get(p.proposalId);
  if (!found.ok) return found;
  const row = found.value;
  if (!canAccess({ owner: row.owner, approvers: row.approvers }, principal)) return refuse("FORBIDDEN");
  // Read through the plan folder's handles: a symlinked or non-regular file or folder is
  // PLAN_ARTIFACT_PATH_UNSAFE, a missing one FILE_NOT_FOUND, anything else the host cannot read
  // FILE_NOT_READABLE; nothing an agent or a person can cause is INTERNAL.
  let read: Result<Buffer>;
  try {
    read = await readPlanArtifact(row.workspaceRoot, row.artifactPath);
  } catch {
    return refuse("FILE_NOT_READABLE", "the plan file cannot be read", { path: row.artifactPath });
  }
  if (!read.ok) return read;
  const bytes = read.value;
  const offset = p.offset ?? 0;
  // Only after the access check: a caller who may not read the file learns nothing of its size.
  if (offset > bytes.byteLength)
    return refuse("INVALID_PARAMS", `offset ${offset} is past the end (${bytes.byteLength} bytes)`, {
      field: "offset",
      byteSize: bytes.byteLength,
    });
  const end = Math.min(bytes.byteLength, offset + Math.min(p.maxBytes ?? deps.pageBound, deps.pageBound));
  // The whole file as read for this page; matchesRecord says whether it is still the submitted
  // plan. A reader that reassembles pages hashes them itself: the file may change between pages.
  const sha256 = sha256Hex(bytes);
  return ok({
    proposalId: row.proposalId,
    path: row.artifactPath,
    byteSize: bytes.byteLength,
    sha256,
    recordedSha256: row.sha256,
    matchesRecord: sha256 === row.sha256,
    offset,
    data: bytes.subarray(offset, end).toString("base64"),
    nextOffset: end < bytes.byteLength ? end : null,
  });
};

export function createClientApi(deps: ClientApiDeps): ClientHandlers<"client"> {
  const c: ClientApiContext = {
    ...deps,
    pageBound: Math.max(1, Math.floor(deps.maxPageBytes ?? DEFAULT_MAX_PAGE_BYTES)),
  };
  return {
    "host.hello": (principal, p, ctx) => hostHello(c, principal, p, ctx),
    "host.status": (principal, p, ctx) => hostStatus(c, principal, p, ctx),
    "models.list": (principal, p, ctx) => modelsList(c, principal, p, ctx),
    "workers.list": (principal, p, ctx) => workersList(c, principal, p, ctx),
    "session.create": (principal, p, ctx) => sessionCreate(c, principal, p, ctx),
    "session.get": (principal, p, ctx) => sessionGet(c, principal, p, ctx),
    "session.list": (principal, p, ctx) => sessionList(c, principal, p, ctx),
    "session.configure": (principal, p, ctx) => sessionConfigure(c, principal, p, ctx),
    "session.prompt": (principal, p, ctx) => sessionPrompt(c, principal, p, ctx),
    "session.abort": (principal, p, ctx) => sessionAbort(c, principal, p, ctx),
    "plans.pending": (principal, p, ctx) => plansPending(c, principal, p, ctx),
    "plans.history": (principal, p, ctx) => plansHistory(c, principal, p, ctx),
    "plans.get": (principal, p, ctx) => plansGet(c, principal, p, ctx),
    "plans.resolve": (principal, p, ctx) => plansResolve(c, principal, p, ctx),
    "artifacts.read": (principal, p, ctx) => artifactsRead(c, principal, p, ctx),
  };
}
