// Requests reach any host (docs/protocol.md "Several hosts"): two hosts on one database and one
// prefix, every session created while host A was alone (so A owns them), then host B joins the queue
// group. NATS hands each person's request to one of the two at random, so each case sends a run of
// requests and reads B's log for the ones it forwarded (`host.request_forwarded`): with 16 or more
// requests the chance that B got none is below 1 in 65,000. Whatever B received, the answer is the
// owner's: the same view, FORBIDDEN for bob (A authorized it), one turn for one idempotency key. A
// forward waits as long as its caller says it does. A worker's calls never travel that way: they go
// straight to the host its offer names. With A paused (SIGSTOP) B answers HOST_UNAVAILABLE within
// its forward timeout and serves nothing itself. Under the generated NATS configuration a person
// cannot publish or subscribe on the host-to-host subjects.
import { type NatsConnection, PermissionViolationError } from "@nats-io/nats-core";
import { describe, expect, it } from "vitest";
import { decodeJson, encodeJson } from "../services/protocol/envelope.ts";
import { rpcClient } from "../services/protocol/rpc-client.ts";
import type { TurnAssignment } from "../services/protocol/schemas.ts";
import { hostForwardReplySubject, hostForwardSubject, rpcSubject } from "../services/protocol/subjects.ts";
import { hostEnv, type ManagedProcess, spawnTs } from "./support/processes.ts";
import type { Stack } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import { startTeamStack, type TeamStack } from "./support/team-stack.ts";
import { promptAndClaim, refusalCode } from "./support/worker-double.ts";

const FORWARD_TIMEOUT_MS = 1_500;
const RUN = 16;

