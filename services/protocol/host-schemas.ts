// Wire schemas of what the host says about itself: host.hello, host.status, models.list and
// workers.list (docs/protocol.md "Client methods", "Models").
import { type Static, Type } from "typebox";
import { PageNext } from "./pages.ts";
import { Nullable, Timestamp } from "./values.ts";

export const HelloResult = Type.Object({
  protocolVersion: Type.Integer(),
  hostId: Type.String(),
  devMode: Type.Boolean(),
});

/** What live workers can run (docs/protocol.md "Models"), and the deployment's default. */
export const ModelList = Type.Object({
  models: Type.Array(
    Type.Object({
      provider: Type.String(),
      model: Type.String(),
      workers: Type.Integer(),
      keyConfigured: Type.Boolean(),
    }),
  ),
  default: Nullable(Type.Object({ provider: Type.String(), model: Type.String() })),
});
export type ModelList = Static<typeof ModelList>;

/** The workers this host heard from lately (docs/protocol.md "Workers"): what each serves, when it
 * was last heard (its hello or a request), and how many turns it holds a lease on here now. */
export const WorkerList = Type.Object({
  workers: Type.Array(
    Type.Object({
      workerId: Type.String(),
      serves: Type.Array(Type.Object({ provider: Type.String(), model: Type.String() })),
      lastSeenAt: Timestamp,
      turns: Type.Integer(),
    }),
  ),
  next: PageNext,
});
export type WorkerList = Static<typeof WorkerList>;

/** One host as `host.status` shows it to settings admins (the `hosts` row and its lease count). */
export const HostStatusHost = Type.Object({
  hostId: Type.String(),
  state: Type.Union([Type.Literal("running"), Type.Literal("stopped"), Type.Literal("dead")]),
  incarnation: Type.Integer(),
  heartbeat: Type.Integer(),
  heartbeatAt: Timestamp,
  version: Nullable(Type.String()),
  /** Sessions whose lease the host holds. */
  leases: Type.Integer(),
});

/**
 * `view` says what the caller sees: settings admins ("admin") this host's sessions, every host and
 * this host's readiness; anyone else ("own") only their own sessions' figures on this host.
 */
export const HostStatus = Type.Object({
  hostId: Type.String(),
  view: Type.Union([Type.Literal("admin"), Type.Literal("own")]),
  sessions: Type.Object({
    active: Type.Integer(),
    passivated: Type.Integer(),
    degraded: Type.Array(
      Type.Object({ sessionId: Type.String(), failures: Type.Integer(), since: Timestamp }),
    ),
  }),
  uptimeMs: Type.Integer(),
  /** Whether the host reaches its database (a query within a second) and NATS (its event connection). */
  reachable: Type.Object({ database: Type.Boolean(), nats: Type.Boolean() }),
  /** Pairs of projects whose roots overlap (left by earlier versions, found at start); each root
   * only for who may see that project (its owner, settings admins), else null. */
  projectOverlaps: Type.Array(
    Type.Object({
      projects: Type.Array(
        Type.Object({ projectId: Type.String(), workspaceRoot: Nullable(Type.String()) }),
        {
          minItems: 2,
          maxItems: 2,
        },
      ),
    }),
  ),
  /** Settings admins only: every host of the deployment, by id. */
  hosts: Type.Optional(Type.Array(HostStatusHost)),
  /** Settings admins only: whether this host is ready (as its /readyz says) and what is failing. */
  readiness: Type.Optional(Type.Object({ ready: Type.Boolean(), failing: Type.Array(Type.String()) })),
  /**
   * Settings admins only: whether a tool sandbox starts on this host at all (probed at start; when
   * not, the exact reason, and /readyz names `sandbox`), and whether a sandbox's oom_score_adj 1000
   * is a floor it cannot lower (docs/security.md); when not, why.
   */
  sandbox: Type.Optional(
    Type.Object({
      available: Type.Boolean(),
      unavailableReason: Type.Optional(Type.String()),
      oomScorePinned: Type.Boolean(),
      reason: Type.Optional(Type.String()),
    }),
  ),
});
export type HostStatus = Static<typeof HostStatus>;