describe("two hosts, sessions owned by host A", () => {
  const hosts: { a: ManagedProcess | null; b: ManagedProcess | null } = { a: null, b: null };
  const sessions: Record<"get" | "prompt" | "worker" | "gone" | "dead", string> = {
    get: "",
    prompt: "",
    worker: "",
    gone: "",
    dead: "",
  };

  function spawnHost(s: Stack, id: string): ManagedProcess {
    return spawnTs("services/host/main.ts", hostEnv({ ...s.env, extra: { ...s.env.extra, PI_HOST_ID: id } }));
  }

  const stack = useStack("host-fwd", {
    // A host lease far longer than the pause below: the owner is paused, not yet taken over.
    extra: {
      PI_FORWARD_TIMEOUT_MS: String(FORWARD_TIMEOUT_MS),
      PI_TURN_LEASE_MS: "600000",
      PI_HOST_LEASE_MS: "30000",
      PI_HOST_HEARTBEAT_MS: "500",
    },
    timeoutMs: 120_000,
    setup: async (s) => {
      const stop = async () => {
        for (const p of [hosts.a, hosts.b]) {
          if (p?.child.pid) p.child.kill("SIGCONT");
          await p?.kill();
        }
      };
      try {
        hosts.a = spawnHost(s, "host-a");
        await hosts.a.waitForEvent("host.ready", 60_000);
        // Alone, A serves everything: it owns every session created now.
        const ws = s.newWorkspace("fwd");
        const project = await s.client("alice").call("projects.create", { name: "fwd", workspaceRoot: ws });
        for (const k of Object.keys(sessions) as Array<keyof typeof sessions>)
          sessions[k] = (await s.client("alice").call("session.create", { projectId: project.id })).id;
        hosts.b = spawnHost(s, "host-b");
        await hosts.b.waitForEvent("host.ready", 60_000);
      } catch (err) {
        await stop();
        throw err;
      }
      return stop;
    },
  });

  const alice = () => stack.client("alice");
  const bob = () => stack.client("bob");
  const A = () => hosts.a as ManagedProcess;
  const B = () => hosts.b as ManagedProcess;

  /** The parsed log lines of `p` with this event. */
  function logged(p: ManagedProcess, event: string): Array<Record<string, unknown>> {
    return p.lines.flatMap((l) => {
      try {
        const o = JSON.parse(l);
        return o.event === event ? [o] : [];
      } catch {
        return [];
      }
    });
  }
  const forwardedBy = (p: ManagedProcess, method: string) =>
    logged(p, "host.request_forwarded").filter((o) => String(o.subject).endsWith(`.${method}`));

  async function rows<T = Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<T[]> {
    return (await stack.db.pool.query(sql, params)).rows as T[];
  }

  it("B's start took none of A's sessions: every lease still names host-a", async () => {
    const leases = await rows<{ session_id: string; host_id: string }>(
      "SELECT session_id, host_id FROM session_leases WHERE session_id = ANY($1)",
      [Object.values(sessions)],
    );
    expect(leases).toHaveLength(5);
    expect(new Set(leases.map((l) => l.host_id))).toEqual(new Set(["host-a"]));
  });

  it("a request reaching B is forwarded to A and answered with A's reply", async () => {
    const before = forwardedBy(B(), "session.get").length;
    for (let i = 0; i < RUN; i++) {
      const view = await alice().call("session.get", { sessionId: sessions.get });
      expect(view.id).toBe(sessions.get);
    }
    const forwarded = forwardedBy(B(), "session.get").slice(before);
    expect(forwarded.length).toBeGreaterThan(0);
    expect(forwarded.every((o) => o.owner === "host-a")).toBe(true);
    // The owner's answer came back through B (A never answers the caller itself), in time.
    expect(logged(B(), "host.forward_failed")).toEqual([]);
    // A served them as forwarded requests; A itself forwarded nothing (it owns the session).
    expect(
      logged(A(), "host.forward_received").filter((o) => o.from === "host-b" && o.caller === "alice").length,
    ).toBeGreaterThanOrEqual(forwarded.length);
    expect(forwardedBy(A(), "session.get")).toEqual([]);
  });

  it("a forwarded request for another person's session is FORBIDDEN, decided by the owner", async () => {
    const before = forwardedBy(B(), "session.get").length;
    for (let i = 0; i < RUN; i++)
      expect(await refusalCode(bob().call("session.get", { sessionId: sessions.get }))).toBe("FORBIDDEN");
    expect(forwardedBy(B(), "session.get").length).toBeGreaterThan(before);
    expect(
      logged(A(), "host.forward_received").some(
        (o) => o.caller === "bob" && o.subject === rpcSubject(stack.env.prefix, "bob", "session.get"),
      ),
    ).toBe(true);
  });

  it("one idempotency key is one turn, through A and through B", async () => {
    const before = forwardedBy(B(), "session.prompt").length;
    const turns = new Set<string>();
    for (let i = 0; i < RUN; i++) {
      const r = await alice().call("session.prompt", {
        sessionId: sessions.prompt,
        text: "once",
        idempotencyKey: "fwd-k1",
      });
      turns.add(r.turnId);
    }
    expect(turns.size).toBe(1);
    expect(forwardedBy(B(), "session.prompt").length).toBeGreaterThan(before);
    const made = await rows("SELECT id FROM turns WHERE session_id = $1", [sessions.prompt]);
    expect(made.map((t) => t.id)).toEqual([...turns]);
  });

  it("a worker's calls go straight to the owner its offer names; none is forwarded, and B knows none of A's turns", async () => {
    // The offer comes from A (the owner) and names it; the claim and every later call go to A's own
    // subjects, so nothing of a turn ever waits on a forward (docs/protocol.md "Agent-worker protocol").
    const a: TurnAssignment = await promptAndClaim(stack, sessions.worker, "beat");
    expect(a.host).toBe("host-a");
    const toA = stack.agentClient.to("host-a");
    const toB = stack.agentClient.to("host-b");
    for (let i = 0; i < RUN; i++) await toA.call("heartbeat", { turnId: a.turnId, token: a.token });
    for (const p of [A(), B()]) expect(forwardedBy(p, "heartbeat")).toEqual([]);
    // B's worker subjects serve only B's turns: A's token and A's turn mean nothing there.
    expect(await refusalCode(toB.call("heartbeat", { turnId: a.turnId, token: a.token }))).toBe(
      "TURN_TOKEN_INVALID",
    );
    expect(await refusalCode(toB.call("claim", { turnId: a.turnId, workerId: "testworker" }))).toBe(
      "TURN_NOT_CLAIMABLE",
    );
    expect(
      logged(B(), "host.request_forwarded").filter((o) => String(o.subject).includes(".agent.")),
    ).toEqual([]);
  });

  it("a forward waits as long as its caller does (Pi-Timeout-Ms), never a fixed time of its own", async () => {
    // A is slow (paused for longer than B's PI_FORWARD_TIMEOUT_MS): a caller that says it waits 8 s
    // gets A's own answer through B; the fixed timeout applies only to callers that say nothing.
    const a = A();
    const before = forwardedBy(B(), "session.get").length;
    a.child.kill("SIGSTOP");
    const resume = setTimeout(() => a.child.kill("SIGCONT"), FORWARD_TIMEOUT_MS + 1_500);
    try {
      const patient = rpcClient({
        nc: stack.nc,
        prefix: stack.env.prefix,
        principal: "alice",
        timeoutMs: 8_000,
      });
      // NATS hands each request to A or B: B's forwards are the ones that prove the point.
      const views = await Promise.all(
        Array.from({ length: RUN }, () => patient.call("session.get", { sessionId: sessions.get })),
      );
      for (const v of views) expect(v.id).toBe(sessions.get);
      const forwarded = forwardedBy(B(), "session.get").slice(before);
      expect(forwarded.length).toBeGreaterThan(0);
      expect(
        logged(B(), "host.forward_failed").filter((o) => String(o.subject).endsWith(".session.get")),
      ).toEqual([]);
    } finally {
      clearTimeout(resume);
      a.child.kill("SIGCONT");
    }
  });

  it("a lease naming a dead host is HOST_UNAVAILABLE at once, from either host, and nothing is served", async () => {
    // A host taken over earlier stays `dead`; no observer takes anything of a dead row again.
    await stack.db.pool.query(
      `INSERT INTO hosts (id, incarnation, started_at, heartbeat_at, lease_expires_at, state)
       VALUES ('host-z', 1, now(), now(), now(), 'dead')`,
    );
    await stack.db.pool.query("UPDATE session_leases SET host_id = 'host-z' WHERE session_id = $1", [
      sessions.dead,
    ]);
    for (let i = 0; i < RUN; i++) {
      const started = Date.now();
      const err = await alice()
        .call("session.prompt", { sessionId: sessions.dead, text: "x", idempotencyKey: `dead-${i}` })
        .then(
          () => null,
          (e: unknown) => e as { code?: string; retriable?: boolean; details?: unknown },
        );
      expect(err).toMatchObject({ code: "HOST_UNAVAILABLE", retriable: true, details: { hostId: "host-z" } });
      // At once: nothing was forwarded, nothing waited for a forward timeout.
      expect(Date.now() - started).toBeLessThan(FORWARD_TIMEOUT_MS);
    }
    for (const p of [A(), B()])
      expect(logged(p, "host.request_forwarded").filter((o) => o.owner === "host-z")).toEqual([]);
    expect(await rows("SELECT id FROM turns WHERE session_id = $1", [sessions.dead])).toEqual([]);
  });

  it("with the owner paused, B answers HOST_UNAVAILABLE within its timeout and serves nothing", async () => {
    const a = A();
    const turnsBefore = await rows("SELECT id FROM turns WHERE session_id = $1", [sessions.gone]);
    const failedBefore = logged(B(), "host.forward_failed").length;
    a.child.kill("SIGSTOP");
    try {
      const started = Date.now();
      // Requests NATS hands to the paused A get no answer at all (the client times out); those
      // handed to B are forwarded to A and answered HOST_UNAVAILABLE once the forward times out.
      const outcomes = await Promise.all(
        Array.from({ length: 10 }, async (_, i) => {
          try {
            const m = await stack.nc.request(
              rpcSubject(stack.env.prefix, "alice", "session.prompt"),
              encodeJson({ sessionId: sessions.gone, text: "x", idempotencyKey: `gone-${i}` }),
              { timeout: FORWARD_TIMEOUT_MS + 2_500 },
            );
            return {
              reply: decodeJson(m.data) as { error?: { code: string; retriable: boolean } },
              at: Date.now(),
            };
          } catch {
            return { reply: null, at: Date.now() };
          }
        }),
      );
      const unavailable = outcomes.filter((o) => o.reply?.error?.code === "HOST_UNAVAILABLE");
      expect(unavailable.length).toBeGreaterThan(0);
      // Nothing else came back: B served none of them itself.
      expect(outcomes.filter((o) => o.reply !== null && o.reply.error?.code !== "HOST_UNAVAILABLE")).toEqual(
        [],
      );
      for (const o of unavailable) {
        expect(o.reply?.error?.retriable).toBe(true);
        expect(o.at - started).toBeGreaterThanOrEqual(FORWARD_TIMEOUT_MS - 100);
        expect(o.at - started).toBeLessThan(FORWARD_TIMEOUT_MS + 1_500);
      }
      expect(logged(B(), "host.forward_failed").length - failedBefore).toBe(unavailable.length);
      // While A is paused no turn exists: B wrote nothing for A's session.
      expect(await rows("SELECT id FROM turns WHERE session_id = $1", [sessions.gone])).toEqual(turnsBefore);
      const lease = await rows<{ host_id: string }>(
        "SELECT host_id FROM session_leases WHERE session_id = $1",
        [sessions.gone],
      );
      expect(lease.map((l) => l.host_id)).toEqual(["host-a"]);
    } finally {
      a.child.kill("SIGCONT");
    }
    // Resumed, A serves again (and B forwards to it again).
    const view = await alice().call("session.get", { sessionId: sessions.gone });
    expect(view.id).toBe(sessions.gone);
  });
});

describe("the generated NATS configuration", () => {
  let team: TeamStack | null = null;
  const teamStack = useStack("host-fwd-team", {
    timeoutMs: 120_000,
    setup: async (s) => {
      team = await startTeamStack(s, { people: ["alice"] });
      return () => team?.stop();
    },
  });

  /** What NATS did with a publish by `nc`: refused (a permissions violation naming it) or sent. */
  async function publishOutcome(nc: NatsConnection, errors: Error[], subject: string, reply?: string) {
    const before = errors.length;
    nc.publish(subject, "x", reply ? { reply } : undefined);
    await nc.flush();
    await new Promise((r) => setTimeout(r, 50));
    const refused = errors
      .slice(before)
      .some(
        (e) => e instanceof PermissionViolationError && e.operation === "publish" && e.subject === subject,
      );
    return refused ? "refused" : "sent";
  }

  it("refuses a person publishing on the forward subject; the host serves with it in place", async () => {
    const t = team as unknown as TeamStack;
    const prefix = teamStack.env.prefix;
    const alice = await t.as("alice");
    const errors: Error[] = [];
    void (async () => {
      for await (const st of alice.status()) if (st.type === "error") errors.push(st.error);
    })();
    // The host subscribed to its own forward subject under its rpc user and keeps serving.
    const status = decodeJson(
      (await alice.request(rpcSubject(prefix, "alice", "host.status"), encodeJson({}), { timeout: 10_000 }))
        .data,
    ) as { result?: { hostId?: string } };
    expect(status.result).toBeTruthy();
    expect(status.result?.hostId).toBeTruthy();
    for (const id of ["host", String(status.result?.hostId)]) {
      expect(await publishOutcome(alice, errors, hostForwardSubject(prefix, id), "_INBOX_alice.x")).toBe(
        "refused",
      );
      expect(await publishOutcome(alice, errors, hostForwardReplySubject(prefix, id, "x"))).toBe("refused");
    }
    let subscribeRefused = false;
    alice.subscribe(`${prefix}.host.>`, {
      callback: (err) => {
        if (err instanceof PermissionViolationError) subscribeRefused = true;
      },
    });
    await alice.flush();
    await new Promise((r) => setTimeout(r, 50));
    expect(subscribeRefused).toBe(true);
    expect(t.host.child.exitCode).toBeNull();
  });
});
